// What a task-level step (commit-task, abort --task) leaves behind when its job ended while it
// ran: its decision and claim, made after the staging dir went (debris, with the dirs their
// creation made again), or made in a new job of the same id that took the dir (protocol.md §5.12).

import { readClaimRecord } from '../job/claims.js';
import { readDecision } from '../job/decisions.js';
import { isSameJob, type JobManifest } from '../job/job.js';
import { tidyStagingParents } from '../job/staging-dir.js';
import { removeEmptyDirs } from '../store/operations.js';
import { removeDirIfEmpty } from '../store/operations.js';
import type { AttemptContext } from './attempt-context.js';

/**
 * What this run of a task-level step (commit-task, abort --task) wrote into the job's dir, once
 * written: its decision and its claim. When the job turns out to be another one (its id staged
 * again after an abort), these are the only files of this run that can be told apart from the new
 * job's own, and they go. (commit-task keeps beside them how to tell what a v2 task published.)
 */
export interface RunRecords {
  decision?: { readonly atMs: number; readonly by: string };
  claim?: { readonly claimedAtMs: number; readonly host: string; readonly pid: number };
  /**
   * v2: whether the task's files stand in the target (this run, or an earlier one, published them);
   * asked only when the step fails. Null: this run never learnt which files the task has.
   */
  published?: () => Promise<boolean | null>;
}

/**
 * In a new job: deletes this run's decision and claim where they still stand as it wrote them (read back: host, pid and
 * time match).
 */
export async function removeOwnRecords(a: AttemptContext, mine: RunRecords): Promise<void> {
  const { env, layout, job, task, taskAttempt } = a;
  const { store } = env;
  const app = job.appAttempt;
  const [decision, claim] = await Promise.all([
    mine.decision ? readDecision(store, layout, app, taskAttempt).catch(() => null) : null,
    mine.claim ? readClaimRecord(store, layout, { jobId: job.jobId, task, appAttempt: app }).catch(() => null) : null,
  ]);
  const gone: string[] = [];
  if (decision && decision.atMs === mine.decision!.atMs && decision.by === mine.decision!.by)
    gone.push(layout.decisionFile(app, taskAttempt));
  const c = mine.claim;
  if (
    claim &&
    c &&
    claim.taskAttempt === taskAttempt &&
    claim.claimedAtMs === c.claimedAtMs &&
    claim.host === c.host &&
    claim.pid === c.pid
  )
    gone.push(layout.claimFile(app, task));
  await Promise.all(gone.map((f) => store.delete(f, false).catch(() => false)));
}

/**
 * A finished job's staging dir is gone, and this step's decision and claim, made after, would
 * linger as its debris, with the directories their creation made again (protocol.md §5.12: a finished job
 * leaves no staging dir). Those go; a directory that is not empty stays.
 */
export async function removeDebris(a: AttemptContext): Promise<void> {
  const { env, layout, task, taskAttempt } = a;
  const app = a.job.appAttempt;
  const { store } = env;
  await Promise.all(
    [layout.claimFile(app, task), layout.decisionFile(app, taskAttempt)].map((f) =>
      store.delete(f, false).catch(() => false),
    ),
  );
  await Promise.all([layout.claimsDir(app), layout.decisionsDir(app)].map((d) => removeDirIfEmpty(store, d)));
  await removeEmptyDirs(store, [layout.appAttemptDir(app)], layout.root);
  await tidyStagingParents(store, layout);
}

/**
 * Takes back what this run wrote once its job ended while it ran: the debris where the staging dir
 * was (`now` null), or this run's own records in a new job that took the dir. False while `now` is
 * still the run's job.
 */
export async function takeBackIfEnded(a: AttemptContext, now: JobManifest | null, mine: RunRecords): Promise<boolean> {
  if (now && isSameJob(now, a.job)) return false;
  if (now) await removeOwnRecords(a, mine);
  else await removeDebris(a);
  return true;
}
