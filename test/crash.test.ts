// Crash safety (protocol.md §5.3): fail the store at every mutation of every step, heal with
// `recover` or by running the step again, and check the job ends exactly where an
// uninterrupted run ends. Before the commit point the target must be untouched.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { CorruptManifestError, InjectedFault, StoreError } from '../src/errors.js';
import { crashAt, failAt, type MutationHook } from '../src/store/instrumented.js';
import { JobLayout } from '../src/job/layout.js';
import { failuresAreAnswers } from '../src/store/operations.js';
import { TableLog } from '../src/job/table-log.js';
import { loadJob } from '../src/job/job.js';
import { recover } from '../src/steps/recover.js';
import { cleanOrphans } from '../src/steps/clean-orphans.js';
import { abort } from '../src/steps/abort.js';
import { JobGoneError } from '../src/job/open.js';
import type { Store } from '../src/store/types.js';
import { walkFiles } from '../src/store/walk.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree, writeTree, type Tree } from '../testing/tree.js';
import { commitPointCreated, killed } from '../testing/crash-points.js';
import { isTempName } from '../src/store/temp-names.js';
import {
  driverDied,
  planFileOf,
  jobScenario,
  libCommitJob,
  libCommitTask,
  libStage,
  libStageTask,
  readyJob,
  testEnv,
  type Scenario,
} from '../testing/lib.js';
import { commitJob } from '../src/steps/commit-job.js';
import { listJobs } from '../src/steps/jobs.js';
import type { TaskSpec } from '../testing/jobs.js';

