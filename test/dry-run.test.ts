// --dry-run reports what the real step then does: recover's committed tasks and tasks to run
// (attempt dirs, upload records and decisions alike), commit-job's plan, abort's operations; and
// a dry run changes nothing in the store.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { abort, abortDryRun } from '../src/steps/abort.js';
import { commitJob, commitJobDryRun } from '../src/steps/commit-job.js';
import { recover, recoverDryRun } from '../src/steps/recover.js';
import { libCommitTask, libStage, libStageTask, testEnv } from '../testing/lib.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { readTree } from '../testing/tree.js';
import { JobGoneError } from '../src/job/open.js';

// Large enough to be staged as a pending upload on S3 (the sandbox's threshold is 4 bytes).
const BIG = 'bbbbbbbbbbbbbbbbbbbb';

for (const fx of storeFixtures()) {
  describe(`dry runs agree with the real run on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'd');
    const env = () => testEnv(sb.store);

    /** Task 0 committed, task 1 staged and never committed, task 2 aborted (its decision is all that is left). */
    /** `defaultPlace`: staged where a finished job's `_SUCCESS` proves it committed. */
    const threeTasks = async (defaultPlace = false) => {
      const root = dir();
      const target = posix.join(root, 'table');
      const stagingPath = await libStage(env(), target, {
        name: '',
        initial: null,
        job: {
          mode: 'append',
          algorithm: 'v1',
          partitionBy: ['dt'],
          ...(defaultPlace ? {} : { stagingPath: posix.join(root, 'staging', 'job') }),
        },
        tasks: [],
      });
      for (const task of ['0', '1', '2'])
        await libStageTask(env(), stagingPath, { task, partition: ['dt=1'], files: { [`part-${task}`]: BIG } });
      await libCommitTask(env(), stagingPath, { task: '0', files: {} });
      await abort(env(), { stagingPath, task: '2' });
      return { root, target, stagingPath };
    };

    test('recover --dry-run names the tasks to run that recover then names, and changes nothing', async () => {
      const { root, stagingPath } = await threeTasks();
      const before = await readTree(sb.store, root);
      const dry = await recoverDryRun(env(), { stagingPath });
      assert.deepEqual(await readTree(sb.store, root), before);
      const real = await recover(env(), { stagingPath });
      assert.deepEqual(dry.tasksToRun, ['1', '2']);
      assert.deepEqual(dry.tasksToRun, real.tasksToRun);
      assert.deepEqual(dry.committedTasks, real.committedTasks);
      assert.equal(dry.appAttempt, real.appAttempt);
    });

    test('commit-job --dry-run plans the files, bytes and partitions commit-job then publishes', async () => {
      const { root, target, stagingPath } = await threeTasks();
      await libCommitTask(env(), stagingPath, { task: '1', files: {} });
      const before = await readTree(sb.store, root);
      const dry = await commitJobDryRun(env(), { stagingPath });
      assert.deepEqual(await readTree(sb.store, root), before);
      const real = await commitJob(env(), { stagingPath });
      assert.equal(dry.outcome, real.outcome);
      assert.equal(dry.files, real.files);
      assert.equal(dry.bytes, real.bytes);
      assert.deepEqual(dry.partitionsWritten, real.partitionsWritten);
      assert.deepEqual(Object.keys(await readTree(sb.store, target)).sort(), [
        '_SUCCESS',
        'dt=1/part-0',
        'dt=1/part-1',
      ]);
    });

    test('abort --dry-run lists the operations abort then makes: the staging dir goes', async () => {
      const { root, stagingPath } = await threeTasks();
      const before = await readTree(sb.store, root);
      const dry = await abortDryRun(env(), { stagingPath });
      assert.deepEqual(await readTree(sb.store, root), before);
      const real = await abort(env(), { stagingPath });
      assert.equal(dry.outcome, real.outcome);
      assert.deepEqual(
        dry.operations.map((o) => o.op),
        ['write', 'delete'],
      );
      assert.equal(await sb.store.stat(stagingPath), null);
      const uploads = sb.store.listUploads ? await sb.store.listUploads(root) : [];
      assert.deepEqual(uploads, []);
    });

    test('on a committed job each dry run answers as its real step: 0, 0 and exit 2', async () => {
      const { stagingPath } = await threeTasks(true);
      await libCommitTask(env(), stagingPath, { task: '1', files: {} });
      await recover(env(), { stagingPath });
      await commitJob(env(), { stagingPath });
      const [dryRecover, realRecover] = [
        await recoverDryRun(env(), { stagingPath }),
        await recover(env(), { stagingPath }),
      ];
      assert.deepEqual(
        [dryRecover.state, dryRecover.appAttempt, dryRecover.alreadyCommitted],
        [realRecover.state, realRecover.appAttempt, realRecover.alreadyCommitted],
      );
      const dryCommit = await commitJobDryRun(env(), { stagingPath });
      assert.equal(dryCommit.outcome, (await commitJob(env(), { stagingPath })).outcome);
      assert.equal(dryCommit.outcome, 'already-committed');
      const refused = (e: unknown) => e instanceof JobGoneError && e.exitCode === 2;
      await assert.rejects(abortDryRun(env(), { stagingPath }), refused);
      await assert.rejects(abort(env(), { stagingPath }), refused);
    });
  });
}
