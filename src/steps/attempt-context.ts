// One task attempt as a task-level step (commit-task, abort --task) works on it: the values that
// travel together from the step's start to every check it makes.

import type { ClaimContext } from '../job/claims.js';
import type { JobManifest } from '../job/job.js';
import { taskAttemptName, type JobLayout } from '../job/layout.js';
import type { OpenJob } from '../job/open.js';
import type { StepEnv } from './env.js';

export interface AttemptContext {
  readonly env: StepEnv;
  readonly layout: JobLayout;
  /** The job as the step first read it: a job read later is compared with it. */
  readonly job: JobManifest;
  readonly task: string;
  readonly attempt: number;
  /** `attempt_<jobId>_<task>_<attempt>`: the name of its dir, decision and uploads. */
  readonly taskAttempt: string;
}

export function attemptContext(env: StepEnv, open: OpenJob, task: string, attempt: number): AttemptContext {
  const { job, layout } = open;
  return { env, layout, job, task, attempt, taskAttempt: taskAttemptName(job.jobId, task, attempt) };
}

/**
 * Which claim the attempt's task reads: the job's app attempt (or `app`), refusing a claim made
 * for an earlier job of the same id (staged again after an abort).
 */
export function claimContextOf(a: AttemptContext, app = a.job.appAttempt): ClaimContext {
  return { jobId: a.job.jobId, task: a.task, appAttempt: app, jobStagedAtMs: a.job.stagedAtMs };
}

/** The attempt's dir in the job's app attempt. */
export function attemptDirOf(a: AttemptContext): string {
  return a.layout.attemptDir(a.job.appAttempt, a.taskAttempt);
}
