// clean-orphans at its edges: an empty leftover is dated by its own time, and a root that is
// missing or not a directory is bad input that scans and changes nothing.

import assert from 'node:assert/strict';
import { symlink } from 'node:fs/promises';
import { posix } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { cleanOrphans } from '../src/steps/clean-orphans.js';
import { cli } from '../testing/cli.js';
import { testEnv } from '../testing/lib.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { readTree, writeTree } from '../testing/tree.js';

interface JsonLeftover {
  kind: string;
  path: string;
  ageSeconds: number;
  files: number;
  action: string;
  reason?: string;
}

function leftovers(stdout: string): Map<string, JsonLeftover> {
  const doc = JSON.parse(stdout) as { leftovers: JsonLeftover[] };
  return new Map(doc.leftovers.map((l) => [l.path, l]));
}

/**
 * Makes an empty directory look last changed long ago and returns an --older-than that it
 * passes and a directory made now does not, however slowly the CLI starts. Its time is set back
 * two days (locally, and in the test WebHDFS server's namespace); a store that cannot backdate
 * lets the directory age for real.
 */
async function ageEmptyDir(sb: StoreSandbox, dir: string): Promise<{ olderThan: string; minAgeSeconds: number }> {
  if (sb.backdate) {
    await sb.backdate(dir, Date.now() - 2 * 86_400_000);
    return { olderThan: '1h', minAgeSeconds: 2 * 86_400 - 60 };
  }
  await sleep(3000);
  return { olderThan: '2s', minAgeSeconds: 2 };
}

