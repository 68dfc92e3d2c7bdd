// clean-orphans never deletes the only copy of output: an engine's leftover at every point of its
// commit that adopt knows, listed, deleted and kept, through the CLI and the library.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { cleanOrphans } from '../src/index.js';
import { adoptRunners, leftoverFiles, table } from '../testing/adopt.js';
import {
  attemptDir,
  hadoopV1,
  hiveInsert,
  HIVE_STAGING,
  SPARK_STAGES,
  sparkOverwrite,
  type EngineCase,
} from '../testing/engines.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { readTree, writeTree } from '../testing/tree.js';

/** A Hive query killed while still writing: only `_tmp.-ext-10000`, nothing final. */
function hiveWriting(): EngineCase {
  return {
    leftover: HIVE_STAGING,
    before: { '000000_0': 'old', [`${HIVE_STAGING}/_tmp.-ext-10000/000000_0`]: 'half' },
    after: { '000000_0': 'old' },
  };
}

/** A Hadoop job killed while its tasks ran: attempt output only, no committed task. */
function hadoopRunning(): EngineCase {
  return {
    leftover: '_temporary',
    before: { [`_temporary/0/_temporary/${attemptDir(0, 0)}/part-m-00000`]: 'half' },
    after: {},
  };
}

/** The leftover's files as the engine case lays them out (its empty dirs aside). */
const filesOf = (c: EngineCase) =>
  Object.fromEntries(Object.entries(leftoverFiles(c)).filter(([k]) => !k.endsWith('/')));

/** [case, whether it holds output the table may not have]. */
const CASES: [string, () => EngineCase, boolean][] = [
  ...SPARK_STAGES.map((s): [string, () => EngineCase, boolean] => [
    `spark killed at ${s}`,
    () => sparkOverwrite(s),
    s === 'merging' || s === 'merged' || s === 'replacing',
  ]),
  ['hadoop v1 with committed tasks', hadoopV1, true],
  ['hadoop with attempts only', hadoopRunning, false],
  ['hive with a finished -ext-10000', hiveInsert, true],
  ['hive still writing', hiveWriting, false],
];

for (const fx of storeFixtures()) {
  describe(`clean-orphans keeps unpublished output on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'u');
    const { run } = adoptRunners(() => sb);
    const leftoverOf = (stdout: string) => {
      const ls = JSON.parse(stdout).leftovers as { kind: string; action: string; reason?: string }[];
      assert.equal(ls.length, 1, stdout);
      return ls[0]!;
    };

    for (const [name, make, kept] of CASES) {
      test(`${name}: ${kept ? 'listed as adopt, kept by --delete' : 'deleted'}`, async () => {
        const c = make();
        const { target, leftover } = await table(sb, dir(), c);
        const dry = await run(['clean-orphans', sb.uri(target), '--older-than', '0s', '--json']);
        assert.equal(dry.code, 0, dry.stderr);
        const listed = leftoverOf(dry.stdout);
        assert.equal(listed.action, kept ? 'adopt' : 'would-delete', listed.reason);
        if (kept)
          assert.match(
            listed.reason!,
            /^holds \d+ output file\(s\) the table may not have \(.+\): publish it with 'stagecommit adopt .+', or remove it only with --delete --delete-unpublished/,
          );

        const del = await run(['clean-orphans', sb.uri(target), '--older-than', '0s', '--delete', '--json']);
        assert.equal(del.code, 0, del.stderr);
        assert.equal(leftoverOf(del.stdout).action, kept ? 'adopt' : 'deleted');
        const left = await readTree(sb.store, leftover);
        assert.deepEqual(left, kept ? filesOf(c) : {}, 'the leftover is kept whole, or gone');
        if (!kept) return;

        const gone = await run([
          'clean-orphans',
          sb.uri(target),
          '--older-than',
          '0s',
          '--delete',
          '--delete-unpublished',
          '--json',
        ]);
        assert.equal(gone.code, 0, gone.stderr);
        assert.equal(leftoverOf(gone.stdout).action, 'deleted');
        assert.deepEqual(await readTree(sb.store, leftover), {});
      });
    }

    // Keeps protocol.md §5.16: an S3A magic commit's records name uploads not yet completed.
    test('an S3A magic commit with records is kept, and the uploads beside it', async () => {
      const target = posix.join(dir(), 'sales');
      const magic = posix.join(target, '__magic_job-7');
      await writeTree(sb.store, target, { '__magic_job-7/tasks/attempt_1/dt=1/part-0.pending': '{}' });
      await sb.startUpload?.(posix.join(target, 'dt=1', 'part-0'));
      const args = ['clean-orphans', sb.uri(target), '--older-than', '0s', '--json'];
      const del = await run([...args, '--delete']);
      assert.equal(del.code, 0, del.stderr);
      const acts = JSON.parse(del.stdout).leftovers.map((l: { kind: string; action: string }) => [l.kind, l.action]);
      const upload = sb.startUpload ? [['multipart-upload', 'skipped']] : [];
      assert.deepEqual(acts, [['s3a-magic', 'skipped'], ...upload]);
      assert.deepEqual(Object.keys(await readTree(sb.store, magic)), ['tasks/attempt_1/dt=1/part-0.pending']);
      if (sb.store.listUploads) assert.equal((await sb.store.listUploads(target)).length, 1);
      const gone = await run([...args, '--delete', '--delete-unpublished']);
      assert.equal(gone.code, 0, gone.stderr);
      assert.deepEqual(await readTree(sb.store, magic), {});
      if (sb.store.listUploads) assert.deepEqual(await sb.store.listUploads(target), []);
    });

    test('library: deleteUnpublished is needed to remove a leftover to adopt', async () => {
      const c = sparkOverwrite('replacing');
      const { target, leftover } = await table(sb, dir(), c);
      const opts = { roots: [sb.uri(target)], olderThan: '0s', delete: true, env: { ...process.env, ...sb.env } };
      const kept = await cleanOrphans(opts);
      assert.deepEqual(
        kept.leftovers.map((l) => l.action),
        ['adopt'],
      );
      assert.deepEqual(await readTree(sb.store, leftover), filesOf(c));
      const removed = await cleanOrphans({ ...opts, deleteUnpublished: true });
      assert.deepEqual(
        removed.leftovers.map((l) => l.action),
        ['deleted'],
      );
      assert.deepEqual(await readTree(sb.store, leftover), {});
    });

    test('--delete-unpublished without --delete: exit 2, nothing changed', async () => {
      const c = hiveInsert();
      const { target } = await table(sb, dir(), c);
      const before = await readTree(sb.store, target);
      const r = await run(['clean-orphans', sb.uri(target), '--older-than', '0s', '--delete-unpublished']);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /^stagecommit: error: --delete-unpublished removes leftovers only together with --delete/);
      assert.deepEqual(await readTree(sb.store, target), before);
    });
  });
}
