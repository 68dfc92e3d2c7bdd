// What happened to a job while a commit-task of it ran: a step that held the lease (commit-job,
// recover, abort) may have read the claims before this one, finished the job, moved it to a new
// app attempt, or aborted it. commit-task asks here once its claim exists (checkNotOverlooked)
// and again after its commit (checkKept), and says which it was (exit 4), or goes on.
// Keeps protocol.md §5.19 (exit 0 from commit-task means the job's commit includes the task).

import { BlockedError, ConflictError } from '../errors.js';
import { readClaimRecord, type ClaimRecord } from '../job/claims.js';
import { claimFilesOfRecord, taskFilesOf } from '../job/claim-files.js';
import { publishedV2Count } from '../plan/publish-v2.js';
import { JobGoneError, stateOnStore } from '../job/open.js';
import { findCommitted } from '../job/finished.js';
import { isSameJob, loadJob, type JobManifest } from '../job/job.js';
import { describeHolder, LeaseWatch, readCurrentLease, type CurrentLease } from '../job/lease.js';
import { waitFor } from '../util/wait.js';
import type { AttemptContext } from './attempt-context.js';
import type { StepEnv } from './env.js';
import { takeBackIfEnded, type RunRecords } from './task-debris.js';
import { listPlans } from '../plan/plan-file.js';

export type { RunRecords } from './task-debris.js';

/** How long commit-task waits for a step that holds the job's lease before it gives up (exit 4). */
const HOLDER_WAIT_MS = 30_000;

/**
 * The job once no live step holds its lease (commit-job, recover, abort): such a step may have
 * read the claims before this attempt's claim existed, or before it was committed. Waited for up
 * to HOLDER_WAIT_MS, then exit 4. Null: the job is gone (committed or aborted). Its state counts
 * a written plan as 'committing', as every step's does: a commit-job killed just after its
 * commit point left `_job.yaml` saying 'staged', and recover rolls that plan forward.
 */
async function jobWithoutHolder({ env, layout, job, task }: AttemptContext): Promise<JobManifest | null> {
  const { store } = env;
  let holder: CurrentLease | null = null;
  const watch = new LeaseWatch(env);
  const found = await waitFor(env.now, Math.min(HOLDER_WAIT_MS, env.leaseTtlMs), async () => {
    const [now, lease, plan] = await Promise.all([
      loadJob(store, layout),
      readCurrentLease(store, layout),
      listPlans(store, layout),
    ]);
    holder = lease;
    if (!now || !lease || watch.expired(lease))
      return { now: now && { ...now, state: await stateOnStore(store, layout, now, plan) } };
    return undefined;
  });
  if (found) return found.now;
  throw new ConflictError({
    reason: 'holder-may-have-read',
    holder: describeHolder(holder!.record),
    jobId: job.jobId,
    task,
  });
}

/**
 * Whether the claim just made is too late. Once the claim exists and no live step holds the
 * lease, every later commit-job lists the claims after it: if the job is still staged in this
 * app attempt, the commit goes on. A commit-job that ran meanwhile either met this claim and
 * stopped at it ("still committing") or read the claims before it and committed without it.
 */
export async function checkNotOverlooked(a: AttemptContext, mine: RunRecords): Promise<'go' | 'carried'> {
  const { env, layout, job, task } = a;
  const now = await jobWithoutHolder(a);
  if (now && isSameJob(now, job) && now.state === 'staged' && now.appAttempt === job.appAttempt) return 'go';
  if ((await takeBackIfEnded(a, now, mine)) && now) throw newJobStaged(a, now, await publishedStays(mine));
  // A job that left no staging dir was aborted unless its commit left a record (as checkKept asks).
  if (now ? now.state === 'aborted' : !(await findCommitted(env.store, layout.root))) {
    const kept = (await publishedStays(mine)) ?? null;
    throw new BlockedError({ reason: 'aborted-while-committing', jobId: job.jobId, task, taskAttempt: null, kept });
  }
  if (now && now.appAttempt !== job.appAttempt) {
    if (await carried(a, now)) return 'carried';
    throw new BlockedError({
      reason: 'recover-restarted',
      jobId: job.jobId,
      appAttempt: now.appAttempt,
      was: job.appAttempt,
      task,
      taskAttempt: null,
      kept: (await publishedStays(mine)) ?? null,
    });
  }
  throw new BlockedError({
    reason: 'finished-while-committing',
    jobId: job.jobId,
    state: now ? now.state : null,
    task,
    kept: (await publishedStays(mine)) ?? null,
  });
}

