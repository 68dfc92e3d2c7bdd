// Real kills: SIGKILL the CLI before each store mutation of commit-task and commit-job (a sweep
// over every point, shared out between the stores of the run, not one lucky timing), then
// `recover` through the CLI right away (the dead holder's lease is taken over) and check the
// job ends as an uninterrupted run does. The killed step is a process; the heal runs main() in
// this process (the same commands, no start-up each).

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { JobLayout } from '../src/job/layout.js';
import { loadJob } from '../src/job/job.js';
import type { MutationHook } from '../src/store/instrumented.js';
import { cli } from '../testing/cli.js';
import { inProcess } from '../testing/main.js';
import {
  libCommitJob,
  libCommitTask,
  libStage,
  libStageTask,
  planFileOf,
  testEnv,
  type Scenario,
} from '../testing/lib.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree, writeTree } from '../testing/tree.js';

const SC: Scenario = {
  name: 'dynamic overwrite',
  initial: { 'dt=1/old': 'old-1', 'dt=2/old': 'old-2', 'dt=2/.keep': 'hidden', 'dt=5/keep': 'k' },
  job: { mode: 'overwrite', algorithm: 'v1', partitionBy: ['dt'], tasks: 3 },
  tasks: [
    { task: '0', partition: ['dt=1'], files: { a: 'a', b: 'b' } },
    { task: '1', partition: ['dt=2'], files: { old: 'new-2' } },
    { task: '2', partition: ['dt=3'], files: { c: 'c' } },
  ],
};

/** How many mutations a clean in-process run of a step makes: the CLI running it makes as many. */
async function mutationsOf(run: (hook: MutationHook) => Promise<unknown>): Promise<number> {
  let n = 0;
  await run(() => void n++);
  return n;
}

const stores = storeFixtures({ transport: true });

