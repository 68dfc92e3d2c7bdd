// In-process step runners for sweeps that run hundreds of steps (crash points, races).

import { posix } from 'node:path';
import { InstrumentedStore, type MutationHook, type StoreHooks } from '../src/store/instrumented.js';
import type { Store } from '../src/store/types.js';
import { isPidAliveLocal, localHost, type StepEnv } from '../src/steps/env.js';
import { stageJob, type StageJobInput } from '../src/steps/stage-job.js';
import { stageFiles } from '../src/steps/stage-files.js';
import { commitTask } from '../src/steps/commit-task.js';
import { commitJob } from '../src/steps/commit-job.js';
import { parsePartitionArg } from '../src/paths.js';
import { loadJob } from '../src/job/job.js';
import { JobLayout, taskAttemptName } from '../src/job/layout.js';
import { localFiles, type TaskSpec } from './jobs.js';

/** The path of the job's commit plan in `_plan/` (protocol.md §2.2), or null when there is none. */
export async function planFileOf(store: Store, layout: JobLayout): Promise<string | null> {
  const plans = (await store.list(layout.planDir)).filter((e) => e.kind === 'file');
  return plans.length ? plans[0]!.path : null;
}

/**
 * A pid no process has (above Linux's pid_max): an in-process step killed on purpose runs under it,
 * so the CLI steps that follow judge its lease as a dead holder's at once, not after its TTL.
 */
export const DEAD_PID = 2 ** 22 + 12345;

export function testEnv(
  store: Store,
  hook?: MutationHook | StoreHooks,
  extra: Partial<StepEnv> = {},
): StepEnv & { store: InstrumentedStore } {
  const inst = new InstrumentedStore(store, hook);
  return {
    user: 'tester',
    host: localHost(),
    pid: process.pid,
    now: () => Date.now(),
    concurrency: 8,
    leaseTtlMs: 60_000,
    isPidAlive: isPidAliveLocal,
    emit: () => {},
    metrics: () => inst.metrics(),
    ...extra,
    store: inst,
  };
}

export interface Scenario {
  readonly name: string;
  /** The target before the job (table-relative path → content); null: absent. */
  readonly initial: Record<string, string> | null;
  readonly job: Omit<StageJobInput, 'targetPath' | 'partition'> & { readonly partition?: readonly string[] };
  readonly tasks: readonly TaskSpec[];
}

export async function libStage(env: StepEnv, targetPath: string, sc: Scenario): Promise<string> {
  const r = await stageJob(env, { ...sc.job, targetPath, partition: (sc.job.partition ?? []).map(parsePartitionArg) });
  return r.stagingPath;
}

export async function libStageTask(env: StepEnv, stagingPath: string, t: TaskSpec): Promise<void> {
  if (t.writer) {
    const partition = (t.partition ?? []).map(parsePartitionArg);
    await stageFiles(env, {
      stagingPath,
      task: t.task,
      attempt: t.attempt ?? 0,
      partition,
      files: [],
      printPath: true,
    });
    // The writer's own puts, straight to the store: not steps of ours, so not fault points.
    const raw = env.store instanceof InstrumentedStore ? env.store.inner : env.store;
    const job = (await loadJob(raw, new JobLayout(stagingPath)))!;
    const dir = posix.join(
      new JobLayout(stagingPath).attemptDir(job.appAttempt, taskAttemptName(job.jobId, t.task, t.attempt ?? 0)),
      ...(t.partition ?? []),
    );
    for (const [name, content] of Object.entries(t.files)) await raw.writeFile(posix.join(dir, name), content);
    return;
  }
  const paths = await localFiles(t.files);
  await stageFiles(env, {
    stagingPath,
    task: t.task,
    attempt: t.attempt ?? 0,
    partition: (t.partition ?? []).map(parsePartitionArg),
    files: paths.map((p) => ({ localPath: p, name: posix.basename(p) })),
  });
}

export async function libCommitTask(env: StepEnv, stagingPath: string, t: TaskSpec): Promise<void> {
  await commitTask(env, { stagingPath, task: t.task, attempt: t.attempt ?? 0 });
}

export async function libCommitJob(env: StepEnv, stagingPath: string): Promise<void> {
  await commitJob(env, { stagingPath });
}

/** A v1 job of one id and mode, partitioned by `partitionBy` (dt), with no tasks of its own. */
export function jobScenario(
  jobId: string,
  mode: 'overwrite' | 'append' | 'create',
  partitionBy: string[] = ['dt'],
): Scenario {
  return { name: jobId, initial: null, job: { mode, algorithm: 'v1', partitionBy, jobId }, tasks: [] };
}

/** A job staged, its tasks staged and committed, in-process; returns the staging path. */
export async function readyJob(
  store: Store,
  target: string,
  sc: Scenario,
  tasks: readonly TaskSpec[],
): Promise<string> {
  const env = testEnv(store);
  const staging = await libStage(env, target, sc);
  for (const t of tasks) {
    await libStageTask(env, staging, t);
    await libCommitTask(env, staging, t);
  }
  return staging;
}

/** The in-process driver that failed is "dead": its lease goes, as a dead pid's lease would be taken over. */
export async function driverDied(store: Store, staging: string): Promise<void> {
  for (const e of await store.list(staging)) if (e.name.startsWith('_lease.')) await store.delete(e.path, false);
}
