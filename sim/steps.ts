// The real steps, as a simulated process runs them: each with a StepEnv whose store, clock,
// host, pid and pid liveness are the world's.

import { posix } from 'node:path';
import { Readable } from 'node:stream';
import { InstrumentedStore } from '../src/store/instrumented.js';
import type { StepEnv } from '../src/steps/env.js';
import { stageJob } from '../src/steps/stage-job.js';
import { stageFiles } from '../src/steps/stage-files.js';
import { commitTask } from '../src/steps/commit-task.js';
import { commitJob } from '../src/steps/commit-job.js';
import { abort } from '../src/steps/abort.js';
import { recover } from '../src/steps/recover.js';
import { cleanOrphans } from '../src/steps/clean-orphans.js';
import { adopt } from '../src/steps/adopt.js';
import type { Proc, World } from './world.js';

export const ROOT = '/w';
export const TABLE = '/w/sales';
export const STAGING_ROOT = '/w/.stagecommit/sales';
export const LOG_DIR = `${STAGING_ROOT}/_log`;
export const LEASE_TTL_MS = 60_000;
export const DAY_MS = 24 * 3600_000;

export function envOf(world: World, p: Proc): StepEnv {
  const inst = new InstrumentedStore(world.storeOf(p));
  return {
    store: inst,
    user: 'sim',
    host: p.host,
    pid: p.pid,
    now: () => p.now(),
    concurrency: 4,
    leaseTtlMs: LEASE_TTL_MS,
    isPidAlive: (pid) => world.pidAlive(p.host, pid),
    emit: (e) => {
      if (e.type === 'warn') world.log(`${p.label} warns: ${e.message.split('\n')[0]}`);
    },
    metrics: () => inst.metrics(),
  };
}

export interface JobDef {
  readonly id: string;
  readonly tasks?: number;
}

export const stagingOf = (jobId: string): string => posix.join(STAGING_ROOT, jobId);

/** The bytes of a task attempt's file: they name the job, task and attempt they came from. */
export const content = (jobId: string, task: string, attempt: number, name: string): string =>
  `${jobId}|${task}|${attempt}|${name}`;

export interface TaskDef {
  readonly task: string;
  readonly attempt: number;
  readonly files: readonly string[];
}

/** A step a process runs: what the trace and the report call it, and the call. */
export interface StepDef {
  readonly label: string;
  readonly kind: StepKind;
  readonly jobId?: string;
  readonly task?: TaskDef;
  readonly run: (env: StepEnv) => Promise<unknown>;
}

export type StepKind =
  | 'stage-job'
  | 'stage'
  | 'commit-task'
  | 'commit-job'
  | 'abort'
  | 'abort-task'
  | 'recover'
  | 'clean-orphans'
  | 'adopt'
  | 'damage';

export const steps = {
  stageJob: (job: JobDef): StepDef => ({
    label: `stage job ${job.id}`,
    kind: 'stage-job',
    jobId: job.id,
    run: (env) =>
      stageJob(env, {
        targetPath: TABLE,
        mode: 'overwrite',
        algorithm: 'v1',
        partition: [],
        partitionBy: ['dt'],
        jobId: job.id,
        tasks: job.tasks,
      }),
  }),
  stage: (jobId: string, t: TaskDef): StepDef => ({
    label: `stage ${jobId} ${t.task}/${t.attempt}`,
    kind: 'stage',
    jobId,
    task: t,
    run: (env) =>
      stageFiles(env, {
        stagingPath: stagingOf(jobId),
        task: t.task,
        attempt: t.attempt,
        partition: [{ column: 'dt', value: '1' }],
        files: t.files.map((name) => ({
          name,
          stream: Readable.from([Buffer.from(content(jobId, t.task, t.attempt, name))]),
        })),
      }),
  }),
  commitTask: (jobId: string, t: TaskDef): StepDef => ({
    label: `commit-task ${jobId} ${t.task}/${t.attempt}`,
    kind: 'commit-task',
    jobId,
    task: t,
    run: (env) => commitTask(env, { stagingPath: stagingOf(jobId), task: t.task, attempt: t.attempt }),
  }),
  commitJob: (jobId: string): StepDef => ({
    label: `commit-job ${jobId}`,
    kind: 'commit-job',
    jobId,
    run: (env) => commitJob(env, { stagingPath: stagingOf(jobId) }),
  }),
  abort: (jobId: string): StepDef => ({
    label: `abort ${jobId}`,
    kind: 'abort',
    jobId,
    run: (env) => abort(env, { stagingPath: stagingOf(jobId) }),
  }),
  abortTask: (jobId: string, t: TaskDef): StepDef => ({
    label: `abort --task ${jobId} ${t.task}/${t.attempt}`,
    kind: 'abort-task',
    jobId,
    task: t,
    run: (env) => abort(env, { stagingPath: stagingOf(jobId), task: t.task, attempt: t.attempt }),
  }),
  recover: (jobId: string): StepDef => ({
    label: `recover ${jobId}`,
    kind: 'recover',
    jobId,
    run: (env) => recover(env, { stagingPath: stagingOf(jobId) }),
  }),
  cleanOrphans: (): StepDef => ({
    label: 'clean-orphans --delete',
    kind: 'clean-orphans',
    run: (env) => cleanOrphans(env, { roots: [ROOT], olderThanMs: DAY_MS, delete: true }),
  }),
  /** Damage a user or another tool does: a file of the staging root removed by hand. */
  remove: (path: string): StepDef => ({
    label: `rm ${path}`,
    kind: 'damage',
    run: (env) => env.store.delete(path, false),
  }),
  adopt: (leftover: string): StepDef => ({
    label: `adopt ${leftover}`,
    kind: 'adopt',
    run: (env) => adopt(env, { leftoverPath: leftover, olderThanMs: 15 * 60_000 }),
  }),
};
