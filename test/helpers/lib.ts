// In-process step runners for sweeps that run hundreds of steps (crash points, races).

import os from 'node:os';
import { posix } from 'node:path';
import { InstrumentedStore, type MutationHook, type StoreHooks } from '../../src/store/instrumented.js';
import type { Store } from '../../src/store/types.js';
import { isPidAliveLocal, type StepEnv } from '../../src/steps/env.js';
import { stageJob, type StageJobInput } from '../../src/steps/stage-job.js';
import { stageFiles } from '../../src/steps/stage-files.js';
import { commitTask } from '../../src/steps/commit-task.js';
import { commitJob } from '../../src/steps/commit-job.js';
import { parsePartitionArg } from '../../src/paths.js';
import { localFiles, type TaskSpec } from './jobs.js';

export function testEnv(store: Store, hook?: MutationHook | StoreHooks, extra: Partial<StepEnv> = {}): StepEnv & { store: InstrumentedStore } {
  const inst = new InstrumentedStore(store, hook);
  return {
    user: 'tester',
    host: os.hostname(),
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
