// What happened to a job while a `stage` wrote into it. `stage` looks at the job and the attempt's
// decision before it writes, but a commit-job, abort or recover may end the job, or a commit-task
// or abort --task decide the attempt, before the files land: files written then are in no output,
// and where the staging dir was already removed they would linger there as debris. So `stage`
// looks again once its files are written (checkStillStaged), takes them back when nothing can
// hold them, and says what happened (exit 3 or 4) instead of exit 0.
// A commit-task of the same attempt lists the attempt's files again once it has decided: undecided
// at this look means listed after the files landed, so they are in its claim (protocol.md §5.19).
// Keeps protocol.md §5.12 (no debris) and §5.19 (exit 0 is a promise).

import { posix } from 'node:path';
import { BlockedError, CommitDeniedError, ConflictError } from '../errors.js';
import { readClaimRecord, type ClaimRecord } from '../job/claims.js';
import { readDecision } from '../job/decisions.js';
import { isSameJob, loadJob, type JobManifest } from '../job/job.js';
import type { JobLayout } from '../job/layout.js';
import { stateOnStore } from '../job/open.js';
import { tidyStagingParents } from '../job/staging-dir.js';
import { deleteFiles, removeEmptyDirs } from '../store/operations.js';
import { abortUploads } from '../store/uploads.js';
import { waitFor } from '../util/wait.js';
import type { StepEnv } from './env.js';
import type { TakenBack } from '../messages/advice.js';
import { listPlans } from '../plan/plan-file.js';

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
  /**
   * The dir the run wrote into (the partition's): emptied dirs from here and the files' own up go when the files go.
   */
  readonly dir: string;
  /** Puts back, before they would be removed, the files this run took from their sources (stage --move). */
  readonly giveBack?: (files: readonly string[]) => Promise<void>;
}

/**
 * Once the files are written: exit 0 only while the job is still the same job, staged in the
 * same app attempt and not past its commit point, and the attempt is undecided, or its commit
 * lists every file. Any other way, what the run wrote is in no output: it is taken back (unless a
 * commit of the attempt may hold it) and the step fails, saying what happened meanwhile.
 */
export async function checkStillStaged(
  env: StepEnv,
  layout: JobLayout,
  job: JobManifest,
  w: StagedWrites,
): Promise<void> {
  const { store } = env;
  // A decision made for an earlier job of this id is refused (ConflictError): the files go back first.
  const [now, decision, plan] = await Promise.all([
    loadJob(store, layout),
    readDecision(store, layout, job.appAttempt, w.taskAttempt, job).catch((e: unknown) =>
      e instanceof ConflictError ? e : Promise.reject(e),
    ),
    listPlans(store, layout),
  ]);
  // A job id may be used again once its job ended (abort): the same job is the same id staged at the same time.
  const same = now !== null && isSameJob(now, job);
  // A written plan is past the commit point though `_job.yaml` may still say staged (a killed commit-job).
  const state = now && (await stateOnStore(store, layout, now, plan));
  const taken = takenBack(w);
  // A claim made after the job moved on is in no output either: nothing can hold the files.
  if (!same || state !== 'staged' || now.appAttempt !== job.appAttempt) {
    await takeBack(env, layout, job.appAttempt, w, !same);
    throw movedOn(env, layout, job, { now, state }, w);
  }
  if (decision instanceof ConflictError) {
    await takeBack(env, layout, job.appAttempt, w, false);
    throw decision;
  }
  if (decision === null) return;
  if (decision.outcome === 'abort') {
    await takeBack(env, layout, job.appAttempt, w, false);
    throw new CommitDeniedError({ reason: 'staged-into-aborted', taskAttempt: w.taskAttempt, taken });
  }
  // --print-path: what a writer puts there from now on would never appear.
  if (w.paths.length === 0) throw new BlockedError({ reason: 'committed-during-stage', taskAttempt: w.taskAttempt });
  await checkClaimHolds(env, layout, job, w);
}

/**
 * A commit-task of this attempt decided meanwhile: it may have listed the files before they
 * landed. Its claim says which it has, once it is whole; the files it does not list go.
 */
async function checkClaimHolds(env: StepEnv, layout: JobLayout, job: JobManifest, w: StagedWrites): Promise<void> {
  const taken = takenBack(w);
  const claim = await finishedClaim(env, layout, job, w.task);
  if (!claim) {
    throw new BlockedError({ reason: 'commit-unfinished-during-stage', taskAttempt: w.taskAttempt });
  }
  const listed = new Set<string>();
  if (claim.taskAttempt === w.taskAttempt) claim.eachFile((f) => listed.add(f.path));
  const unlisted = w.paths.filter((p) => !listed.has(p));
  if (unlisted.length === 0) return;
  // A whole claim holds what it lists and nothing else: the rest would stop commit-job (a file its
  // claim does not list), so it goes from wherever the commit put it.
  await takeBackUnlisted(env, layout, job.appAttempt, w, {
    paths: unlisted,
    root: claim.taskAttempt === w.taskAttempt ? claim.root : undefined,
  });
  throw new BlockedError(
    claim.taskAttempt === w.taskAttempt
      ? {
          reason: 'committed-without-files',
          taskAttempt: w.taskAttempt,
          first: unlisted[0]!,
          others: unlisted.length - 1,
        }
      : { reason: 'task-won-during-stage', task: w.task, winner: claim.taskAttempt, taken },
  );
}

