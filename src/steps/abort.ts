// abort: throws away one task attempt, or the whole job's staged data (refused past the commit point).

import { ConflictError } from '../errors.js';
import { readClaim } from '../job/claims.js';
import { withdrawOverwrite } from '../job/commit-log.js';
import { saveJob } from '../job/job.js';
import { taskAttemptName } from '../job/layout.js';
import { checkAttempt, checkTaskId } from '../paths.js';
import { JobGoneError, openJob, removeStagingDir, requireState, withJobLease } from './common.js';
import type { StepEnv } from './env.js';

export interface AbortInput {
  readonly stagingPath: string;
  readonly task?: string;
  readonly attempt?: number;
}

export interface AbortResult {
  readonly jobId?: string;
  /** 'aborted'; 'nothing' when the handle names no job (like rm -f). */
  readonly outcome: 'aborted' | 'nothing';
  readonly scope: 'job' | 'task';
  readonly taskAttempt?: string;
  /** A task abort that released the attempt's commit claim. */
  readonly releasedClaim?: boolean;
}

export async function abort(env: StepEnv, input: AbortInput): Promise<AbortResult> {
  const scope = input.task === undefined ? 'job' : 'task';
  const task = input.task === undefined ? undefined : checkTaskId(input.task);
  const attempt = checkAttempt(input.attempt);
  let open;
  try {
    open = await openJob(env.store, input.stagingPath);
  } catch (e) {
    if (e instanceof JobGoneError) return { outcome: 'nothing', scope };
    throw e;
  }
  if (task !== undefined) return abortTask(env, open.job.jobId, input.stagingPath, task, attempt);

  return withJobLease(env, open, 'abort', async (locked) => {
    requireState(locked, ['staged', 'aborted'], 'abort');
    const { job, layout } = locked;
    if (job.state !== 'aborted') await saveJob(env.store, layout, { ...job, state: 'aborted' });
    await withdrawOverwrite(env.store, job.targetPath, job.jobId);
    await removeStagingDir(env, layout);
    return { jobId: job.jobId, outcome: 'aborted' as const, scope };
  });
}

async function abortTask(env: StepEnv, jobId: string, stagingPath: string, task: string, attempt: number): Promise<AbortResult> {
  const { store } = env;
  const open = await openJob(store, stagingPath);
  const { job, layout } = open;
  requireState(open, ['staged'], 'abort a task attempt');
  const app = job.appAttempt;
  const taskAttempt = taskAttemptName(jobId, task, attempt);
  const claimPath = layout.claimFile(app, task);
  const claim = await readClaim(store, claimPath);
  const mine = claim?.taskAttempt === taskAttempt;
  if (mine && claim.state === 'committed') {
    throw new ConflictError(`cannot abort ${taskAttempt}: it is already committed and its files belong to the job; abort the whole job to discard them`);
  }
  // Remembered first, so the attempt can never commit even if it is committing right now.
  await store.createExclusive(layout.abortedMarker(app, taskAttempt), `${new Date(env.now()).toISOString()} ${env.user}@${env.host}\n`);
  if (mine) {
    if (store.caps.directoryRename && job.algorithm === 'v1') await store.delete(layout.committedTaskDir(app, task), true);
    await store.delete(claimPath, false);
  }
  await store.delete(layout.attemptDir(app, taskAttempt), true);
  return { jobId, outcome: 'aborted', scope: 'task', taskAttempt, releasedClaim: mine };
}
