// The table log read from a job's position and pruned by count (protocol.md §3.4): a commit still
// sees every entry above its position and every unfinished one below it; a job staged before
// entries that were pruned stops (exit 6), never commits past them.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { BlockedError } from '../src/errors.js';
import { JobLayout } from '../src/job/layout.js';
import { TableLog } from '../src/job/table-log.js';
import { encodeManifest } from '../src/manifest/codec.js';
import { assertFailed, cli } from '../testing/cli.js';
import { jobScenario, libCommitJob, readyJob, testEnv } from '../testing/lib.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree } from '../testing/tree.js';

const rejection = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => null,
    (e: unknown) => e,
  );

/** Pruning after every commit, keeping the newest 2 and at most 4 entries. */
const TIGHT = { logRetention: { keep: 2, max: 4, every: 1 } };

for (const fx of storeFixtures()) {
  describe(`table log read from the job's position on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'g');

    test('entries beyond the newest 4 are pruned by count; a job staged before them exits 6', async () => {
      const target = posix.join(dir(), 'sales');
      const old = await readyJob(sb.store, target, jobScenario('old', 'append'), [
        { task: '0', partition: ['dt=old'], files: { a: 'old' } },
      ]);
      for (let i = 0; i < 8; i++) {
        const s = await readyJob(sb.store, target, jobScenario(`j${i}`, 'append'), [
          { task: '0', partition: [`dt=${i}`], files: { a: String(i) } },
        ]);
        await libCommitJob(testEnv(sb.store, undefined, TIGHT), s);
      }
      const log = new TableLog(sb.store, target);
      assert.deepEqual((await log.list()).numbers, [4, 5, 6, 7], 'the newest 4 entries are kept');

      const err = await rejection(libCommitJob(testEnv(sb.store, undefined, TIGHT), old));
      assert.ok(err instanceof BlockedError, `exit 6, not: ${String(err)}`);
      assert.match((err as Error).message, /entries made since it was staged are missing/);
      const tree = data(await readTree(sb.store, target));
      assert.equal(tree['dt=old/a'], undefined, "the old job's file never appears");
      assert.equal(Object.keys(tree).filter((k) => !k.startsWith('_')).length, 8);

      // A job staged now reads the log from its checkpoint and commits.
      const fresh = await readyJob(sb.store, target, jobScenario('fresh', 'append'), [
        { task: '0', partition: ['dt=fresh'], files: { a: 'fresh' } },
      ]);
      await libCommitJob(testEnv(sb.store, undefined, TIGHT), fresh);
      assert.equal(data(await readTree(sb.store, target))['dt=fresh/a'], 'fresh');
      assert.deepEqual((await log.list()).numbers, [5, 6, 7, 8]);
    });

    test('an entry removed by hand below the newest stops an older overwrite (exit 6)', async () => {
      const target = posix.join(dir(), 'sales');
      const commit = async (id: string, dt: string, body: string) =>
        libCommitJob(
          testEnv(sb.store),
          await readyJob(sb.store, target, jobScenario(id, 'overwrite'), [
            { task: '0', partition: [`dt=${dt}`], files: { a: body } },
          ]),
        );
      await commit('first', '1', 'first');
      const older = await readyJob(sb.store, target, jobScenario('older', 'overwrite'), [
        { task: '0', partition: ['dt=1'], files: { a: 'older' } },
      ]);
      await commit('other', '9', 'other');
      await commit('newer', '1', 'newer');
      const log = new TableLog(sb.store, target);
      for (const name of ['00000000000000000001.yaml', '00000000000000000001.done'])
        await sb.store.delete(posix.join(log.dir, name), false);

      const err = await rejection(libCommitJob(testEnv(sb.store), older));
      assert.ok(err instanceof BlockedError, `exit 6, not: ${String(err)}`);
      assert.match((err as Error).message, /entries made since it was staged are missing/);
      assert.equal(data(await readTree(sb.store, target))['dt=1/a'], 'newer', 'the newer data stays');
    });

    test('a commit reads from its position on yet stops at an unfinished entry below it (exit 6)', async () => {
      const target = posix.join(dir(), 'sales');
      // Job x wrote its plan and took entry 0 for dt=1 (its commit point), then was killed.
      const x = await readyJob(sb.store, target, jobScenario('x', 'overwrite'), [
        { task: '0', partition: ['dt=1'], files: { a: 'x' } },
      ]);
      const log = new TableLog(sb.store, target);
      await sb.store.writeFile(new JobLayout(x).planFile('0-0-aa'), 'a plan');
      await log.tryAppend({
        number: 0,
        jobId: 'x',
        staging: new JobLayout(x).root,
        handle: sb.store.toUri(x),
        touches: ['dt=1'],
        replaces: ['dt=1'],
        atMs: Date.now(),
        plan: { name: '0-0-aa', sha256: '0'.repeat(64) },
      });
      // Commits of other partitions since: the log's newest is well above entry 0.
      for (let i = 2; i < 6; i++) {
        const s = await readyJob(sb.store, target, jobScenario(`j${i}`, 'append'), [
          { task: '0', partition: [`dt=${i}`], files: { a: String(i) } },
        ]);
        await libCommitJob(testEnv(sb.store, undefined, { logRetention: { keep: 2, max: 4, every: 1 } }), s);
      }
      const y = await readyJob(sb.store, target, jobScenario('y', 'append'), [
        { task: '0', partition: ['dt=1'], files: { b: 'y' } },
      ]);
      const err = await rejection(libCommitJob(testEnv(sb.store), y));
      assert.ok(err instanceof BlockedError, `exit 6, not: ${String(err)}`);
      assert.match((err as Error).message, /job x passed its commit point for 'dt=1' but did not finish/);
      assert.equal(data(await readTree(sb.store, target))['dt=1/b'], undefined, 'nothing of y appears');
      assert.ok((await log.list()).numbers.includes(0), 'the unfinished entry is never pruned');
    });

    test('a target inside a table that has a log is refused at stage (exit 2), nothing made', async () => {
      const target = posix.join(dir(), 'sales');
      const first = await readyJob(sb.store, target, jobScenario('first', 'overwrite'), [
        { task: '0', partition: ['dt=1'], files: { a: 'first' } },
      ]);
      await libCommitJob(testEnv(sb.store), first);
      const before = await readTree(sb.store, dir());
      const r = await cli(['stage', '--target', sb.uri(posix.join(target, 'dt=1')), '--mode', 'overwrite', '--json'], {
        env: sb.env,
      });
      assertFailed(r, 2, { reason: 'target-inside-table', table: sb.uri(target), partition: 'dt=1' });
      assert.deepEqual(await readTree(sb.store, dir()), before, 'nothing made');
    });

    test('a checkpoint naming a number this log never took is ignored: an older overwrite exits 6', async () => {
      const target = posix.join(dir(), 'sales');
      const first = await readyJob(sb.store, target, jobScenario('first', 'append'), [
        { task: '0', partition: ['dt=0'], files: { a: 'first' } },
      ]);
      await libCommitJob(testEnv(sb.store), first);
      // Well formed, but another table's (or made by hand): newest 49 in a log whose newest is 0.
      const checkpoint = posix.join(target, '..', '.stagecommit', 'sales', '_log', 'checkpoint.yaml');
      const log = (await new TableLog(sb.store, target).list()).id!;
      const forged = { kind: 'stagecommit/log-checkpoint', version: 2, log, newest: 49, readFrom: 50, oldest: 0 };
      await sb.store.writeFile(checkpoint, encodeManifest(forged));
      const older = await readyJob(sb.store, target, jobScenario('older', 'overwrite'), [
        { task: '0', partition: ['dt=1'], files: { o: 'older' } },
      ]);
      await sb.store.delete(checkpoint, false);
      const newer = await readyJob(sb.store, target, jobScenario('newer', 'append'), [
        { task: '0', partition: ['dt=1'], files: { n: 'newer' } },
      ]);
      await libCommitJob(testEnv(sb.store), newer);
      const err = await rejection(libCommitJob(testEnv(sb.store), older));
      assert.ok(err instanceof BlockedError, `exit 6, not: ${String(err)}`);
      assert.equal(data(await readTree(sb.store, target))['dt=1/n'], 'newer', 'the newer commit stays');
    });

    test("another log's checkpoint is ignored: an unfinished entry it would skip still holds (exit 6)", async () => {
      const target = posix.join(dir(), 'sales');
      const first = await readyJob(sb.store, target, jobScenario('first', 'append'), [
        { task: '0', partition: ['dt=0'], files: { a: 'first' } },
      ]);
      await libCommitJob(testEnv(sb.store), first);
      // Job x holds entry 1 for dt=1: it wrote its plan and took the entry (its commit point), then was killed.
      const x = await readyJob(sb.store, target, jobScenario('x', 'overwrite'), [
        { task: '0', partition: ['dt=1'], files: { a: 'x' } },
      ]);
      const log = new TableLog(sb.store, target);
      await sb.store.writeFile(new JobLayout(x).planFile('0-1-aa'), 'a plan');
      const held = { jobId: 'x', staging: new JobLayout(x).root, handle: sb.store.toUri(x) };
      const plan = { name: '0-1-aa', sha256: '0'.repeat(64) };
      await log.tryAppend({ number: 1, ...held, touches: ['dt=1'], replaces: ['dt=1'], atMs: Date.now(), plan });
      // Well formed, its newest taken here, but another log's: it says everything below 2 is finished.
      const other = { kind: 'stagecommit/log-checkpoint', version: 2, log: 'another-log', newest: 1, readFrom: 2 };
      await sb.store.writeFile(posix.join(log.dir, 'checkpoint.yaml'), encodeManifest({ ...other, oldest: 0 }));
      const y = await readyJob(sb.store, target, jobScenario('y', 'overwrite'), [
        { task: '0', partition: ['dt=1'], files: { b: 'y' } },
      ]);
      const err = await rejection(libCommitJob(testEnv(sb.store), y));
      assert.ok(err instanceof BlockedError, `exit 6, not: ${String(err)}`);
      assert.equal(data(await readTree(sb.store, target))['dt=1/b'], undefined, 'nothing of y appears');
    });
  });
}
