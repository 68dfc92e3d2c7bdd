// The order in which a local tree's directories are removed (src/store/local-tree.ts): in turns
// by parent, every path exactly once, whatever the shape (one parent of many, many of one); and
// mkdirs, which makes a directory's missing parents one level at a time; and a walk meeting a
// file name that is not valid UTF-8.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdir, mkdtemp, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { StoreError } from '../src/errors.js';
import { LocalStore } from '../src/store/local.js';
import { byParentInTurns } from '../src/store/local-tree.js';
import { BIN, cli } from '../testing/cli.js';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

test('paths come in turns by parent: the first child of each parent, then the second, …', () => {
  const paths = ['/s/a/1', '/s/a/2', '/s/a/3', '/s/b/1', '/s/c/1', '/s/c/2'];
  assert.deepEqual(byParentInTurns(paths), ['/s/a/1', '/s/b/1', '/s/c/1', '/s/a/2', '/s/c/2', '/s/a/3']);
  assert.deepEqual(byParentInTurns([]), []);
});

test('a skewed level (20,000 parents of one child beside one parent of 20,000) keeps every path once', () => {
  const paths = Array.from({ length: 20_000 }, (_, i) => `/s/one-${i}/x`);
  for (let i = 0; i < 20_000; i++) paths.push(`/s/many/${i}`);
  const out = byParentInTurns(paths);
  assert.equal(out.length, paths.length);
  assert.deepEqual([...out].sort(), [...paths].sort());
  // The lone children all come in the first turn, the big parent's in its turns after.
  assert.equal(out[20_001], '/s/many/1');
});

// A lying parent: it exists but mkdir says it does not.
test('mkdirs makes every missing level, accepts one that exists, fails (never spins) on a lying parent', async () => {
  const store = new LocalStore();
  const root = await mkdtemp(path.join(os.tmpdir(), 'stagecommit-mkdirs-'));
  try {
    await store.mkdirs(path.join(root, 'a', 'b', 'c'));
    assert.equal((await stat(path.join(root, 'a', 'b', 'c'))).isDirectory(), true);
    await store.mkdirs(path.join(root, 'a', 'b'));
    await writeFile(path.join(root, 'f'), 'x');
    await assert.rejects(store.mkdirs(path.join(root, 'f', 'g')), StoreError);
    await assert.rejects(store.mkdirs(path.join(root, 'f')), StoreError);
    // A dangling symlink in the way is mkdir's own "exists", as with a file there.
    await symlink('nowhere', path.join(root, 'dangling'));
    await assert.rejects(
      store.mkdirs(path.join(root, 'dangling', 'x')),
      (e: unknown) => e instanceof StoreError && /EEXIST/.test((e as Error).message),
    );
    // Under /proc/self, mkdir says "no such file" of a parent that exists: Node's recursive
    // mkdir spun a core for ever there (a stage --target under /proc never returned).
    await assert.rejects(
      store.mkdirs('/proc/self/stagecommit-test/x'),
      (e: unknown) => e instanceof StoreError && /ENOENT/.test((e as Error).message),
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

/** `stage FILE` of job `job` refuses a name that is not UTF-8 (made under `root`) and files of /proc and /sys. */
async function expectStageRefuses(root: string, job: string): Promise<void> {
  // A local file of such a name cannot even be given to `stage FILE`: the shell hands Node its bytes, Node reads
  // U+FFFD.
  await writeFile(Buffer.concat([Buffer.from(path.join(root, 'f')), Buffer.from([0xe9])]), 'v');
  const given = spawnSync(
    'sh',
    [
      '-c',
      `exec "$0" "$1" stage --job "$2" --task 1 "$3$(printf '\\351')"`,
      process.execPath,
      BIN,
      job,
      path.join(root, 'f'),
    ],
    { encoding: 'utf8' },
  );
  assert.equal(given.status, 2, given.stderr);
  assert.match(
    given.stderr,
    /cannot read .*f\uFFFD: no such file \(is its name valid UTF-8\? a name that is not cannot be given on the command line; rename it\); nothing was staged/,
  );
  // Files the kernel makes up as they are read: /proc's copied as nothing, /sys's for ever: stage refuses them.
  for (const [made, fsName] of [
    ['/proc/self/status', 'procfs'],
    ['/sys/kernel/mm/transparent_hugepage/enabled', 'sysfs'],
  ] as const) {
    if (!existsSync(made)) continue;
    const refused = await cli(['stage', '--job', job, '--task', '1', made]);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(
      refused.stderr,
      new RegExp(
        `${made}.* is on ${fsName}, a kernel filesystem whose files do not hold the size they report .*: copy it to a regular file first .*; nothing was staged`,
      ),
    );
  }
}

// commit-task refuses a file or directory whose name is not valid UTF-8 (exit 2, nothing committed),
// lists a name that holds U+FFFD, and commits once the name is fixed; stage refuses a file of /proc
// or /sys (exit 2).
test('names that are not UTF-8 are refused at commit-task (exit 2), U+FFFD is listed; /proc and /sys too', async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'stagecommit-names-'));
  try {
    const target = path.join(root, 't');
    const ok = async (args: string[]) => {
      const r = await cli(args);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout.trim();
    };
    const job = await ok(['stage', '--target', target, '--mode', 'create', '--quiet']);
    const dir = await ok(['stage', '--job', job, '--task', '0', '--print-path']);
    await mkdir(path.join(dir, 'sub'), { recursive: true });
    const bad = Buffer.concat([Buffer.from(path.join(dir, 'sub', 'bad-')), Buffer.from([0xe9]), Buffer.from('.csv')]);
    await writeFile(bad, 'x');
    await writeFile(path.join(dir, 'ok-\uFFFD.csv'), 'y');
    const refused = await cli(['commit-task', '--job', job, '--task', '0']);
    assert.equal(refused.code, 2);
    assert.match(
      refused.stderr,
      /holds a name that is not valid UTF-8 \(read as 'sub\/bad-\uFFFD\.csv'\): rename it in UTF-8 and run commit-task again \(nothing was committed\)/,
    );
    await rename(bad, path.join(dir, 'sub', 'bad-\u00e9.csv'));
    // A directory's name (what is under it cannot even be listed), and a name that reads as one a real file has.
    const badDir = Buffer.concat([Buffer.from(path.join(dir, 'caf')), Buffer.from([0xe9])]);
    await mkdir(badDir);
    await writeFile(Buffer.concat([badDir, Buffer.from('/f.csv')]), 'z');
    assert.match(
      (await cli(['commit-task', '--job', job, '--task', '0'])).stderr,
      /holds a name that is not valid UTF-8 \(read as 'caf\uFFFD'\)/,
    );
    await rm(badDir, { recursive: true });
    const twin = Buffer.concat([Buffer.from(path.join(dir, 'ok-')), Buffer.from([0xe9]), Buffer.from('.csv')]);
    await writeFile(twin, 'w');
    assert.match(
      (await cli(['commit-task', '--job', job, '--task', '0'])).stderr,
      /holds a name that is not valid UTF-8 \(read as 'ok-\uFFFD\.csv'\)/,
    );
    await rm(twin);
    await expectStageRefuses(root, job);
    await ok(['commit-task', '--job', job, '--task', '0']);
    await ok(['commit-job', '--job', job]);
    assert.equal(await readFile(path.join(target, 'sub', 'bad-\u00e9.csv'), 'utf8'), 'x');
    assert.equal(await readFile(path.join(target, 'ok-\uFFFD.csv'), 'utf8'), 'y');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
