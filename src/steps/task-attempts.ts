// Which attempt of a task a step works on when no --attempt is given, and the attempts a resumed
// job closes. A retry is a new attempt, as in Hadoop and Spark: an attempt that a step of an
// earlier run left undecided is aborted when the job is resumed (one exclusive create of its
// decision, protocol.md §5.9), so its files never join the rerun's; the job's commit takes only
// the attempt that won the task's claim.

import { readClaimRecord } from '../job/claims.js';
import { readDecisions, type Decision } from '../job/decisions.js';
import { taskAttemptName, taskOfAttempt, type JobLayout } from '../job/layout.js';
import type { JobManifest } from '../job/job.js';
import { uploadsDir } from '../job/pending-uploads.js';
import type { Store } from '../store/types.js';

/** The number of an attempt name `attempt_<jobId>_<task>_<n>`, or null for another task's or a foreign name. */
function attemptNumber(jobId: string, task: string, name: string): number | null {
  if (taskOfAttempt(jobId, name) !== task) return null;
  return Number(name.slice(name.lastIndexOf('_') + 1));
}

/**
 * Every attempt of the job's current app attempt that left something (a dir, an upload record or a
 * decision), by task, with its decision (null: undecided).
 */
export async function jobAttempts(
  store: Store,
  layout: JobLayout,
  job: JobManifest,
): Promise<Map<string, Map<number, Decision | null>>> {
  const app = job.appAttempt;
  const [dirs, uploads, decisions] = await Promise.all([
    store.list(layout.attemptsDir(app)),
    store.list(uploadsDir(layout, app)),
    readDecisions(store, layout, app, 16, job),
  ]);
  const out = new Map<string, Map<number, Decision | null>>();
  const names = [...dirs.map((e) => e.name), ...uploads.map((e) => e.name), ...decisions.keys()];
  for (const name of names) {
    const task = taskOfAttempt(job.jobId, name);
    if (task === null) continue;
    const n = attemptNumber(job.jobId, task, name)!;
    const of = out.get(task) ?? out.set(task, new Map()).get(task)!;
    of.set(n, decisions.get(name) ?? null);
  }
  return out;
}

/**
 * The attempt a step works on when none is given:
 * - `stage` (files, a tree, --print-path): the task's newest attempt while it is undecided (one run
 *   stages into one attempt in several calls); a new one (newest + 1) once it is decided, aborted
 *   or claimed by another commit-task (a killed one's is finished by commit-task, below); the
 *   committed attempt once the task is committed (stage then refuses it);
 * - `commit-task` and `abort --task`: the attempt the task's claim names, else the newest.
 * A task with no attempt yet starts at 0.
 */
export async function currentAttempt(
  store: Store,
  layout: JobLayout,
  job: JobManifest,
  task: string,
  step: 'stage' | 'commit',
): Promise<number> {
  const claim = await readClaimRecord(store, layout, {
    jobId: job.jobId,
    task,
    appAttempt: job.appAttempt,
    jobStagedAtMs: job.stagedAtMs,
  }).catch(() => null);
  const claimed = claim ? attemptNumber(job.jobId, task, claim.taskAttempt) : null;
  const attempts = (await jobAttempts(store, layout, job)).get(task) ?? new Map<number, Decision | null>();
  const newest = attempts.size ? Math.max(...attempts.keys()) : null;
  if (step === 'commit') return claimed ?? newest ?? 0;
  if (claim?.state === 'committed' && claimed !== null) return claimed;
  if (newest === null) return 0;
  const undecided = attempts.get(newest) === null && claimed !== newest;
  return undecided ? newest : newest + 1;
}

/** The name of a task's attempt n: for messages. */
export const attemptName = (job: JobManifest, task: string, n: number) => taskAttemptName(job.jobId, task, n);