for (const fx of stores) {
  describe(`SIGKILL sweeps on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'k');
    /**
     * The stores of this run share the kill points out (each every n-th point from its own
     * offset), so together they kill every point once; the crash sweeps (crash.test.ts) fault
     * every point in-process on every store.
     */
    const sampled = (k: number) => (k - 1) % stores.length === stores.indexOf(fx);
    const shareOf = (n: number) => Array.from({ length: n }, (_, k) => k + 1).filter(sampled).length;

    async function setup(commitTasks: number) {
      const root = dir();
      const targetPath = posix.join(root, 'table');
      await writeTree(sb.store, targetPath, SC.initial!);
      const env = testEnv(sb.store);
      const stagingPath = await libStage(env, targetPath, SC);
      for (const t of SC.tasks) await libStageTask(env, stagingPath, t);
      for (const t of SC.tasks.slice(0, commitTasks)) await libCommitTask(env, stagingPath, t);
      return { targetPath, stagingPath, handle: sb.uri(stagingPath) };
    }

    async function expected(): Promise<Record<string, string>> {
      const run = await setup(3);
      await libCommitJob(testEnv(sb.store), run.stagingPath);
      return data(await readTree(sb.store, run.targetPath));
    }

    async function healAndFinish(
      run: { targetPath: string; stagingPath: string; handle: string },
      want: Record<string, string>,
      where: string,
    ) {
      const r = await inProcess(['recover', '--job', run.handle], { env: sb.env });
      if (r.code === 2 && /finished/.test(r.stderr)) {
        // killed after the clean-up removed the job: nothing left to do
      } else {
        assert.equal(r.code, 0, `${where}: recover: ${r.stderr}`);
        const toRun = r.stdout.split('\n').filter(Boolean);
        for (const task of toRun) {
          const t = SC.tasks.find((x) => x.task === task)!;
          await libStageTask(testEnv(sb.store), run.stagingPath, t);
          await libCommitTask(testEnv(sb.store), run.stagingPath, t);
        }
        if (!/rolled forward/.test(r.stderr)) {
          const c = await inProcess(['commit-job', '--job', run.handle], { env: sb.env });
          assert.equal(c.code, 0, `${where}: commit-job after recover: ${c.stderr}`);
        }
      }
      assert.deepEqual(data(await readTree(sb.store, run.targetPath)), want, `${where}: target`);
      assert.equal(await sb.store.stat(run.stagingPath), null, `${where}: staging removed`);
    }

    test('commit-job killed at every mutation point heals with recover', async (t) => {
      const want = await expected();
      const points = await mutationsOf((hook) =>
        setup(3).then((run) => libCommitJob(testEnv(sb.store, hook), run.stagingPath)),
      );
      assert.ok(points >= 10, `commit-job makes ${points} mutations`);
      let killed = 0;
      for (let k = 1; k <= points + 1; k++) {
        if (k <= points && !sampled(k)) continue;
        const run = await setup(3);
        const r = await cli(['commit-job', '--job', run.handle], {
          env: { ...sb.env, STAGECOMMIT_TEST_KILL_AT: String(k) },
        });
        if (k > points) {
          assert.equal(r.code, 0, `no kill at ${k}: ${r.stderr}`);
          assert.deepEqual(data(await readTree(sb.store, run.targetPath)), want, 'no kill: target');
          assert.equal(await sb.store.stat(run.stagingPath), null, 'no kill: staging removed');
          break;
        }
        assert.equal(r.signal, 'SIGKILL', `k=${k}: ${r.stderr}`);
        killed++;
        const layout = new JobLayout(run.stagingPath);
        const job = await loadJob(sb.store, layout);
        if (job?.state === 'staged' && !(await planFileOf(sb.store, layout))) {
          assert.deepEqual(
            await readTree(sb.store, run.targetPath),
            SC.initial,
            `k=${k}: old table untouched before the commit point`,
          );
        }
        await healAndFinish(run, want, `commit-job killed at ${k}`);
      }
      t.diagnostic(`commit-job: ${points} kill points, ${killed} of them killed and healed on ${fx.name}`);
      assert.equal(killed, shareOf(points), "every point of this store's share was killed");
    });

    test('commit-task killed at every mutation point heals with recover', async (t) => {
      const want = await expected();
      const points = await mutationsOf((hook) =>
        setup(2).then((run) => libCommitTask(testEnv(sb.store, hook), run.stagingPath, SC.tasks[2]!)),
      );
      assert.ok(points >= 2, 'at least the claim and its record (stores with rename add the promotion)');
      let killed = 0;
      for (let k = 1; k <= points + 1; k++) {
        if (k <= points && !sampled(k)) continue;
        const run = await setup(2);
        const r = await cli(['commit-task', '--job', run.handle, '--task', '2'], {
          env: { ...sb.env, STAGECOMMIT_TEST_KILL_AT: String(k) },
        });
        if (k > points) {
          assert.equal(r.code, 0, `no kill at ${k}: ${r.stderr}`);
          await libCommitJob(testEnv(sb.store), run.stagingPath);
          assert.deepEqual(data(await readTree(sb.store, run.targetPath)), want, 'no kill: target');
          break;
        }
        assert.equal(r.signal, 'SIGKILL', `k=${k}: ${r.stderr}`);
        killed++;
        assert.deepEqual(await readTree(sb.store, run.targetPath), SC.initial);
        await healAndFinish(run, want, `commit-task killed at ${k}`);
      }
      t.diagnostic(`commit-task: ${points} kill points, ${killed} of them killed and healed on ${fx.name}`);
      assert.equal(killed, shareOf(points), "every point of this store's share was killed");
    });

    // Never "Path does not exist" on the rerun.
    test('an overwrite killed before its commit point leaves the old table; the rerun succeeds', async () => {
      const run = await setup(3);
      const r = await cli(['commit-job', '--job', run.handle], { env: { ...sb.env, STAGECOMMIT_TEST_KILL_AT: '1' } });
      assert.equal(r.signal, 'SIGKILL');
      assert.deepEqual(await readTree(sb.store, run.targetPath), SC.initial);
      const rec = await cli(['recover', '--job', run.handle], { env: sb.env });
      assert.equal(rec.code, 0, rec.stderr);
      assert.equal(rec.stdout.trim(), '', 'every task was kept');
      const c = await cli(['commit-job', '--job', run.handle], { env: sb.env });
      assert.equal(c.code, 0, c.stderr);
      assert.doesNotMatch(c.stderr, /does not exist/);
      assert.deepEqual(data(await readTree(sb.store, run.targetPath)), {
        'dt=1/a': 'a',
        'dt=1/b': 'b',
        'dt=2/.keep': 'hidden',
        'dt=2/old': 'new-2',
        'dt=3/c': 'c',
        'dt=5/keep': 'k',
      });
    });
  });
}
