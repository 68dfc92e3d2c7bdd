// The CLI bundle's code cache (bin/load-cli.js): what a run leaves in $XDG_CACHE_HOME/stagecommit,
// that a later run uses it untouched, and that no damaged, foreign or unwritable cache changes what
// a command does or prints. Runs the bundle (STAGECOMMIT_BUNDLE=1), as the installed package does.

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import {
  chmod,
  chown,
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BIN, cli, type CliResult } from '../testing/cli.js';

const BUNDLE = fileURLToPath(new URL('../../dist/bundle/cli.cjs', import.meta.url));

/** A cache file as the loader writes it: its header's checksum is its code's (V8's code differs run to run). */
function isWholeCache(bytes: Buffer): boolean {
  const nl = bytes.indexOf(10);
  const m = /^stagecommit-code-cache 1 ([0-9a-f]{64})$/.exec(bytes.subarray(0, Math.max(nl, 0)).toString('latin1'));
  return (
    m !== null &&
    createHash('sha256')
      .update(bytes.subarray(nl + 1))
      .digest('hex') === m[1] &&
    bytes.length > nl + 1000
  );
}

describe('the code cache of the CLI bundle', () => {
  let work: string;
  let handle: string;
  let expected: CliResult;

  /** `stagecommit status` of one local job, its code cache kept under `home` (XDG_CACHE_HOME). */
  const status = (home: string, env: Record<string, string | undefined> = {}) =>
    cli(['status', '--job', handle, '--json'], {
      cwd: work,
      env: { STAGECOMMIT_BUNDLE: '1', XDG_CACHE_HOME: home, ...env },
    });
  const cacheFiles = async (home: string) =>
    (await readdir(path.join(home, 'stagecommit')).catch(() => [] as string[])).sort();
  /** What a user sees, less the job's age, which moves between runs. */
  const seen = (r: CliResult) => ({
    code: r.code,
    stderr: r.stderr,
    stdout: r.stdout.replace(/"ageSeconds": \d+/g, ''),
  });

  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'stagecommit-code-cache-'));
    const staged = await cli(['stage', '--target', path.join(work, 'table'), '--mode', 'append', '--quiet'], {
      cwd: work,
      env: { STAGECOMMIT_BUNDLE: '1', STAGECOMMIT_CODE_CACHE: 'off' },
    });
    assert.equal(staged.code, 0, staged.stderr);
    handle = staged.stdout.trim();
    expected = await status(path.join(work, 'none'), { STAGECOMMIT_CODE_CACHE: 'off' });
    assert.equal(expected.code, 0, expected.stderr);
  });
  after(() => rm(work, { recursive: true, force: true }));

  test('the first run keeps one private cache file, and the next uses it as it is', async () => {
    const home = path.join(work, 'first');
    assert.deepEqual(seen(await status(home)), seen(expected));
    const [name, ...more] = await cacheFiles(home);
    assert.match(name ?? '', /^cli-status-local-[0-9a-f]{24}\.cache$/, 'one cache per command and kind of store');
    assert.deepEqual(more, []);
    const file = path.join(home, 'stagecommit', name!);
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal((await stat(path.join(home, 'stagecommit'))).mode & 0o777, 0o700);
    const bytes = await readFile(file);
    assert.ok(isWholeCache(bytes));
    const before = (await stat(file)).mtimeMs;
    assert.deepEqual(seen(await status(home)), seen(expected));
    assert.equal((await stat(file)).mtimeMs, before, 'a usable cache is not written again');
    assert.deepEqual(await readFile(file), bytes);
  });

  test('a damaged cache is never used: the command runs as without one, and the cache is made whole again', async () => {
    const home = path.join(work, 'damaged');
    await status(home);
    const [name] = await cacheFiles(home);
    const file = path.join(home, 'stagecommit', name!);
    const whole = await readFile(file);
    const header = whole.indexOf(10) + 1;
    const flipped = (at: number) => {
      const b = Buffer.from(whole);
      b[at] = b[at]! ^ 0xff;
      return b;
    };
    const damages: [string, Buffer][] = [
      ['empty', Buffer.alloc(0)],
      ['cut in the header', whole.subarray(0, 10)],
      ['header only', whole.subarray(0, header)],
      ['cut after the header', whole.subarray(0, header + 100)],
      ['cut one byte short', whole.subarray(0, whole.length - 1)],
      ['without its header', whole.subarray(header)],
      ['a byte of the code flipped', flipped(header + Math.floor((whole.length - header) / 2))],
      ['the last byte flipped', flipped(whole.length - 1)],
      ['a digit of the checksum changed', flipped(header - 2)],
      [
        'another version',
        Buffer.concat([Buffer.from('stagecommit-code-cache 2'), whole.subarray('stagecommit-code-cache 1'.length)]),
      ],
      ['a byte added', Buffer.concat([whole, Buffer.from([0])])],
    ];
    // A FIFO in its place: read plainly, it would block the command forever.
    await rm(file);
    execFileSync('mkfifo', [file]);
    assert.deepEqual(seen(await status(home)), seen(expected), 'a FIFO');
    assert.ok(isWholeCache(await readFile(file)), 'a FIFO: replaced by a whole cache');
    for (const [what, bytes] of damages) {
      await writeFile(file, bytes);
      assert.deepEqual(seen(await status(home)), seen(expected), what);
      assert.ok(isWholeCache(await readFile(file)), `${what}: the cache is written whole again`);
    }
  });

  test("other builds' caches go once untouched for 30 days, a killed run's temp file after a day; ours stay", async () => {
    const home = path.join(work, 'rebuilt');
    const dir = path.join(home, 'stagecommit');
    await status(home);
    const [current] = await cacheFiles(home);
    const stale = 'cli-stage-s3-0123456789abcdef01234567.cache';
    const recent = 'cli-stage-s3-89abcdef0123456789abcdef.cache';
    const mine = current!.replace(/^cli-status-/, 'cli-jobs-');
    const tmpOld = `${mine}.1234.0badc0de.tmp`;
    const tmpNew = `${mine}.1235.0badc0de.tmp`;
    for (const [name, daysAgo] of [
      [stale, 31],
      [recent, 29],
      [mine, 31],
      [tmpOld, 2],
      [tmpNew, 0],
    ] as const) {
      await writeFile(path.join(dir, name), 'x');
      const t = new Date(Date.now() - daysAgo * 24 * 3600 * 1000);
      await utimes(path.join(dir, name), t, t);
    }
    // A cache that is not whole is written anew, and the old builds' are looked at.
    await writeFile(path.join(dir, current!), 'x');
    assert.deepEqual(seen(await status(home)), seen(expected));
    const left = await cacheFiles(home);
    assert.ok(!left.includes(stale) && left.includes(recent), left.join(', '));
    assert.ok(left.includes(mine), `this build's cache stays, however old: ${left.join(', ')}`);
    const temps = (await readdir(dir)).filter((n) => n.endsWith('.tmp'));
    assert.deepEqual(temps, [tmpNew], 'a temporary file a day old goes, a younger one (being written) stays');
  });

  test('a cache in use keeps its place: a run renews its time; of other builds, the 32 used last stay', async () => {
    const home = path.join(work, 'in-use');
    const dir = path.join(home, 'stagecommit');
    await status(home);
    const [current] = await cacheFiles(home);
    const file = path.join(dir, current!);
    // Used 20 days ago: this run uses it and renews its time, so it goes 30 days after its last use, not
    // 30 days after it was written.
    const old = new Date(Date.now() - 20 * 24 * 3600 * 1000);
    await utimes(file, old, old);
    assert.deepEqual(seen(await status(home)), seen(expected));
    assert.ok((await stat(file)).mtimeMs > Date.now() - 3600 * 1000, 'a cache a run used has a fresh time');
    // 40 files of other builds, used a minute apart: the next write keeps the 32 used last.
    const others = Array.from({ length: 40 }, (_, i) => `cli-stage-s3-${String(i).padStart(24, '0')}.cache`);
    for (const [i, name] of others.entries()) {
      await writeFile(path.join(dir, name), 'x');
      const t = new Date(Date.now() - (i + 1) * 60_000);
      await utimes(path.join(dir, name), t, t);
    }
    await writeFile(file, 'x'); // not whole: written anew, and the other builds' are looked at
    assert.deepEqual(seen(await status(home)), seen(expected));
    const left = await cacheFiles(home);
    assert.deepEqual(
      left.filter((n) => others.includes(n)),
      others.slice(0, 32).sort(),
    );
    assert.ok(left.includes(current!));
  });

  test(
    "root running with another user's HOME (sudo -E) makes nothing in it, and no HOME that is not there",
    { skip: process.getuid?.() !== 0 && 'needs root (chown)' },
    async () => {
      const home = path.join(work, 'someone');
      await mkdir(home, { mode: 0o755 });
      await chown(home, 65534, 65534);
      const asRoot = { XDG_CACHE_HOME: undefined, HOME: home };
      assert.deepEqual(seen(await status(home, asRoot)), seen(expected));
      assert.deepEqual(await readdir(home), [], "no ~/.cache of root's in their home");
      await mkdir(path.join(home, '.cache'));
      await chown(path.join(home, '.cache'), 65534, 65534);
      assert.deepEqual(seen(await status(home, asRoot)), seen(expected));
      assert.deepEqual(await readdir(path.join(home, '.cache')), [], "nothing of root's in their ~/.cache");
      const missing = path.join(work, 'no-such-home', 'deep');
      assert.deepEqual(seen(await status(home, { XDG_CACHE_HOME: undefined, HOME: missing })), seen(expected));
      assert.equal(existsSync(path.join(work, 'no-such-home')), false, 'a HOME that is not there is not made');
    },
  );

  test('a cache dir that cannot be written, or is not a dir, changes nothing a user sees', async () => {
    const readOnly = path.join(work, 'read-only');
    await mkdir(path.join(readOnly, 'stagecommit'), { recursive: true });
    await chmod(path.join(readOnly, 'stagecommit'), 0o500);
    const aFile = path.join(work, 'a-file');
    await writeFile(aFile, 'not a dir\n');
    const taken = path.join(work, 'taken');
    try {
      await status(taken);
      const [name] = await cacheFiles(taken);
      // Where the cache file would go, a directory: it can be neither read nor replaced.
      await rm(path.join(taken, 'stagecommit', name!));
      await mkdir(path.join(taken, 'stagecommit', name!, 'inside'), { recursive: true });
      // Under /proc/self, mkdir says "no such file" of a parent that exists: Node's recursive
      // mkdir spun there for ever.
      const proc = path.join(work, 'proc');
      await symlink('/proc/self', proc);
      for (const home of [readOnly, aFile, taken, proc])
        assert.deepEqual(seen(await status(home)), seen(expected), home);
      // root writes a mode-0500 dir all the same: only other users see it refused.
      if (process.getuid?.() !== 0) assert.deepEqual(await cacheFiles(readOnly), []);
      assert.deepEqual(
        (await readdir(path.join(taken, 'stagecommit'))).filter((n) => n.endsWith('.tmp')),
        [],
        'no temporary file is left',
      );
    } finally {
      await chmod(path.join(readOnly, 'stagecommit'), 0o700);
    }
  });

  test('a cache that another user could have written is neither used nor written into', async () => {
    const home = path.join(work, 'shared');
    await status(home);
    const dir = path.join(home, 'stagecommit');
    const [name] = await cacheFiles(home);
    const file = path.join(dir, name!);
    // Writable by others: not used, and replaced by one of our own.
    await chmod(file, 0o666);
    assert.deepEqual(seen(await status(home)), seen(expected));
    assert.equal((await stat(file)).mode & 0o777, 0o600, 'replaced by a cache only we may write');
    // In a dir others may write: not used, nothing written there.
    await rm(file);
    await chmod(dir, 0o777);
    assert.deepEqual(seen(await status(home)), seen(expected));
    assert.deepEqual(await cacheFiles(home), []);
    await chmod(dir, 0o700);
  });

  // As a redeploy from a tarball replaces it.
  test('a bundle replaced by other bytes of the same size, time and inode runs its own code', async () => {
    // A copy of the package: bin/, the bundle, package.json and the runtime dependency.
    const root = new URL('../../', import.meta.url);
    const pkg = path.join(work, 'pkg');
    await mkdir(path.join(pkg, 'dist', 'bundle'), { recursive: true });
    await cp(new URL('bin/', root), path.join(pkg, 'bin'), { recursive: true });
    await cp(new URL('package.json', root), path.join(pkg, 'package.json'));
    await symlink(fileURLToPath(new URL('node_modules', root)), path.join(pkg, 'node_modules'));
    const bundle = path.join(pkg, 'dist', 'bundle', 'cli.cjs');
    await cp(BUNDLE, bundle);
    const then = new Date('1985-10-26T08:15:00Z'); // what `npm pack` stamps on every file
    await utimes(bundle, then, then);
    const home = path.join(work, 'redeploy');
    const help = () =>
      spawnSync(process.execPath, [path.join(pkg, 'bin', 'stagecommit.js'), '--help'], {
        encoding: 'utf8',
        env: { ...process.env, XDG_CACHE_HOME: home },
      });
    assert.match(help().stdout, /All-or-nothing batch writes/);
    assert.equal((await cacheFiles(home)).length, 1);
    // The same length, written in place (same inode), the time set back.
    const bytes = await readFile(bundle);
    const at = bytes.indexOf('All-or-nothing batch writes');
    bytes.write('All-or-NOTHING batch writes', at, 'latin1');
    await writeFile(bundle, bytes);
    await utimes(bundle, then, then);
    const r = help();
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /All-or-NOTHING batch writes/, 'the new bundle, not the code cached for the old one');
  });

  test('STAGECOMMIT_CODE_CACHE=off reads and writes no cache', async () => {
    const home = path.join(work, 'off');
    assert.deepEqual(seen(await status(home, { STAGECOMMIT_CODE_CACHE: 'off' })), seen(expected));
    assert.deepEqual(await cacheFiles(home), []);
  });

  test('runs racing to write the first cache each leave it whole', async () => {
    const home = path.join(work, 'racing');
    const runs = await Promise.all(Array.from({ length: 6 }, () => status(home)));
    for (const r of runs) assert.deepEqual(seen(r), seen(expected));
    const files = await cacheFiles(home);
    assert.equal(files.length, 1, files.join(', '));
    const before = await stat(path.join(home, 'stagecommit', files[0]!));
    assert.deepEqual(seen(await status(home)), seen(expected));
    assert.equal(
      (await stat(path.join(home, 'stagecommit', files[0]!))).mtimeMs,
      before.mtimeMs,
      'the cache the race left is whole: it is used, not written again',
    );
  });

  test('a node given V8 flags of its own (frozen flags, its own heap growth) runs the CLI as without them', async () => {
    const home = path.join(work, 'frozen');
    for (const flags of [['--freeze-flags-after-init'], ['--heap-growing-percent=200']]) {
      const r = spawnSync(process.execPath, [...flags, BIN, 'status', '--job', handle, '--json'], {
        cwd: work,
        encoding: 'utf8',
        env: { ...process.env, STAGECOMMIT_BUNDLE: '1', XDG_CACHE_HOME: home },
      });
      assert.deepEqual(
        seen({ code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }),
        seen(expected),
        flags.join(' '),
      );
    }
  });
});
