// Crash safety (DESIGN §5.3): fail the store at every mutation of every step, heal with
// `recover` or by running the step again, and check the job ends exactly where an
// uninterrupted run ends. Before the commit point the target must be untouched.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { InjectedFault } from '../src/errors.js';
import { failAt } from '../src/store/instrumented.js';
import { JobLayout } from '../src/job/layout.js';
import { loadJob } from '../src/job/job.js';
import { recover } from '../src/steps/recover.js';
import { abort } from '../src/steps/abort.js';
import { JobGoneError } from '../src/steps/common.js';
import type { Store } from '../src/store/types.js';
import { storeFixtures, useSandbox, type StoreSandbox } from './helpers/stores.js';
import { data, readTree, writeTree, type Tree } from './helpers/tree.js';
import { libCommitJob, libCommitTask, libStage, libStageTask, testEnv, type Scenario } from './helpers/lib.js';
import type { TaskSpec } from './helpers/jobs.js';

const SCENARIOS: Scenario[] = [
  {
    name: 'dynamic overwrite of existing partitions (swap, in-place merge, new partition)',
    initial: { 'dt=1/old-a': 'A', 'dt=1/old-b': 'B', 'dt=2/old': 'C', 'dt=2/_temporary/x': 'other-writer', 'dt=9/keep': 'K' },
    job: { mode: 'overwrite', algorithm: 'v1', partitionBy: ['dt'], tasks: 4 },
    tasks: [
      { task: '0', partition: ['dt=1'], files: { p0: 'zero' } },
      { task: '1', partition: ['dt=1'], files: { p1: 'one' } },
      { task: '2', partition: ['dt=2'], files: { old: 'new-C', p2: 'two' } },
      { task: '3', partition: ['dt=3'], files: { p3: 'three' } },
    ],
  },
  {
    name: 'create from several tasks (merged in staging, one rename)',
    initial: null,
    job: { mode: 'create', algorithm: 'v1', partitionBy: ['dt'] },
    tasks: [
      { task: '0', partition: ['dt=1'], files: { a: 'a', b: 'b' } },
      { task: '1', partition: ['dt=1'], files: { c: 'c' } },
      { task: '2', partition: ['dt=2'], files: { d: 'd' } },
    ],
  },
  {
    name: 'append with v2 (tasks publish at commit-task)',
    initial: { 'dt=1/a': 'a' },
    job: { mode: 'append', algorithm: 'v2', partitionBy: ['dt'], tasks: 2 },
    tasks: [
      { task: '0', partition: ['dt=1'], files: { b: 'b' } },
      { task: '1', partition: ['dt=2'], files: { c: 'c', d: 'd' } },
    ],
  },
];

/** The step found no job: the crash came after the job was fully cleaned up. */
function finished(e: unknown): 'finished' {
  if (e instanceof JobGoneError) return 'finished';
  throw e;
}

type Action = { kind: 'stage' } | { kind: 'stage-task'; t: TaskSpec } | { kind: 'commit-task'; t: TaskSpec } | { kind: 'commit-job' };

function flow(sc: Scenario): Action[] {
  return [{ kind: 'stage' }, ...sc.tasks.map((t) => ({ kind: 'stage-task' as const, t })), ...sc.tasks.map((t) => ({ kind: 'commit-task' as const, t })), { kind: 'commit-job' }];
}

interface Run {
  targetPath: string;
  stagingPath: string;
}

async function act(store: Store, run: Run, a: Action, sc: Scenario, hook?: ReturnType<typeof failAt>): Promise<void> {
  const env = testEnv(store, hook);
  switch (a.kind) {
    case 'stage':
      await libStage(env, run.targetPath, { ...sc, job: { ...sc.job, stagingPath: run.stagingPath } });
      return;
    case 'stage-task':
      return libStageTask(env, run.stagingPath, a.t);
    case 'commit-task':
      return libCommitTask(env, run.stagingPath, a.t);
    case 'commit-job':
      return libCommitJob(env, run.stagingPath);
  }
}

/** After `recover`: run every task it did not keep, then commit the job. */
async function finishAfterRecover(store: Store, run: Run, sc: Scenario): Promise<void> {
  const r = await recover(testEnv(store), { stagingPath: run.stagingPath }).catch(finished);
  if (r === 'finished') return;
  if (r.state === 'committed') return;
  for (const t of sc.tasks) {
    if (r.committedTasks.includes(t.task)) continue;
    await libStageTask(testEnv(store), run.stagingPath, t);
    await libCommitTask(testEnv(store), run.stagingPath, t);
  }
  await libCommitJob(testEnv(store), run.stagingPath);
}

async function expectFinished(store: Store, run: Run, expected: Tree, label: string): Promise<void> {
  const tree = await readTree(store, run.targetPath);
  assert.deepEqual(data(tree), expected, `${label}: target content`);
  assert.ok(tree._SUCCESS, `${label}: _SUCCESS written`);
  assert.equal(await store.stat(run.stagingPath), null, `${label}: staging dir removed`);
  await expectNoUploads(store, run, label);
}

/** S3: no upload of the job is left pending (completed, or aborted by whichever step ended it). */
async function expectNoUploads(store: Store, run: Run, label: string): Promise<void> {
  if (store.listUploads) assert.deepEqual((await store.listUploads(run.targetPath)).map((u) => u.path), [], `${label}: no pending uploads`);
}

