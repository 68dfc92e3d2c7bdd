// Zero-copy commit (protocol.md §9.1): on stores with multipart uploads, `stage FILE` sends large files
// to their final keys as uploads left pending, commit-job completes them, and every way a job or
// an attempt ends without them aborts them. On other stores the same stories must end the same.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { CommitDeniedError, ConflictError, CorruptManifestError, StoreError } from '../src/errors.js';
import { damages, withItem } from '../testing/damage.js';
import { abort } from '../src/steps/abort.js';
import { cleanOrphans } from '../src/steps/clean-orphans.js';
import { commitJob } from '../src/steps/commit-job.js';
import { recover } from '../src/steps/recover.js';
import { libCommitJob, libCommitTask, libStage, libStageTask, testEnv, type Scenario } from '../testing/lib.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree, writeTree } from '../testing/tree.js';

// The S3 sandbox stages files of 4 bytes and more as pending uploads; smaller ones are copied.
const BIG_A = 'aaaaaaaaaa';
const BIG_B = 'bbbbbbbbbbbbbbbbbbbb';

for (const fx of storeFixtures()) {
  describe(`pending uploads on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'u');
    const env = () => testEnv(sb.store);
    /** Uploads never completed under a path (0 on stores without uploads). */
    const pending = async (p: string) => (sb.store.listUploads ? (await sb.store.listUploads(p)).length : 0);
    const fresh = async (job: Scenario['job'], initial?: Record<string, string>) => {
      const root = dir();
      const target = posix.join(root, 'table');
      if (initial) await writeTree(sb.store, target, initial);
      const stagingPath = await libStage(env(), target, {
        name: '',
        initial: null,
        job: { ...job, stagingPath: posix.join(root, 'staging', 'job') },
        tasks: [],
      });
      return { root, target, stagingPath };
    };

    test("commit-job of an append reads each claim once: the uploads it aborts come from its plan's reads", async () => {
      const { target, stagingPath } = await fresh(
        { mode: 'append', algorithm: 'v1', partitionBy: ['dt'] },
        { 'dt=0/old': 'old' },
      );
      for (const task of ['0', '1']) {
        await libStageTask(env(), stagingPath, { task, partition: ['dt=1'], files: { [`big-${task}`]: BIG_A } });
        await libCommitTask(env(), stagingPath, { task, files: {} });
      }
      const reads: string[] = [];
      const counting = new Proxy(sb.store, {
        get(t, k) {
          const v = Reflect.get(t, k) as unknown;
          if (typeof v !== 'function') return v;
          return (...args: unknown[]) => {
            if (k === 'readFile') reads.push(args[0] as string);
            return (v as (...a: unknown[]) => unknown).apply(t, args);
          };
        },
      });
      await commitJob(testEnv(counting), { stagingPath });
      const claims = reads.filter((p) => p.includes('/_claims/')).sort();
      assert.deepEqual(claims, [...new Set(claims)], 'a claim read twice');
      assert.equal(claims.length, 2);
      assert.deepEqual(data(await readTree(sb.store, target)), {
        'dt=0/old': 'old',
        'dt=1/big-0': BIG_A,
        'dt=1/big-1': BIG_A,
      });
      assert.equal(await pending(target), 0);
    });

    test('large files wait invisible at their final keys; commit-job completes them, small ones are copied', async () => {
      const { target, stagingPath } = await fresh({ mode: 'create', algorithm: 'v1', partitionBy: ['dt'] });
      await libStageTask(env(), stagingPath, { task: '0', partition: ['dt=1'], files: { big: BIG_A, s: 'ab' } });
      if (sb.store.listUploads) assert.equal(await pending(target), 1, 'the large file is a pending upload');
      assert.deepEqual(await readTree(sb.store, target), {}, 'nothing visible before commit-job');
      await libCommitTask(env(), stagingPath, { task: '0', files: {} });
      const e = env();
      const r = await commitJob(e, { stagingPath });
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/big': BIG_A, 'dt=1/s': 'ab' });
      assert.equal(await pending(target), 0);
      assert.equal(await sb.store.stat(stagingPath), null);
      if (sb.store.listUploads)
        assert.deepEqual([r.metrics.complete, r.metrics.copy], [1, 1], 'one completion, one copy');
    });

    // On RGW a CopyObject shares the object's tail: cheaper than any upload.
    test("an outside writer's files, large ones too, are copied server-side by commit-job", async () => {
      const { target, stagingPath } = await fresh({ mode: 'create', algorithm: 'v1', partitionBy: ['dt'] });
      await libStageTask(env(), stagingPath, {
        task: '0',
        partition: ['dt=1'],
        files: { big: BIG_A, other: BIG_B, s: 'ab' },
        writer: true,
      });
      await libCommitTask(env(), stagingPath, { task: '0', files: {} });
      assert.equal(await pending(target), 0, 'no upload is begun for them');
      const r = await commitJob(env(), { stagingPath });
      assert.deepEqual(data(await readTree(sb.store, target)), {
        'dt=1/big': BIG_A,
        'dt=1/other': BIG_B,
        'dt=1/s': 'ab',
      });
      assert.equal(await sb.store.stat(stagingPath), null);
      if (sb.store.listUploads) assert.deepEqual([r.metrics.complete ?? 0, r.metrics.copy], [0, 3], 'three copies');
    });

    test('a damaged upload record is refused naming it, nothing changed', async (t) => {
      if (!sb.store.beginUpload) return t.skip('no upload records on this store');
      const { root, stagingPath } = await fresh({ mode: 'create', algorithm: 'v1', partitionBy: [] });
      await libStageTask(env(), stagingPath, { task: '0', files: { f: BIG_A } });
      await libStageTask(env(), stagingPath, { task: '1', files: { g: BIG_B } });
      const records = Object.keys(data(await readTree(sb.store, stagingPath)))
        .filter((k) => k.startsWith('_uploads/'))
        .sort();
      assert.equal(records.length, 2);
      for (const [i, rel] of records.entries()) {
        const file = posix.join(stagingPath, rel);
        const good = (await sb.store.readFile(file))!.toString();
        const task = rel.includes('_0_0/') ? '0' : '1';
        const variants = [
          ...damages(good, 7 + i).filter((_, k) => k % 3 === i),
          { name: 'path escapes', text: withItem(good, 'uploads', 0, (o) => (o.path = '../../x')) },
          { name: 'etags not a list', text: withItem(good, 'uploads', 0, (o) => (o.etags = 'x')) },
        ];
        const before = await readTree(sb.store, root);
        for (const v of variants) {
          await sb.store.writeFile(file, v.text);
          const err = await libCommitTask(env(), stagingPath, { task, files: {} }).then(
            () => null,
            (e: unknown) => e,
          );
          assert.ok(
            err instanceof CorruptManifestError && err.message.startsWith(sb.store.toUri(file)),
            `${rel}: ${v.name}: ${String(err)}`,
          );
          await sb.store.writeFile(file, good);
          assert.deepEqual(await readTree(sb.store, root), before, `${rel}: ${v.name}: something changed`);
        }
      }
      await libCommitTask(env(), stagingPath, { task: '0', files: {} });
      await libCommitTask(env(), stagingPath, { task: '1', files: {} });
      await libCommitJob(env(), stagingPath);
      assert.equal(await pending(posix.join(root, 'table')), 0);
    });

    test("commit-job aborts the uploads of lost, denied and aborted attempts; the winners' bytes are published", async () => {
      const { target, stagingPath } = await fresh(
        { mode: 'append', algorithm: 'v1', partitionBy: ['dt'] },
        { 'dt=1/old': 'OLD' },
      );
      await libStageTask(env(), stagingPath, { task: '0', attempt: 0, partition: ['dt=1'], files: { f: BIG_A } });
      await libStageTask(env(), stagingPath, { task: '0', attempt: 1, partition: ['dt=1'], files: { f: BIG_B } });
      await libStageTask(env(), stagingPath, { task: '1', attempt: 0, partition: ['dt=2'], files: { g: BIG_A } });
      await libStageTask(env(), stagingPath, { task: '2', attempt: 0, partition: ['dt=3'], files: { h: BIG_A } });
      await libCommitTask(env(), stagingPath, { task: '0', attempt: 1, files: {} });
      await assert.rejects(libCommitTask(env(), stagingPath, { task: '0', attempt: 0, files: {} }), CommitDeniedError);
      await abort(env(), { stagingPath, task: '1', attempt: 0 });
      await libStageTask(env(), stagingPath, { task: '1', attempt: 1, partition: ['dt=2'], files: { g: BIG_B } });
      await libCommitTask(env(), stagingPath, { task: '1', attempt: 1, files: {} });
      // Task 2 staged but never committed: a lost attempt.
      await libCommitJob(env(), stagingPath);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/f': BIG_B, 'dt=1/old': 'OLD', 'dt=2/g': BIG_B });
      assert.equal(await pending(target), 0);
    });

    test('a file staged again in the same attempt: the last one wins, the earlier upload is aborted', async () => {
      const { target, stagingPath } = await fresh({ mode: 'create', algorithm: 'v1', partitionBy: [] });
      await libStageTask(env(), stagingPath, { task: '0', files: { f: BIG_A } });
      await libStageTask(env(), stagingPath, { task: '0', files: { f: BIG_B } });
      await libCommitTask(env(), stagingPath, { task: '0', files: {} });
      assert.equal(await pending(target), sb.store.listUploads ? 1 : 0, 'only the claimed upload is left pending');
      await libCommitJob(env(), stagingPath);
      assert.deepEqual(data(await readTree(sb.store, target)), { f: BIG_B });
      assert.equal(await pending(target), 0);
    });

    // No record would ever name such an upload.
    test('stage FILE whose upload record cannot be written fails and leaves no upload behind', async (t) => {
      if (!sb.store.beginUpload) return t.skip('this store has no multipart uploads');
      const { target, stagingPath } = await fresh({ mode: 'create', algorithm: 'v1', partitionBy: ['dt'] });
      const refused = testEnv(sb.store, (_n, op, p) => {
        if (op === 'writeFile' && p.includes('/_uploads/'))
          throw new StoreError('refused', 'writeFile', [p], 'access denied (HTTP 403 AccessDenied)');
      });
      await assert.rejects(
        libStageTask(refused, stagingPath, { task: '0', partition: ['dt=1'], files: { big: BIG_A, other: BIG_B } }),
        StoreError,
      );
      assert.equal(await pending(target), 0);
      assert.deepEqual(await readTree(sb.store, target), {});
      // The same files staged again commit as if nothing had happened.
      await libStageTask(env(), stagingPath, { task: '0', partition: ['dt=1'], files: { big: BIG_A, other: BIG_B } });
      await libCommitTask(env(), stagingPath, { task: '0', files: {} });
      await libCommitJob(env(), stagingPath);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/big': BIG_A, 'dt=1/other': BIG_B });
      assert.equal(await pending(target), 0);
    });

    test('job abort after commit-task: target as before, no pending upload left', async () => {
      const initial = { 'dt=1/f': 'OLD' };
      const { target, stagingPath } = await fresh({ mode: 'overwrite', algorithm: 'v1', partitionBy: ['dt'] }, initial);
      await libStageTask(env(), stagingPath, { task: '0', partition: ['dt=1'], files: { f: BIG_A } });
      await libStageTask(env(), stagingPath, { task: '1', partition: ['dt=2'], files: { g: BIG_A } });
      await libCommitTask(env(), stagingPath, { task: '0', files: {} });
      await abort(env(), { stagingPath });
      assert.deepEqual(await readTree(sb.store, target), initial);
      assert.equal(await pending(target), 0);
      assert.equal(await sb.store.stat(stagingPath), null);
    });

    test('recover aborts the uploads it does not keep; the rerun commits exactly the new bytes', async () => {
      const { target, stagingPath } = await fresh({ mode: 'create', algorithm: 'v1', partitionBy: ['dt'] });
      await libStageTask(env(), stagingPath, { task: '0', partition: ['dt=1'], files: { f: BIG_A } });
      await libCommitTask(env(), stagingPath, { task: '0', files: {} });
      await libStageTask(env(), stagingPath, { task: '1', partition: ['dt=2'], files: { g: BIG_A } });
      const r = await recover(env(), { stagingPath });
      assert.deepEqual([r.committedTasks, r.tasksToRun], [['0'], ['1']]);
      assert.equal(await pending(target), sb.store.listUploads ? 1 : 0, "task 0's upload is kept, task 1's aborted");
      await libStageTask(env(), stagingPath, { task: '1', partition: ['dt=2'], files: { g: BIG_B } });
      await libCommitTask(env(), stagingPath, { task: '1', files: {} });
      await libCommitJob(env(), stagingPath);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/f': BIG_A, 'dt=2/g': BIG_B });
      assert.equal(await pending(target), 0);
    });

    test('clean-orphans --delete of an abandoned job aborts its uploads', async () => {
      const { root, target, stagingPath } = await fresh({ mode: 'create', algorithm: 'v1', partitionBy: [] });
      await libStageTask(env(), stagingPath, { task: '0', files: { f: BIG_A } });
      await libCommitTask(env(), stagingPath, { task: '0', files: {} });
      await libStageTask(env(), stagingPath, { task: '1', files: { g: BIG_A } });
      const r = await cleanOrphans(env(), { roots: [posix.join(root, 'staging')], olderThanMs: 0, delete: true });
      assert.deepEqual(
        r.leftovers.map((l) => [l.kind, l.action]),
        [['stagecommit', 'deleted']],
      );
      assert.equal(await pending(target), 0);
      assert.equal(await sb.store.stat(target), null);
    });

    test('an overwrite that loses its conflict changes nothing visible and leaves no upload', async () => {
      const initial = { 'dt=1/f': 'OLD' };
      const a = await fresh({ mode: 'overwrite', algorithm: 'v1', partitionBy: ['dt'] }, initial);
      const bStaging = await libStage(env(), a.target, {
        name: '',
        initial: null,
        job: {
          mode: 'overwrite',
          algorithm: 'v1',
          partitionBy: ['dt'],
          stagingPath: posix.join(a.root, 'staging', 'b'),
        },
        tasks: [],
      });
      for (const [s, body] of [
        [a.stagingPath, BIG_A],
        [bStaging, BIG_B],
      ] as const) {
        await libStageTask(env(), s, { task: '0', partition: ['dt=1'], files: { f: body } });
        await libCommitTask(env(), s, { task: '0', files: {} });
      }
      await libCommitJob(env(), a.stagingPath);
      await assert.rejects(libCommitJob(env(), bStaging), ConflictError);
      assert.deepEqual(data(await readTree(sb.store, a.target)), { 'dt=1/f': BIG_A });
      await abort(env(), { stagingPath: bStaging });
      assert.deepEqual(data(await readTree(sb.store, a.target)), { 'dt=1/f': BIG_A });
      assert.equal(await pending(a.target), 0);
    });

    test("an upload aborted behind the job's back stops commit-job before its commit point (exit 6)", async (t) => {
      if (!sb.store.listUploads || !sb.store.abortUpload) return t.skip('no multipart uploads on this store');
      const initial = { 'dt=1/old': 'OLD' };
      const { target, stagingPath } = await fresh({ mode: 'append', algorithm: 'v1', partitionBy: ['dt'] }, initial);
      await libStageTask(env(), stagingPath, { task: '0', partition: ['dt=1'], files: { f: BIG_A, g: BIG_B } });
      await libCommitTask(env(), stagingPath, { task: '0', files: {} });
      const ups = await sb.store.listUploads(target);
      await sb.store.abortUpload(ups[0]!);
      await assert.rejects(
        libCommitJob(env(), stagingPath),
        (e: unknown) =>
          e instanceof ConflictError && e.detail.reason === 'upload-gone' && /^dt=1\/[fg]$/.test(e.detail.path),
      );
      assert.deepEqual(await readTree(sb.store, target), initial);
      await abort(env(), { stagingPath });
      assert.equal(await pending(target), 0);
    });
  });
}