for (const fx of storeFixtures()) {
  describe(`clean-orphans edges on ${fx.name}`, () => {
    let sb: StoreSandbox;
    const newDir = useSandbox(fx, (s) => (sb = s), 'edge');

    test('an empty _temporary made just now is not old: skipped by --delete, still there', async (t) => {
      if (!sb.store.caps.realDirectories) return t.skip('the store has no empty directories');
      const root = newDir();
      const tmp = posix.join(root, 'sales', '_temporary');
      await sb.store.mkdirs(tmp);
      const r = await cli(['clean-orphans', sb.uri(root), '--delete', '--older-than', '1h', '--json'], { env: sb.env });
      assert.equal(r.code, 0, r.stderr);
      const l = leftovers(r.stdout).get(sb.uri(tmp));
      assert.ok(l, r.stdout);
      assert.equal(l.kind, 'hadoop-temporary');
      assert.equal(l.files, 0);
      assert.equal(l.action, 'skipped');
      assert.match(l.reason ?? '', /newer than --older-than/);
      assert.ok(l.ageSeconds < 60, `age ${l.ageSeconds}s for a directory made just now`);
      assert.equal((await sb.store.stat(tmp))?.kind, 'dir');
    });

    test('an empty _temporary last changed long ago is old: deleted, and a fresh one beside it stays', async (t) => {
      if (!sb.store.caps.realDirectories) return t.skip('the store has no empty directories');
      const root = newDir();
      const old = posix.join(root, 'sales', '_temporary');
      const young = posix.join(root, 'events', '_temporary');
      await sb.store.mkdirs(old);
      const { olderThan, minAgeSeconds } = await ageEmptyDir(sb, old);
      await sb.store.mkdirs(young);
      const r = await cli(['clean-orphans', sb.uri(root), '--delete', '--older-than', olderThan, '--json'], {
        env: sb.env,
      });
      assert.equal(r.code, 0, r.stderr);
      const by = leftovers(r.stdout);
      assert.equal(by.get(sb.uri(old))?.action, 'deleted', r.stdout);
      assert.ok(by.get(sb.uri(old))!.ageSeconds >= minAgeSeconds, r.stdout);
      assert.equal(by.get(sb.uri(young))?.action, 'skipped', r.stdout);
      assert.equal(await sb.store.stat(old), null);
      assert.equal((await sb.store.stat(young))?.kind, 'dir');
      assert.equal(
        (await sb.store.stat(posix.join(root, 'sales')))?.kind,
        'dir',
        'nothing outside the leftover is removed',
      );
    });

    // A file time finer than the clock is not in the future.
    test('--older-than 0 takes what changed within the same millisecond as the scan', async () => {
      const root = newDir();
      const file = posix.join(root, 'sales', '_temporary', '0', 'part-0');
      await sb.store.writeFile(file, 'x');
      // The newest time in the leftover (its dirs too), as listings tell it (a HEAD on S3 gives whole seconds).
      const times = await Promise.all(
        ['sales', 'sales/_temporary', 'sales/_temporary/0'].map(async (d) =>
          (await sb.store.list(posix.join(root, d), { details: true })).map((e) => e.mtimeMs),
        ),
      );
      const changed = Math.max(...times.flat());
      const r = await cleanOrphans(testEnv(sb.store, undefined, { now: () => Math.floor(changed) }), {
        roots: [root],
        olderThanMs: 0,
        delete: true,
      });
      assert.deepEqual(
        r.leftovers.map((l) => [l.kind, l.action, l.reason]),
        [['hadoop-temporary', 'deleted', undefined]],
      );
    });

    test('a root that does not exist is exit 2 naming it; the other roots are not touched', async () => {
      const good = newDir();
      await writeTree(sb.store, good, { 'sales/_temporary/0/part-0': 'x' });
      const missing = posix.join(newDir(), 'no-such-table');
      // The good root comes first: checking roots one by one while acting would already have deleted there.
      const r = await cli(['clean-orphans', sb.uri(good), sb.uri(missing), '--older-than', '0s', '--delete'], {
        env: sb.env,
      });
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stdout, '');
      const lines = r.stderr.trim().split('\n');
      assert.equal(lines.length, 1, r.stderr);
      assert.match(
        lines[0]!,
        /^stagecommit: error: the root .*no-such-table does not exist: give the directories to scan .*nothing was scanned or changed$/,
      );
      assert.ok(lines[0]!.includes(sb.uri(missing)), r.stderr);
      assert.deepEqual(await readTree(sb.store, good), { 'sales/_temporary/0/part-0': 'x' });
    });

    test('a root that is a file is exit 2; with --json the error is the one document on stdout', async () => {
      const base = newDir();
      const file = posix.join(base, 'part-0.parquet');
      await writeTree(sb.store, base, { 'part-0.parquet': 'data', '_temporary/0/x': 'x' });
      const r = await cli(['clean-orphans', sb.uri(file), sb.uri(base), '--older-than', '0s', '--delete', '--json'], {
        env: sb.env,
      });
      assert.equal(r.code, 2, r.stderr);
      const doc = JSON.parse(r.stdout) as { error: { exitCode: number; kind: string; message: string } };
      assert.deepEqual(Object.keys(doc), ['ok', 'error']);
      assert.equal(doc.error.exitCode, 2);
      assert.equal(doc.error.kind, 'UsageError');
      assert.match(doc.error.message, /^the root .*part-0\.parquet is a file: give the directories to scan/);
      assert.doesNotMatch(r.stderr, /\n.+\n/, 'one line on stderr');
      assert.deepEqual(await readTree(sb.store, base), { '_temporary/0/x': 'x', 'part-0.parquet': 'data' });
    });

    test('a root that is a symbolic link is exit 2: links are never followed, not even a root', async (t) => {
      if (fx.name !== 'local') return t.skip('the store has no symbolic links');
      const base = newDir();
      await writeTree(sb.store, base, { 'real/_temporary/0/x': 'x' });
      await symlink(posix.join(base, 'real'), posix.join(base, 'link'));
      const r = await cli(['clean-orphans', posix.join(base, 'link'), '--older-than', '0s', '--delete'], {
        env: sb.env,
      });
      assert.equal(r.code, 2, r.stderr);
      assert.match(
        r.stderr,
        /the root .*link is a symbolic link, which clean-orphans never follows \(give the directory it points to\)/,
      );
      assert.deepEqual(await readTree(sb.store, posix.join(base, 'real')), { '_temporary/0/x': 'x' });
    });
  });
}
