// What happened to a job while a `stage` wrote into it. `stage` looks at the job and the attempt's
// decision before it writes, but a commit-job, abort or recover may end the job, or a commit-task
// or abort --task decide the attempt, before the files land: files written then are in no output,
// and where the staging dir was already removed they would linger there as debris. So `stage`
// looks again once its files are written (checkStillStaged), takes them back when nothing can
// hold them, and says what happened (exit 3 or 4) instead of exit 0.
// A commit-task of the same attempt decides before it lists the attempt's files: undecided at this
// look means listed later, so the files are in its claim (helper-56).

import { posix } from 'node:path';
import { CommitDeniedError, ConflictError } from '../errors.js';
import { readClaimRecord, readDecision } from '../job/claims.js';
import { loadJob, type JobManifest } from '../job/job.js';
import type { JobLayout } from '../job/layout.js';
import { forEachLimit } from '../util/pool.js';
import type { StepEnv } from './env.js';

/** What one `stage` run wrote: files (store paths), pending uploads and their record, dirs it may have made. */
export interface StagedWrites {
  readonly task: string;
  readonly taskAttempt: string;
  /** Table-relative paths of the staged files, as a claim lists them. */
  readonly paths: readonly string[];
  /** Store paths of the files written into the attempt dir (a marker file included). */
  readonly files: readonly string[];
  readonly uploads: readonly { readonly path: string; readonly uploadId: string }[];
  readonly uploadRecord: string | null;
  /** The dir the run wrote into (the partition's): emptied dirs from here and the files' own up go when the files go. */
  readonly dir: string;
}

/**
 * Once the files are written: exit 0 only while the job is still the same job, staged in the
 * same app attempt and not past its commit point, and the attempt is undecided, or its commit
 * lists every file. Any other way, what the run wrote is in no output: it is taken back (unless a
 * commit of the attempt may hold it) and the step fails, saying what happened meanwhile.
 */
export async function checkStillStaged(env: StepEnv, layout: JobLayout, job: JobManifest, w: StagedWrites): Promise<void> {
  const { store } = env;
  const [now, decision, plan] = await Promise.all([loadJob(store, layout), readDecision(store, layout, job.appAttempt, w.taskAttempt), store.stat(layout.commitFile)]);
  // A job id may be used again once its job ended (abort): the same job is the same id staged at the same time.
  const same = now !== null && now.jobId === job.jobId && now.stagedAtMs === job.stagedAtMs;
  // A written plan is past the commit point though `_job.yaml` may still say staged (a killed commit-job).
  const state = now?.state === 'staged' && plan ? 'committing' : now?.state;
  const taken = w.paths.length ? 'the files were taken back' : 'what it made was taken back';
  if (!same || state !== 'staged' || now.appAttempt !== job.appAttempt) {
    // A claim made after the job moved on is in no output either: nothing can hold the files.
    await takeBack(env, layout, job.appAttempt, w, !same);
    if (!same) throw new ConflictError(`job ${job.jobId} finished while this stage ran${now ? `, and ${now.jobId === job.jobId ? 'a new job of that id' : `job ${now.jobId}`} is now staged in ${store.toUri(layout.root)}` : ''}: its output cannot have these files, and ${taken}; stage them into a new job`);
    if (state !== 'staged') throw new ConflictError(`job ${job.jobId} was ${state} while this stage ran: its output cannot have these files, and ${taken}; stage them into a new job`);
    throw new ConflictError(`recover started app attempt ${now.appAttempt} of job ${job.jobId} while this stage ran in app attempt ${job.appAttempt}: ${taken}; run the task again`);
  }
  if (decision === null) return;
  if (decision.outcome === 'abort') {
    await takeBack(env, layout, job.appAttempt, w, false);
    throw new CommitDeniedError(`task attempt ${w.taskAttempt} was aborted while this stage ran: it can never commit, and ${taken}; stage into a new --attempt`);
  }
  // --print-path: what a writer puts there from now on would never appear.
  if (w.paths.length === 0) throw new ConflictError(`task attempt ${w.taskAttempt} was committed while this stage ran: files written there now would never appear; stage into a new --attempt`);
  // A commit-task of this attempt decided meanwhile: it may have listed the files before they landed.
  const claim = await readClaimRecord(store, layout, { jobId: job.jobId, task: w.task, appAttempt: job.appAttempt });
  const listed = new Set<string>();
  if (claim?.taskAttempt === w.taskAttempt) claim.eachFile((f) => listed.add(f.path));
  const missing = w.paths.find((p) => !listed.has(p));
  if (missing === undefined) return;
  throw new ConflictError(
    `task attempt ${w.taskAttempt} was committed while this stage ran, and its commit ${claim ? `does not have '${missing}'` : 'is still being made: it may not have these files'}; the files stay where they are (a commit may hold them); stage them into a new --attempt of another task, or run the job again`,
  );
}

/**
 * Removes what the run wrote: files, uploads (aborted) and their record, then the dirs that are
 * empty from the deepest one up to the attempt dir, or, when the job is gone (`gone`), up to the
 * staging dir itself (§5.12: a finished job leaves no staging dir).
 */
async function takeBack(env: StepEnv, layout: JobLayout, app: number, w: StagedWrites, gone: boolean): Promise<void> {
  const { store } = env;
  const files = w.uploadRecord ? [...w.files, w.uploadRecord] : [...w.files];
  await forEachLimit(w.uploads, env.concurrency, (u) => store.abortUpload!(u));
  if (store.deleteMany && files.length > 1) await store.deleteMany(files);
  else await forEachLimit(files, env.concurrency, async (f) => void (await store.delete(f, false)));
  if (!store.caps.realDirectories) return;
  const top = gone ? layout.root : layout.attemptDir(app, w.taskAttempt);
  // From each dir written into (a name may hold '/'), deepest first, up to `top`: the first that is not empty stops a walk.
  const starts = [...new Set([w.dir, ...w.files.map((f) => posix.dirname(f))])].sort((a, b) => b.length - a.length);
  for (const start of starts) {
    for (let d = start; d.startsWith(top) && d.length >= top.length; d = posix.dirname(d)) {
      if (!(await store.delete(d, false).catch(() => false)) || d === top) break;
    }
  }
}