/** What the step took back: the files it staged, or (--print-path) what it made. */
function takenBack(w: StagedWrites): TakenBack {
  return w.paths.length ? 'files' : 'dir';
}

/** The job finished, left 'staged' or started its next app attempt while this stage ran. */
function movedOn(
  env: StepEnv,
  layout: JobLayout,
  job: JobManifest,
  found: { now: JobManifest | null; state: string | null },
  w: StagedWrites,
): ConflictError {
  const { now, state } = found;
  const taken = takenBack(w);
  if (!now || !isSameJob(now, job)) {
    const newJob = now ? { jobId: now.jobId, staging: env.store.toUri(layout.root) } : null;
    return new BlockedError({ reason: 'stage-overtaken', jobId: job.jobId, state: 'finished', newJob, taken });
  }
  if (state !== 'staged')
    return new BlockedError({ reason: 'stage-overtaken', jobId: job.jobId, state: String(state), newJob: null, taken });
  return new BlockedError({
    reason: 'stage-recover-restarted',
    jobId: job.jobId,
    appAttempt: now.appAttempt,
    was: job.appAttempt,
    taken,
  });
}

/** How long a stage waits for the claim of a commit-task that decided its attempt to be whole. */
const CLAIM_WAIT_MS = 30_000;

/**
 * The task's claim once a commit-task finished it ('committed', this attempt's or another's); null if that takes too
 * long.
 */
async function finishedClaim(
  env: StepEnv,
  layout: JobLayout,
  job: JobManifest,
  task: string,
): Promise<ClaimRecord | null> {
  const ctx = { jobId: job.jobId, task, appAttempt: job.appAttempt, jobStagedAtMs: job.stagedAtMs };
  const claim = await waitFor(env.now, Math.min(CLAIM_WAIT_MS, env.leaseTtlMs), async () => {
    const c = await readClaimRecord(env.store, layout, ctx);
    return c?.state === 'committed' ? c : undefined;
  });
  return claim ?? null;
}

/**
 * Removes the files a whole claim does not list (and their uploads): from the attempt dir, and
 * from where its commit moved the dir (`root`, staging-relative; '' for v2, whose files went to
 * the target, where nothing unlisted went), with the dirs they alone kept there.
 */
async function takeBackUnlisted(
  env: StepEnv,
  layout: JobLayout,
  app: number,
  w: StagedWrites,
  committed: { readonly paths: readonly string[]; readonly root: string | undefined },
): Promise<void> {
  const { paths: unlisted, root } = committed;
  const { store } = env;
  const roots = [layout.attemptDir(app, w.taskAttempt)];
  if (root && !root.startsWith('t:') && posix.join(layout.root, root) !== roots[0])
    roots.push(posix.join(layout.root, root));
  await abortUploads(
    store,
    w.uploads.filter((u) => unlisted.some((p) => u.path.endsWith(`/${p}`))),
    env.concurrency,
  );
  for (const top of roots) {
    const files = unlisted.map((p) => posix.join(top, p));
    await w.giveBack?.(files);
    await deleteFiles(store, files, env.concurrency);
    await removeEmptyDirs(
      store,
      files.map((f) => posix.dirname(f)),
      top,
      top !== roots[0],
    );
  }
}

/**
 * Removes what the run wrote: files, uploads (aborted) and their record, then the dirs that are
 * empty from the deepest one up to the attempt dir, or, when the job is gone (`gone`), up to the
 * staging dir itself and its empty default parents (protocol.md §5.12: a finished job leaves no staging dir).
 */
async function takeBack(env: StepEnv, layout: JobLayout, app: number, w: StagedWrites, gone: boolean): Promise<void> {
  const { store } = env;
  await abortUploads(store, w.uploads, env.concurrency);
  await w.giveBack?.(w.files);
  await deleteFiles(store, w.uploadRecord ? [...w.files, w.uploadRecord] : w.files, env.concurrency);
  // From each dir written into (a name may hold '/') up to `top`: the first that is not empty stops a walk.
  await removeEmptyDirs(
    store,
    [w.dir, ...w.files.map((f) => posix.dirname(f))],
    gone ? layout.root : layout.attemptDir(app, w.taskAttempt),
  );
  // The writes made the default layout's parents again where the job's clean-up had tidied them.
  if (gone) await tidyStagingParents(store, layout).catch(() => undefined);
}