for (const fx of storeFixtures()) {
  describe(`crash sweeps on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'r');
    const fresh = async (sc: Scenario): Promise<Run> => {
      const root = dir();
      const run = { targetPath: posix.join(root, 'table'), stagingPath: posix.join(root, 'staging', 'job') };
      if (sc.initial) await writeTree(sb.store, run.targetPath, sc.initial);
      return run;
    };

    // Every mutation point of every step on every store. Locally each point is healed both ways;
    // on remote stores (a request costs 2-7 ms) the two heals alternate between points, and S3
    // skips the create scenario, whose copies are the overwrite scenario's copies.
    // Remote stores (a request costs 2-7 ms, a sweep re-runs every step before the faulted one)
    // sweep the task and job commits, where the stores differ, on the overwrite and v2 scenarios;
    // the local sweep covers every step of every scenario.
    const local = fx.name === 'local';
    const scenarios = local ? SCENARIOS : SCENARIOS.filter((_, i) => i !== 1);
    const swept = (a: Action) => local || a.kind === 'commit-task' || a.kind === 'commit-job';
    for (const sc of scenarios) {
      test(`every mutation of every step heals: ${sc.name}`, async (t) => {
        const actions = flow(sc);
        const base = await fresh(sc);
        for (const a of actions) await act(sb.store, base, a, sc);
        const expected = data(await readTree(sb.store, base.targetPath));
        const initial = sc.initial ?? null;
        const points: Record<string, number> = {};

        for (let i = 0; i < actions.length; i++) {
          const a = actions[i]!;
          const label = a.kind === 'stage-task' || a.kind === 'commit-task' ? `${a.kind} ${a.t.task}` : a.kind;
          if (!swept(a)) continue;
          for (let k = 1; ; k++) {
            const heals = local ? (['recover', 'rerun'] as const) : ([k % 2 ? 'recover' : 'rerun'] as const);
            for (const heal of heals) {
              const run = await fresh(sc);
              for (const before of actions.slice(0, i)) await act(sb.store, run, before, sc);
              let faulted = false;
              try {
                await act(sb.store, run, a, sc, failAt(k));
              } catch (e) {
                if (!(e instanceof InjectedFault)) throw e;
                faulted = true;
              }
              if (!faulted) {
                points[label] = k - 1;
                break;
              }
              const layout = new JobLayout(run.stagingPath);
              const job = await loadJob(sb.store, layout);
              const pastCommitPoint = (await sb.store.stat(layout.commitFile)) !== null || job === null || job.state !== 'staged';
              if (!pastCommitPoint && sc.job.algorithm === 'v1') {
                const now = data(await readTree(sb.store, run.targetPath));
                assert.deepEqual(now, initial ?? {}, `${label} k=${k}: target untouched before the commit point`);
              }
              const where = `${label}, fault at mutation ${k}, healed by ${heal}`;
              if (heal === 'recover' && a.kind !== 'stage') {
                await finishAfterRecover(sb.store, run, sc);
              } else {
                for (const rest of actions.slice(i)) if ((await act(sb.store, run, rest, sc).catch(finished)) === 'finished') break;
              }
              await expectFinished(sb.store, run, expected, where);
            }
            if (points[label] !== undefined) break;
          }
        }
        t.diagnostic(`crash points per step: ${JSON.stringify(points)}`);
        assert.ok(points['commit-job']! >= 3);
      });
    }

    test('abort at every mutation, then abort again: staging gone, target as before', async (t) => {
      const sc = SCENARIOS[0]!;
      let points = 0;
      for (let k = 1; ; k++) {
        const run = await fresh(sc);
        for (const a of flow(sc).slice(0, -1)) await act(sb.store, run, a, sc);
        try {
          await abort(testEnv(sb.store, failAt(k)), { stagingPath: run.stagingPath });
          points = k - 1;
          break;
        } catch (e) {
          if (!(e instanceof InjectedFault)) throw e;
        }
        assert.deepEqual(await readTree(sb.store, run.targetPath), sc.initial);
        await abort(testEnv(sb.store), { stagingPath: run.stagingPath });
        assert.deepEqual(await readTree(sb.store, run.targetPath), sc.initial);
        assert.equal(await sb.store.stat(run.stagingPath), null);
        await expectNoUploads(sb.store, run, `abort fault at ${k}`);
      }
      t.diagnostic(`abort crash points: ${points}`);
    });

    test('recover at every mutation (with an interrupted task commit), then recover again and finish', async (t) => {
      const sc = SCENARIOS[0]!;
      const expectedRun = await fresh(sc);
      for (const a of flow(sc)) await act(sb.store, expectedRun, a, sc);
      const expected = data(await readTree(sb.store, expectedRun.targetPath));
      let points = 0;
      for (let k = 1; ; k++) {
        const run = await fresh(sc);
        const actions = flow(sc);
        for (const a of actions.slice(0, 1 + sc.tasks.length + 2)) await act(sb.store, run, a, sc); // tasks 0, 1 committed
        await act(sb.store, run, { kind: 'commit-task', t: sc.tasks[2]! }, sc, failAt(2)).catch(() => {}); // claimed, not committed
        let done = false;
        try {
          await recover(testEnv(sb.store, failAt(k)), { stagingPath: run.stagingPath });
          done = true;
        } catch (e) {
          if (!(e instanceof InjectedFault)) throw e;
        }
        await finishAfterRecover(sb.store, run, sc);
        await expectFinished(sb.store, run, expected, `recover fault at ${k}`);
        if (done) {
          points = k - 1;
          break;
        }
      }
      t.diagnostic(`recover crash points: ${points}`);
    });
  });
}