const SCENARIOS: Scenario[] = [
  {
    name: 'dynamic overwrite: swap, merge, new partition',
    initial: {
      'dt=1/old-a': 'A',
      'dt=1/old-b': 'B',
      'dt=2/old': 'C',
      'dt=2/_temporary/x': 'other-writer',
      'dt=9/keep': 'K',
    },
    job: { mode: 'overwrite', algorithm: 'v1', partitionBy: ['dt'], tasks: 4 },
    tasks: [
      { task: '0', partition: ['dt=1'], files: { p0: 'zero' } },
      { task: '1', partition: ['dt=1'], files: { p1: 'one' } },
      { task: '2', partition: ['dt=2'], files: { old: 'new-C', p2: 'two' } },
      { task: '3', partition: ['dt=3'], files: { p3: 'three' } },
    ],
  },
  {
    name: 'create by tasks merged in staging, one rename',
    initial: null,
    job: { mode: 'create', algorithm: 'v1', partitionBy: ['dt'] },
    tasks: [
      { task: '0', partition: ['dt=1'], files: { a: 'a', b: 'b' } },
      { task: '1', partition: ['dt=1'], files: { c: 'c' } },
      { task: '2', partition: ['dt=2'], files: { d: 'd' } },
    ],
  },
  {
    // Object stores copy the writers' files at commit-job.
    name: 'append by outside writers (--print-path)',
    initial: { 'dt=1/a': 'a' },
    job: { mode: 'append', algorithm: 'v1', partitionBy: ['dt'], tasks: 2 },
    tasks: [
      { task: '0', partition: ['dt=1'], files: { big: 'bbbbbbbb', s: 's' }, writer: true },
      { task: '1', partition: ['dt=2'], files: { c: 'cccccccc', d: 'dddddddd' }, writer: true },
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

type Action =
  | { kind: 'stage' }
  | { kind: 'stage-task'; t: TaskSpec }
  | { kind: 'commit-task'; t: TaskSpec }
  | { kind: 'commit-job' };

function flow(sc: Scenario): Action[] {
  return [
    { kind: 'stage' },
    ...sc.tasks.map((t) => ({ kind: 'stage-task' as const, t })),
    ...sc.tasks.map((t) => ({ kind: 'commit-task' as const, t })),
    { kind: 'commit-job' },
  ];
}

interface Run {
  targetPath: string;
  stagingPath: string;
}

function labelOf(a: Action): string {
  return a.kind === 'stage-task' || a.kind === 'commit-task' ? `${a.kind} ${a.t.task}` : a.kind;
}

async function act(store: Store, run: Run, a: Action, sc: Scenario, hook?: MutationHook): Promise<void> {
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
    if (r.committedTasks?.includes(t.task)) continue;
    await libStageTask(testEnv(store), run.stagingPath, t);
    await libCommitTask(testEnv(store), run.stagingPath, t);
  }
  await libCommitJob(testEnv(store), run.stagingPath);
}

/** A hook that only counts: how many mutation points a clean run of a step has. */
function counter(): { hook: MutationHook; count(): number } {
  let n = 0;
  return { hook: () => void n++, count: () => n };
}

/**
 * Runs a step with a fault at mutation k. `fired`: the fault was injected; `threw`: it stopped
 * the step (a fault at a best-effort mutation, such as a lease release, is swallowed).
 */
async function faultAt(
  k: number,
  run: (hook: MutationHook) => Promise<unknown>,
): Promise<{ fired: boolean; threw: boolean }> {
  const hook = failAt(k);
  try {
    await run(hook);
    return { fired: hook.tripped(), threw: false };
  } catch (e) {
    if (!(e instanceof InjectedFault)) throw e;
    return { fired: true, threw: true };
  }
}

/**
 * Which points a store faults. The in-memory stores (a filesystem and an object store) take
 * every point; the real stores of this run share the points out, each every n-th from its own
 * offset, so that together they cover them all and each still meets its own crash semantics.
 */
const realStores = storeFixtures().map((f) => f.name);
function sampler(store: string): (k: number) => boolean {
  const i = realStores.indexOf(store);
  return i < 0 ? () => true : (k) => (k - 1) % realStores.length === i;
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
  if (store.listUploads)
    assert.deepEqual(
      (await store.listUploads(run.targetPath)).map((u) => u.path),
      [],
      `${label}: no pending uploads`,
    );
}

for (const fx of storeFixtures({ inProcess: true })) {
  describe(`crash sweeps on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'r');
    const fresh = async (sc: Scenario): Promise<Run> => {
      const root = dir();
      const run = { targetPath: posix.join(root, 'table'), stagingPath: posix.join(root, 'staging', 'job') };
      if (sc.initial) await writeTree(sb.store, run.targetPath, sc.initial);
      return run;
    };
    const sampled = sampler(fx.name);
    /** How many of the points 1..n this store faults. */
    const shareOf = (n: number) => Array.from({ length: n }, (_, k) => k + 1).filter(sampled).length;
    const memory = Boolean(fx.inProcess);
    // In memory every point of every step is healed both ways. The real stores take their share
    // of the points (sampler) with the two heals alternating; remote ones (a request costs
    // 2-7 ms, a sweep re-runs every step before the faulted one) sweep only the task and job
    // commits, where the stores differ, on the overwrite and v2 scenarios.
    const remote = !memory && fx.name !== 'local';
    const scenarios = remote ? SCENARIOS.filter((_, i) => i !== 1) : SCENARIOS;
    const swept = (a: Action) => !remote || a.kind === 'commit-task' || a.kind === 'commit-job';
    const heals = (k: number) => (memory ? (['recover', 'rerun'] as const) : ([k % 2 ? 'recover' : 'rerun'] as const));

    /** One run with no fault: the mutations each action makes, by label, and the target it leaves. */
    const cleanRun = async (sc: Scenario, actions: Action[]) => {
      const base = await fresh(sc);
      const points: Record<string, number> = {};
      for (const a of actions) {
        const c = counter();
        await act(sb.store, base, a, sc, c.hook);
        points[labelOf(a)] = c.count();
      }
      return { points, expected: data(await readTree(sb.store, base.targetPath)) };
    };

    for (const sc of scenarios) {
      test(`a crash at any mutation heals: ${sc.name}`, async (t) => {
        const actions = flow(sc);
        const { points, expected } = await cleanRun(sc, actions);
        const initial = sc.initial ?? null;
        let visited = 0;

        for (let i = 0; i < actions.length; i++) {
          const a = actions[i]!;
          const label = labelOf(a);
          if (!swept(a)) continue;
          const n = points[label]!;
          assert.ok(n >= 1, `${label} makes no mutation`);
          // k = n + 1 is the run with no fault: the step runs through and the job finishes.
          for (let k = 1; k <= n + 1; k++) {
            if (k <= n && !sampled(k)) continue;
            for (const heal of heals(k)) {
              const run = await fresh(sc);
              for (const before of actions.slice(0, i)) await act(sb.store, run, before, sc);
              const { fired, threw } = await faultAt(k, (hook) => act(sb.store, run, a, sc, hook));
              assert.equal(
                fired,
                k <= n,
                `${label}: a clean run makes ${n} mutations, yet a fault at ${k} ${fired ? 'came' : 'never came'}`,
              );
              const where = `${label}, fault at mutation ${k} of ${n}, healed by ${heal}`;
              if (fired) visited++;
              if (!threw) {
                // The step ran through (a swallowed fault, or none): the job goes on from there.
                for (const rest of actions.slice(i + 1)) await act(sb.store, run, rest, sc);
                await expectFinished(sb.store, run, expected, where);
                if (fired) continue;
                break;
              }
              const layout = new JobLayout(run.stagingPath);
              const job = await loadJob(sb.store, layout);
              const pastCommitPoint =
                (await planFileOf(sb.store, layout)) !== null || job === null || job.state !== 'staged';
              if (!pastCommitPoint && sc.job.algorithm === 'v1') {
                const now = data(await readTree(sb.store, run.targetPath));
                assert.deepEqual(now, initial ?? {}, `${where}: target untouched before the commit point`);
              }
              if (heal === 'recover' && a.kind !== 'stage') {
                await finishAfterRecover(sb.store, run, sc);
              } else {
                for (const rest of actions.slice(i))
                  if ((await act(sb.store, run, rest, sc).catch(finished)) === 'finished') break;
              }
              await expectFinished(sb.store, run, expected, where);
            }
          }
        }
        t.diagnostic(`crash points per step: ${JSON.stringify(points)}; faulted here: ${visited}`);
        assert.ok(points['commit-job']! >= 3);
        const share = actions.filter(swept).reduce((sum, a) => sum + shareOf(points[labelOf(a)]!), 0);
        assert.equal(visited, share * (memory ? 2 : 1), "every point of this store's share was faulted");
      });
    }

    /** Job of the first scenario, staged with every task committed, commit-job not run. */
    const staged = async (sc: Scenario): Promise<Run> => {
      const run = await fresh(sc);
      for (const a of flow(sc).slice(0, -1)) await act(sb.store, run, a, sc);
      return run;
    };

    // Object stores list such files early.
    test('what appears in the staging dir as commit-job publishes goes with it, before _job.yaml', async () => {
      const sc = SCENARIOS[1]!;
      const clean = await staged(sc);
      await act(sb.store, clean, { kind: 'commit-job' }, sc);
      const expected = data(await readTree(sb.store, clean.targetPath));
      const run = await staged(sc);
      const late = [
        posix.join(run.stagingPath, 'late-top'),
        posix.join(run.stagingPath, '_temporary', '0', 'late-attempt', 'dt=1', 'late'),
      ];
      let added = false;
      let lastDeletes = 0;
      const jobFile = posix.join(run.stagingPath, '_job.yaml');
      await act(sb.store, run, { kind: 'commit-job' }, sc, async (_n, op, path) => {
        // `_job.yaml` goes last: when it (or the whole dir) is deleted, nothing else is left to
        // outlive it, should the process die right then (protocol.md §5.12: no staging dir without a job).
        // Where one delete removes a tree at once (HDFS), nothing can outlive it.
        if (op === 'delete' && (path === jobFile || path === run.stagingPath)) {
          lastDeletes++;
          if (sb.store.caps.atomicTreeDelete) return;
          const left = (await walkFiles(sb.store, run.stagingPath))
            .map((e) => e.name)
            .filter((n) => n !== '_job.yaml' && !n.startsWith('_lease.'));
          assert.deepEqual(left, [], `deleting ${path} while other entries remain`);
        }
        // Written as _SUCCESS is: after the publish, long after commit-job began listing its staging dir.
        if (added || posix.basename(path) !== '_SUCCESS') return;
        added = true;
        for (const p of late) await sb.store.writeFile(p, 'late');
      });
      assert.ok(added && lastDeletes > 0, 'the hook ran');
      assert.deepEqual(
        data(await readTree(sb.store, run.targetPath)),
        expected,
        'target: the job exactly, nothing late',
      );
      assert.equal(await sb.store.stat(run.stagingPath), null, 'staging dir removed, late files too');
    });

    test('commit-job dying after deleting copied sources heals; a hand-deleted source is never taken as copied', async () => {
      const sc = SCENARIOS[2]!; // outside writers: object stores copy their files at commit-job
      const clean = await staged(sc);
      await act(sb.store, clean, { kind: 'commit-job' }, sc);
      const expected = data(await readTree(sb.store, clean.targetPath));
      // Stores that copy large files out of the staging dir delete them as they go (S3 here: the
      // test settings make every file of 4 bytes up large).
      const early = sb.store.pendingUploadMinBytes !== undefined;
      for (const heal of ['recover', 'rerun'] as const) {
        const run = await staged(sc);
        const hook = crashAt({ op: 'delete', path: (p) => p.includes('/_temporary/') }, { after: true });
        await act(sb.store, run, { kind: 'commit-job' }, sc, hook).catch((e: unknown) => {
          if (!(e instanceof InjectedFault)) throw e;
        });
        assert.equal(hook.tripped(), early, `${heal}: died right after deleting copied sources`);
        if (heal === 'recover') await finishAfterRecover(sb.store, run, sc);
        else await act(sb.store, run, { kind: 'commit-job' }, sc).catch(finished);
        await expectFinished(sb.store, run, expected, `died after deleting copied sources, healed by ${heal}`);
      }
      if (!early) return;
      // Past the commit point, a source someone else removed is lost, not copied: the replay says so.
      const run = await staged(sc);
      await assert.rejects(act(sb.store, run, { kind: 'commit-job' }, sc, crashAt({ op: 'copy' })), InjectedFault);
      const big = (await walkFiles(sb.store, run.stagingPath)).find((e) => e.name.endsWith('/big'))!;
      await sb.store.delete(posix.join(run.stagingPath, big.name), false);
      await assert.rejects(
        act(sb.store, run, { kind: 'commit-job' }, sc),
        (e: unknown) => e instanceof StoreError && e.reason === 'not-found',
      );
      assert.equal(
        (await readTree(sb.store, run.targetPath))['dt=1/big'],
        undefined,
        'the removed file is not reported published',
      );
      // An overwrite whose target held a file of that name and size before: it is not taken for the copy.
      const over: Scenario = {
        ...sc,
        name: 'overwrite of same-size files',
        initial: { 'dt=1/big': 'OLD-BYTE' },
        job: { ...sc.job, mode: 'overwrite' },
      };
      const run2 = await staged(over);
      await assert.rejects(act(sb.store, run2, { kind: 'commit-job' }, over, crashAt({ op: 'copy' })), InjectedFault);
      const big2 = (await walkFiles(sb.store, run2.stagingPath)).find((e) => e.name.endsWith('/big'))!;
      await sb.store.delete(posix.join(run2.stagingPath, big2.name), false);
      await assert.rejects(
        act(sb.store, run2, { kind: 'commit-job' }, over),
        (e: unknown) => e instanceof StoreError && e.reason === 'not-found',
      );
      await assert.rejects(recover(testEnv(sb.store), { stagingPath: run2.stagingPath }));
      assert.equal(
        (await readTree(sb.store, run2.targetPath))['dt=1/big'],
        'OLD-BYTE',
        'the old file stays, and no step says the job is done',
      );
    });

    test('abort at every mutation, then abort again: staging gone, target as before', async (t) => {
      const sc = SCENARIOS[0]!;
      const c = counter();
      await abort(testEnv(sb.store, c.hook), { stagingPath: (await staged(sc)).stagingPath });
      const n = c.count();
      assert.ok(n >= 3, `a clean abort makes ${n} mutations`);
      let visited = 0;
      for (let k = 1; k <= n + 1; k++) {
        if (k <= n && !sampled(k)) continue;
        const run = await staged(sc);
        const { fired, threw } = await faultAt(k, (hook) =>
          abort(testEnv(sb.store, hook), { stagingPath: run.stagingPath }),
        );
        assert.equal(
          fired,
          k <= n,
          `a clean abort makes ${n} mutations, yet a fault at ${k} ${fired ? 'came' : 'never came'}`,
        );
        assert.deepEqual(await readTree(sb.store, run.targetPath), sc.initial, `fault at ${k}: target as before`);
        if (fired) visited++;
        if (threw) await abort(testEnv(sb.store), { stagingPath: run.stagingPath }).catch(finished);
        assert.deepEqual(
          await readTree(sb.store, run.targetPath),
          sc.initial,
          `fault at ${k}, aborted again: target as before`,
        );
        assert.equal(await sb.store.stat(run.stagingPath), null, `fault at ${k}: staging dir removed`);
        await expectNoUploads(sb.store, run, `abort fault at ${k}`);
      }
      t.diagnostic(`abort crash points: ${n}, faulted here: ${visited}`);
      assert.equal(visited, shareOf(n), "every point of this store's share was faulted");
    });

    test('recover at every mutation (with an interrupted task commit), then recover again and finish', async (t) => {
      const sc = SCENARIOS[0]!;
      const expectedRun = await fresh(sc);
      for (const a of flow(sc)) await act(sb.store, expectedRun, a, sc);
      const expected = data(await readTree(sb.store, expectedRun.targetPath));
      /** Tasks 0 and 1 committed; task 2 claimed and killed before its claim says committed. */
      const interrupted = async (): Promise<Run> => {
        const run = await fresh(sc);
        for (const a of flow(sc).slice(0, 1 + sc.tasks.length + 2)) await act(sb.store, run, a, sc);
        await assert.rejects(
          act(sb.store, run, { kind: 'commit-task', t: sc.tasks[2]! }, sc, killed.claimed('2')),
          InjectedFault,
        );
        return run;
      };
      const c = counter();
      const clean = await interrupted();
      await recover(testEnv(sb.store, c.hook), { stagingPath: clean.stagingPath });
      const n = c.count();
      assert.ok(n >= 3, `a clean recover makes ${n} mutations`);
      let visited = 0;
      for (let k = 1; k <= n + 1; k++) {
        if (k <= n && !sampled(k)) continue;
        const run = await interrupted();
        const { fired } = await faultAt(k, (hook) =>
          recover(testEnv(sb.store, hook), { stagingPath: run.stagingPath }),
        );
        assert.equal(
          fired,
          k <= n,
          `a clean recover makes ${n} mutations, yet a fault at ${k} ${fired ? 'came' : 'never came'}`,
        );
        if (fired) visited++;
        await finishAfterRecover(sb.store, run, sc);
        await expectFinished(sb.store, run, expected, `recover fault at ${k} of ${n}`);
      }
      t.diagnostic(`recover crash points: ${n}, faulted here: ${visited}`);
      assert.equal(visited, shareOf(n), "every point of this store's share was faulted");
    });
  });
}

for (const fx of storeFixtures({ inProcess: true })) {
  describe(`a store error on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'e');
    /** Fails the first mutation under `under` with an I/O error, once; the store works again after it. */
    const failsOnce = (under: string): MutationHook => {
      let done = false;
      return (_n, _op, path) => {
        if (done || !path.startsWith(`${under}/`)) return;
        done = true;
        throw new StoreError('io', 'rename', [path], 'Input/output error');
      };
    };
    const tasks: TaskSpec[] = [
      { task: '0', partition: ['dt=1'], files: { a: 'a' } },
      { task: '1', partition: ['dt=2'], files: { b: 'b' } },
    ];

    /** An append of `tasks` into `name` whose driver died once its first file was published. */
    const killedAfterFirstPublish = async (name: string, jobId: string) => {
      const target = posix.join(dir(), name);
      await writeTree(sb.store, target, { 'dt=9/keep': 'k' });
      const staging = await readyJob(sb.store, target, jobScenario(jobId, 'append'), tasks);
      // The first move into the target is the one that lands (a rename, a copy or a completed upload), then the driver
      // dies.
      const publishes = crashAt(
        { op: ['rename', 'copy', 'complete'], path: (p) => p.startsWith(staging) && !isTempName(posix.basename(p)) },
        { after: true },
      );
      await assert.rejects(commitJob(testEnv(sb.store, publishes), { stagingPath: staging }), InjectedFault);
      await driverDied(sb.store, staging);
      const published = data(await readTree(sb.store, target));
      assert.ok(Object.keys(published).length > 1, `something was published: ${JSON.stringify(published)}`);
      return { target, staging, published };
    };

    test('a driver killed mid-publish, its plan then lost: recover exits 1 naming it, plans nothing', async () => {
      const { target, staging, published } = await killedAfterFirstPublish('p', 'L');
      await sb.store.delete((await planFileOf(sb.store, new JobLayout(staging)))!, false);
      await assert.rejects(
        recover(testEnv(sb.store), { stagingPath: staging }),
        (e: unknown) =>
          e instanceof CorruptManifestError && /its plan \S+\/_plan\/0-0-[0-9a-f]+\.yaml is missing/.test(e.message),
      );
      assert.deepEqual(data(await readTree(sb.store, target)), published, 'nothing planned or moved again');
    });

    // recover names the progress record and publishes nothing more.
    test('a driver killed mid-publish whose entry another job marked finished: recover exits 1, adds nothing', async () => {
      const { target, staging, published } = await killedAfterFirstPublish('f', 'F');
      // What a later job does to an entry whose job it finds gone (its _job.yaml lost for a while).
      await new TableLog(sb.store, target).markDone({ number: 0, jobId: 'F' }, 'committed', Date.now());
      await assert.rejects(
        recover(testEnv(sb.store), { stagingPath: staging }),
        (e: unknown) =>
          e instanceof CorruptManifestError &&
          /_commit\.progress: counts 0 of the plan's \d+ phases done, and the table log marks job F's entry 0 finished, so the plan is not replayed/.test(
            e.message,
          ),
      );
      assert.deepEqual(
        data(await readTree(sb.store, target)),
        published,
        'nothing published after the entry was marked',
      );
      // A damaged record is no way round it: deleting it (its advice elsewhere) leads to the same answer.
      const progress = new JobLayout(staging).progressFile;
      await sb.store.writeFile(progress, 'garbage\n');
      await assert.rejects(
        recover(testEnv(sb.store), { stagingPath: staging }),
        (e: unknown) =>
          e instanceof CorruptManifestError &&
          /_commit\.progress: cannot be read, and the table log marks .* so the plan is not replayed/.test(e.message),
      );
      assert.deepEqual(data(await readTree(sb.store, target)), published);
    });

    // A later job commits meanwhile; recover finishes the first without publishing or writing _SUCCESS again.
    test("a driver killed with its entry marked done but 'committed' unwritten: recover finishes it", async () => {
      const target = posix.join(dir(), 'd');
      const staging = await readyJob(sb.store, target, jobScenario('D', 'append'), tasks);
      const layout = new JobLayout(staging);
      let jobWrites = 0;
      // 'committing', then 'committed': the second fails, the done marker beside it lands.
      const failCommitted = (n: number, op: string, p: string) => {
        if (op === 'writeFile' && p === layout.jobFile && ++jobWrites === 2) throw new InjectedFault(n, 'writeFile', p);
      };
      await assert.rejects(commitJob(testEnv(sb.store, failCommitted), { stagingPath: staging }), InjectedFault);
      assert.equal(jobWrites, 2);
      assert.equal((await loadJob(sb.store, layout))?.state, 'committing');
      await driverDied(sb.store, staging);
      const later = await readyJob(sb.store, target, jobScenario('E', 'append'), [
        { task: '0', partition: ['dt=3'], files: { e: 'e' } },
      ]);
      await commitJob(testEnv(sb.store), { stagingPath: later });
      const success = posix.join(target, '_SUCCESS');
      const before = data(await readTree(sb.store, target));
      const marker = (await sb.store.readFile(success))!.toString();
      assert.equal(JSON.parse(marker).jobId, 'E');
      assert.deepEqual(Object.keys(before).sort(), ['dt=1/a', 'dt=2/b', 'dt=3/e']);
      const r = await recover(testEnv(sb.store), { stagingPath: staging });
      assert.equal(r.state, 'committed');
      assert.deepEqual(data(await readTree(sb.store, target)), before, 'nothing published again');
      assert.equal((await sb.store.readFile(success))!.toString(), marker, "the later job's _SUCCESS stays");
      assert.equal(await sb.store.stat(staging), null, 'the staging dir is gone');
    });

    // Keeps protocol.md §5.16: clean-orphans never deletes a job past its commit point: --delete touches
    // nothing under it.
    test('a job past its commit point that lost _job.yaml (its plan left): every step exits 1 naming it', async () => {
      const root = dir();
      const target = posix.join(root, 'j');
      const staging = await readyJob(sb.store, target, jobScenario('M', 'append'), tasks);
      await assert.rejects(
        commitJob(testEnv(sb.store, killed.atCommitPoint()), { stagingPath: staging }),
        InjectedFault,
      );
      await driverDied(sb.store, staging);
      await sb.store.delete(new JobLayout(staging).jobFile, false);
      const before = await readTree(sb.store, root);
      const lost = (e: unknown) =>
        e instanceof CorruptManifestError &&
        /_job\.yaml: is missing, but the commit plan beside it shows the job is past its commit point/.test(e.message);
      await assert.rejects(recover(testEnv(sb.store), { stagingPath: staging }), lost);
      await assert.rejects(abort(testEnv(sb.store), { stagingPath: staging }), lost);
      await assert.rejects(commitJob(testEnv(sb.store), { stagingPath: staging }), lost);
      const swept = await cleanOrphans(testEnv(sb.store), { roots: [root], olderThanMs: 0, delete: true });
      assert.ok(
        swept.problems.some((p) => /_plan\/ without _job\.yaml/.test(p.message)),
        JSON.stringify(swept.problems),
      );
      assert.deepEqual(await readTree(sb.store, root), before, 'nothing changed');
    });

    // The table log holds its entry. Keeps protocol.md §5.16: clean-orphans never deletes a job past its
    // commit point: --delete touches nothing under it.
    test('a job past its commit point that lost _job.yaml and its plan: every step exits 1 naming it', async () => {
      const root = dir();
      const target = posix.join(root, 'j');
      // The default staging layout: the handle leads to the table log.
      const staging = await readyJob(sb.store, target, jobScenario('N', 'append'), tasks);
      await assert.rejects(
        commitJob(testEnv(sb.store, killed.atCommitPoint()), { stagingPath: staging }),
        InjectedFault,
      );
      await driverDied(sb.store, staging);
      await sb.store.delete(new JobLayout(staging).jobFile, false);
      await sb.store.delete(new JobLayout(staging).planDir, true);
      const before = await readTree(sb.store, root);
      const lost = (e: unknown) =>
        e instanceof CorruptManifestError &&
        /_job\.yaml: is missing, but the table log holds job N's unfinished entry 0 for this staging dir: the job may be past its commit point/.test(
          e.message,
        );
      // `jobs` of the table lists it, unreadable, saying why: a job past its commit point is never left out.
      const rows = (await listJobs(testEnv(sb.store), { paths: [target] })).jobs;
      assert.deepEqual(
        rows.map((r) => [r.jobId, r.state]),
        [['N', 'unreadable']],
      );
      assert.match(rows[0]!.problem!, /_job\.yaml: is missing, but the table log holds job N's unfinished entry 0/);
      await assert.rejects(recover(testEnv(sb.store), { stagingPath: staging }), lost);
      await assert.rejects(abort(testEnv(sb.store), { stagingPath: staging }), lost);
      await assert.rejects(commitJob(testEnv(sb.store), { stagingPath: staging }), lost);
      const swept = await cleanOrphans(testEnv(sb.store), { roots: [root], olderThanMs: 0, delete: true });
      assert.ok(
        swept.problems.some((p) =>
          /_job\.yaml is missing, but the table log holds job N's unfinished entry 0 .*nothing under it was touched/.test(
            p.message,
          ),
        ),
        JSON.stringify(swept.problems),
      );
      assert.deepEqual(await readTree(sb.store, root), before, 'nothing changed');
    });

    for (const point of ['atCommitPoint', 'applying'] as const) {
      // Keeps protocol.md §5.16: clean-orphans never deletes a job past its commit point, even in a
      // staging dir of the user's own that holds a _temporary: every step exits 1 naming _job.yaml and the
      // job's files left, and clean-orphans --delete touches nothing under it.
      test(`a --staging-dir with _job.yaml and plan gone, commit-job killed ${point === 'applying' ? 'as it publishes' : 'at its commit point'}: steps exit 1`, async () => {
        const root = dir();
        const target = posix.join(root, 'j');
        await writeTree(sb.store, target, { 'dt=1/old': 'old' });
        const sc = jobScenario('O', 'overwrite');
        const staging = await readyJob(
          sb.store,
          target,
          { ...sc, job: { ...sc.job, stagingPath: posix.join(root, 'mystage') } },
          tasks,
        );
        assert.equal(staging, posix.join(root, 'mystage'));
        await assert.rejects(commitJob(testEnv(sb.store, killed[point]()), { stagingPath: staging }), InjectedFault);
        await driverDied(sb.store, staging);
        const layout = new JobLayout(staging);
        await sb.store.delete(layout.jobFile, false);
        await sb.store.delete(layout.planDir, true);
        const before = await readTree(sb.store, root);
        const lost = (e: unknown) =>
          e instanceof CorruptManifestError &&
          /_job\.yaml: is missing, but the staging dir still holds a job's files \(.*_temporary\/0\/_claims.*\): the job may be past its commit point; nothing was changed/.test(
            e.message,
          );
        await assert.rejects(recover(testEnv(sb.store), { stagingPath: staging }), lost);
        await assert.rejects(abort(testEnv(sb.store), { stagingPath: staging }), lost);
        await assert.rejects(commitJob(testEnv(sb.store), { stagingPath: staging }), lost);
        const swept = await cleanOrphans(testEnv(sb.store), { roots: [root], olderThanMs: 0, delete: true });
        assert.ok(
          swept.problems.some((p) =>
            /_job\.yaml is missing, but the dir holds a stagecommit job's files \(.*_temporary\/0\/_claims.*\): .*nothing under it was touched/.test(
              p.message,
            ),
          ),
          JSON.stringify(swept.problems),
        );
        assert.deepEqual(await readTree(sb.store, root), before, 'nothing changed');
      });
    }

    test('exit 1 past the commit point says recover finishes the job; before the commit point it does not', async () => {
      const target = posix.join(dir(), 't');
      await writeTree(sb.store, target, { 'dt=9/keep': 'k' });
      const staging = await readyJob(sb.store, target, jobScenario('E', 'append'), tasks);
      const err = await commitJob(testEnv(sb.store, failsOnce(target)), { stagingPath: staging }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(err instanceof StoreError, String(err));
      assert.equal(err.exitCode, 1);
      assert.deepEqual(err.context, { reason: 'past-commit-point', jobId: 'E', handle: sb.store.toUri(staging) });
      assert.match(
        err.message,
        /Input\/output error; job E is past its commit point: run 'stagecommit recover --job .+' to finish it$/,
      );
      await recover(testEnv(sb.store), { stagingPath: staging });
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a': 'a', 'dt=2/b': 'b', 'dt=9/keep': 'k' });
      assert.notEqual(await sb.store.stat(posix.join(target, '_SUCCESS')), null);

      // An error creating the table-log entry changed nothing in the target. Whether it landed is not read back: the
      // message names recover, which finds no entry naming the plan, removes it, and leaves the job staged.
      const other = posix.join(dir(), 'u');
      const early = await readyJob(sb.store, other, jobScenario('F', 'create'), tasks);
      const log = posix.join(posix.dirname(other), '.stagecommit', 'u', '_log');
      const before = await commitJob(testEnv(sb.store, failsOnce(log)), { stagingPath: early }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(before instanceof StoreError, String(before));
      // A local create that failed made nothing; elsewhere its answer may be lost after it acted.
      assert.equal(before.context?.reason, failuresAreAnswers(sb.store) ? undefined : 'commit-point-unknown');
      assert.equal(await sb.store.stat(other), null, 'the target is untouched');
      assert.equal((await recover(testEnv(sb.store), { stagingPath: early })).state, 'staged');
      assert.equal(await planFileOf(sb.store, new JobLayout(early)), null, 'the plan was garbage');
      await commitJob(testEnv(sb.store), { stagingPath: early });
      assert.notEqual(await sb.store.stat(posix.join(other, '_SUCCESS')), null);
    });

    test('a partition dir removed after the commit point is made again by recover, which finishes the job', async () => {
      const target = posix.join(dir(), 'gone-parent');
      await writeTree(sb.store, target, { 'dt=1/r=z/o': 'o' });
      const staging = await readyJob(sb.store, target, jobScenario('G', 'append', ['dt', 'r']), [
        { task: '0', partition: ['dt=1', 'r=a'], files: { f: 'f' } },
      ]);
      const killed = crashAt(commitPointCreated, { after: true });
      await assert.rejects(commitJob(testEnv(sb.store, killed), { stagingPath: staging }), InjectedFault);
      assert.ok(killed.tripped());
      await sb.store.delete(posix.join(target, 'dt=1'), true);
      if (sb.store.caps.realDirectories) {
        // A file in its place: no place for the partition, told as the job past its commit point (exit 1, a
        // StoreError).
        await sb.store.writeFile(posix.join(target, 'dt=1'), 'in the way');
        const err = await recover(testEnv(sb.store), { stagingPath: staging }).then(
          () => null,
          (e: unknown) => e,
        );
        assert.ok(
          err instanceof StoreError &&
            err.exitCode === 1 &&
            /is not a directory|ParentNotDirectoryException|FileAlreadyExistsException|a file has this name/.test(
              err.message,
            ) &&
            /job G is past its commit point: run 'stagecommit recover/.test(err.message),
          String(err),
        );
        await sb.store.delete(posix.join(target, 'dt=1'), false);
      }
      await recover(testEnv(sb.store), { stagingPath: staging });
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/r=a/f': 'f' });
    });
  });
}