/** What a v2 task whose files stand in the target is told: they stay whatever its job became. */
const FILES_STAY =
  'its files were published into the target already (v2 publishes at commit-task) and stay there, outside any committed job';

/**
 * A v2 task whose files stand in the target (this run, or an earlier run of it, published them
 * before the job ended): they stay there, whatever the job became. Undefined when none do.
 */
async function publishedStays(mine: RunRecords): Promise<string | undefined> {
  const published = await mine.published?.();
  if (published === null)
    return 'this run published nothing; any file an earlier run of it published at commit-task (v2 publishes per task) stays in the target, outside any committed job';
  if (!published) return undefined;
  return `${FILES_STAY}; do not run the task again for this job`;
}

/**
 * Whether the task is kept, once commit-task has committed it. A step that took the lease
 * meanwhile (recover, abort) may have read this claim before it was committed; once it has ended,
 * recover may have started the next app attempt without it. Exit 4 when the task is not kept;
 * true when the job is still in this app attempt.
 */
export async function checkKept(a: AttemptContext, mine: RunRecords): Promise<boolean> {
  const { env, layout, job, taskAttempt } = a;
  const now = await jobWithoutHolder(a);
  const outcome = () => publishedStays(mine);
  // The job's staging dir went meanwhile (what this step wrote since made it again, as debris), or
  // a new job took it: what this run wrote goes.
  if ((await takeBackIfEnded(a, now, mine)) && now) throw newJobStaged(a, now, await outcome());
  if (now && now.appAttempt !== job.appAttempt && !(await carried(a, now))) {
    throw new BlockedError({
      reason: 'recover-restarted',
      jobId: job.jobId,
      appAttempt: now.appAttempt,
      was: job.appAttempt,
      task: null,
      taskAttempt,
      kept: (await outcome()) ?? null,
    });
  }
  if (now ? now.state === 'aborted' : !(await findCommitted(env.store, layout.root))) {
    const kept = (await outcome()) ?? null;
    throw new BlockedError({ reason: 'aborted-while-committing', jobId: job.jobId, task: null, taskAttempt, kept });
  }
  return now?.appAttempt === job.appAttempt;
}

/** Whether recover finished this attempt's claim and carried it, committed, into the job's current app attempt. */
export async function carried(a: AttemptContext, now: JobManifest): Promise<boolean> {
  const { job, task } = a;
  const c = await readClaimRecord(a.env.store, a.layout, { jobId: job.jobId, task, appAttempt: now.appAttempt });
  return c?.taskAttempt === a.taskAttempt && c.state === 'committed';
}

/**
 * A staging dir may hold a new job once this one has finished (a user-named dir, or a job id
 * staged again after an abort): never commit into it (the decision and the claim this run made
 * there are taken back: an attempt of the new job may have the same name).
 */
function newJobStaged({ env, layout, job, task }: AttemptContext, now: JobManifest, published?: string): ConflictError {
  return new BlockedError({
    reason: 'new-job-staged',
    jobId: job.jobId,
    task,
    newJobId: now.jobId,
    staging: env.store.toUri(layout.root),
    kept: published ?? null,
  });
}

/**
 * commit-task at a handle whose job is finished: committed, it says the commit holds the task only
 * if the task was committed before it ("nothing more to do" would read as done); else as every step.
 */
export function taskOfGoneJob(gone: JobGoneError, task: string): never {
  const done = gone.committed;
  if (!done || gone.stray) throw gone;
  throw new JobGoneError(
    {
      reason: 'job-finished-task',
      jobId: done.jobId,
      success: done.success,
      committedAt: done.committedAt,
      task,
    },
    done,
  );
}

/** commit-task of a job being aborted: exit 4, saying (v2) what of the task stays in the target. */
export async function abortedJob(
  env: StepEnv,
  job: JobManifest,
  task: string,
  claim: ClaimRecord | null,
): Promise<never> {
  let stays = 'nothing of it was published';
  if (job.algorithm === 'v2') {
    const published = claim
      ? (await publishedV2Count(env, job, taskFilesOf(claimFilesOfRecord(claim)))) > 0
      : job.publishedTasks?.includes(task)
        ? null
        : false;
    if (published === null)
      stays =
        'it had claimed its output: any file it published at commit-task (v2 publishes per task) stays in the target';
    else if (published) stays = FILES_STAY;
  }
  throw new BlockedError({ reason: 'task-of-aborted-job', task, jobId: job.jobId, stays });
}
