// commit-task: checks the attempt's files, decides the attempt (commit, unless an abort came
// first), lists them again, claims the task for it (first claim wins), promotes and records them.
// Keeps protocol.md §5.9 (one decision per attempt) and §5.19 (exit 0: the job commit includes the task).

import { posix } from 'node:path';
import { CommitDeniedError, ConflictError, StoreError, UsageError } from '../errors.js';
import { claimFilesOfRecord, taskFilesOf, type ClaimFiles } from '../job/claim-files.js';
import {
  encodeClaimWith,
  readClaimRecord,
  type ClaimContext,
  type ClaimHeader,
  type ClaimRecord,
} from '../job/claims.js';
import { decide, decidedBy, readDecision } from '../job/decisions.js';
import { isSameJob, loadJob, type JobManifest } from '../job/job.js';
import { taskAttemptName, type JobLayout } from '../job/layout.js';
import { settleAttemptUploads } from '../job/pending-uploads.js';
import { checkAttempt, checkTaskId } from '../paths.js';
import { eachAttemptFile } from '../job/tasks.js';
import { planV2, publishClaimedV2, publishedV2Count } from '../plan/publish-v2.js';
import { promoteOutput } from '../store/operations.js';
import { requireState, type OpenJob } from '../job/open.js';
import { abortedError, attemptOutput } from './attempt-output.js';
import { otherLiveProcessHere, type StepEnv } from './env.js';
import { runStep } from './runner.js';
import { abortedJob, checkKept, checkNotOverlooked, taskOfGoneJob, type RunRecords } from './task-race.js';
import { waitFor } from '../util/wait.js';

/** The attempt's files, as one listing of its dir found them. */
type Output = Awaited<ReturnType<typeof attemptOutput>>;

export interface CommitTaskInput {
  readonly stagingPath: string;
  readonly task: string;
  readonly attempt?: number;
}

export interface CommitTaskResult {
  readonly jobId: string;
  readonly task: string;
  readonly taskAttempt: string;
  /** 'committed' now, or 'already' when this attempt had committed before (idempotent re-run). */
  readonly outcome: 'committed' | 'already';
  readonly files: number;
  readonly bytes: number;
}

function denied(claim: ClaimHeader, mine: string): CommitDeniedError {
  return new CommitDeniedError(
    `commit denied for ${mine}: task ${claim.task} was claimed by ${claim.taskAttempt} (${claim.host}, pid ${claim.pid}); this attempt's files will never appear`,
  );
}

/** A task id outside the declared tasks would commit output that commit-job never asks for. */
export function checkDeclared(job: JobManifest, task: string, what = 'committed'): void {
  if (job.tasks !== undefined && !(/^\d+$/.test(task) && Number(task) < job.tasks)) {
    throw new UsageError(
      `task ${task} is not one of the job's declared tasks 0…${job.tasks - 1} (--tasks ${job.tasks}): nothing was ${what}`,
    );
  }
}

export async function commitTask(env: StepEnv, input: CommitTaskInput): Promise<CommitTaskResult> {
  const task = checkTaskId(input.task);
  const attempt = checkAttempt(input.attempt);
  return runStep(env, input.stagingPath, { name: 'commit-task', ifGone: (gone) => taskOfGoneJob(gone, task) }, (open) =>
    commitAttempt(env, open, task, attempt),
  );
}

async function commitAttempt(env: StepEnv, open: OpenJob, task: string, attempt: number): Promise<CommitTaskResult> {
  const { store } = env;
  const { job, layout } = open;
  checkDeclared(job, task);
  const app = job.appAttempt;
  const taskAttempt = taskAttemptName(job.jobId, task, attempt);
  // A claim or decision made for an earlier job of this id (staged again after an abort) is refused.
  const ctx = { jobId: job.jobId, task, appAttempt: app, jobStagedAtMs: job.stagedAtMs };
  const result = (outcome: CommitTaskResult['outcome'], files: number, bytes: number): CommitTaskResult => ({
    jobId: job.jobId,
    task,
    taskAttempt,
    outcome,
    files,
    bytes,
  });
  const already = (c: ClaimRecord) => (c.eachFile(() => {}), result('already', c.fileCount, c.bytes));
  const mine: RunRecords = {};

  const before = await readClaimRecord(store, layout, ctx);
  if (before && before.taskAttempt !== taskAttempt) throw denied(before, taskAttempt);
  // A job being aborted commits nothing, whatever its claims say.
  if (open.state === 'aborted') await abortedJob(env, job, task, before);
  // Read through all the same: its paths are checked as every claim's are (protocol.md §5.11).
  if (before?.state === 'committed') return already(before);
  requireState(open, ['staged'], 'commit a task');
  // A v2 publication of this attempt still running here: a second run beside it could undo it.
  if (before && job.algorithm === 'v2' && otherLiveProcessHere(before, env)) {
    throw new ConflictError(
      `${taskAttempt} is being committed by pid ${before.pid} on ${before.host}: wait for it (if it was killed, run commit-task again)`,
    );
  }
  const attemptDir = layout.attemptDir(app, taskAttempt);
  let claim: ClaimHeader;
  let files: ClaimFiles | undefined;
  let first: Output | null = null;
  let output: Output | null = null;
  // What a v2 task left in the target (this run, or an earlier one), counted only if the job's end
  // overtakes it: its message says so. Null: this run never learnt the task's files.
  if (job.algorithm === 'v2') {
    const known = () => files ?? output?.files ?? first?.files ?? (before ? claimFilesOfRecord(before) : null);
    mine.published = async () => {
      const f = known();
      return f === null ? null : (await publishedV2Count(env, job, taskFilesOf(f))) > 0;
    };
  }
  // Checked before the decision: output refused here leaves the attempt free to abort or fix (a
  // stage's temp, which may be in flight, is not touched).
  env.emit({ type: 'phase', label: `reading the files of ${taskAttempt}` });
  const looked = before
    ? null
    : await attemptOutput(env, layout, job, task, taskAttempt, false).catch((e: unknown) =>
        committedMeanwhile(env, layout, ctx, taskAttempt, e, { job, mine }),
      );
  if (looked instanceof Committed) return already(looked.claim);
  first = looked;
  // So is a v2 task whose files cannot go into the target (an append clash): planned again once claimed.
  const planned = (o: Output) =>
    planV2(env, layout, job, attemptDir, taskFilesOf(o.files)).then(
      () => null,
      (e: unknown) => refusedV2(env, layout, job, taskAttempt, ctx, e),
    );
  const byOtherRun = first && job.algorithm === 'v2' ? await planned(first) : null;
  if (byOtherRun) return already(byOtherRun.claim);
  try {
    if (first) {
      await decideCommit(env, layout, job, taskAttempt, mine);
      // A `stage` that found the attempt undecided once its files were written may have written
      // them after the first listing: the claim lists what the attempt holds once decided. (Refused
      // now, the attempt stays decided: another run of it may be going on with the decision.)
      // None left to list: the job's end may have removed them since the first look, or another
      // run of this attempt committed it whole.
      const listed = await attemptOutput(env, layout, job, task, taskAttempt).catch((e: unknown) =>
        committedMeanwhile(env, layout, ctx, taskAttempt, e, { job, mine, endFirst: true }),
      );
      if (listed instanceof Committed) return already(listed.claim);
      output = listed;
      if (
        job.algorithm === 'v2' &&
        (output.files.list.length !== first.files.list.length || output.files.bytes !== first.files.bytes)
      ) {
        const other = await planned(output);
        if (other) return already(other.claim);
      }
    }
    const claiming = output?.files ?? (before ? claimFilesOfRecord(before) : null);
    if (claiming)
      env.emit({ type: 'progress', label: 'claiming', done: 0, total: claiming.list.length, bytes: claiming.bytes });
    ({ claim, files } = await claimTask(env, layout, job, { task, attempt, taskAttempt }, before, output, mine));
  } catch (e) {
    // A recover or abort that ran meanwhile removes the app attempt's dirs, and a store reports that
    // as it may (not found; an IOException from WebHDFS): say what it did, if it did anything. A
    // claim made whose answer was lost, which recover finished and carried, is this task's commit.
    if (!(e instanceof StoreError) || (await checkNotOverlooked(env, layout, job, task, taskAttempt, mine)) === 'go')
      throw e;
    const made = output?.files ?? claimFilesOfRecord(before!);
    return result('committed', made.list.length, made.bytes);
  }
  // Recover finished this claim and carried it into its app attempt (S3: the files stay where they were staged).
  if ((await checkNotOverlooked(env, layout, job, task, taskAttempt, mine)) === 'carried')
    return result('committed', files.list.length, files.bytes);
  let removedMeanwhile: StoreError | OutputVanished | null = null;
  try {
    // Only the run that made the claim may let it go (another run of this attempt may be publishing under it).
    const root = await promote(env, layout, job, attemptDir, task, files, mine.claim !== undefined);
    await store.writeFile(layout.claimFile(app, task), encodeClaimWith({ ...claim, state: 'committed', root }, files));
    await settleAttemptUploads(store, layout, job, taskAttempt, files.uploads, env.concurrency, output?.pending);
  } catch (e) {
    // v2: another run of this attempt made the claim after this one began, and published the same
    // files first: its commit is this one's (waited for while it runs), never a clash with the
    // task's own files. (A claim there before this run began is an earlier run's, dead or elsewhere.)
    if (e instanceof ConflictError && job.algorithm === 'v2' && !mine.claim && before === null) {
      const other = await otherRunCommitted(env, layout, ctx, taskAttempt, false);
      if (other) return already(other.claim);
    }
    // A recover or abort that ran meanwhile removes the app attempt's dirs: what it did is told below.
    if (!(e instanceof StoreError || e instanceof OutputVanished)) throw e;
    removedMeanwhile = e;
  }
  const unchanged = await checkKept(env, layout, job, task, taskAttempt, mine);
  if (removedMeanwhile && unchanged) {
    // Another run of this attempt promoted it first (its rename took the dir from under ours).
    if (await otherRunCommitted(env, layout, ctx, taskAttempt))
      return result('committed', files.list.length, files.bytes);
    // Nothing moved the job on: the store failed this step, which a re-run finishes.
    throw removedMeanwhile;
  }
  return result('committed', files.list.length, files.bytes);
}

/** Another run of this attempt committed it whole since this run first looked. */
class Committed {
  constructor(readonly claim: ClaimRecord) {}
}

/**
 * The attempt's output could not be read (its dir gone: "never staged"): another run of this
 * attempt may have committed it meanwhile, and promoted its dir (waited for as otherRunCommitted
 * does). Then this run is done too. Or the job ended meanwhile (an abort took the dir): that is
 * said (exit 4), not "never staged"; `endFirst`: asked before the other run is.
 */
async function committedMeanwhile(
  env: StepEnv,
  layout: JobLayout,
  ctx: ClaimContext,
  taskAttempt: string,
  e: unknown,
  run: { job: JobManifest; mine: RunRecords; endFirst?: boolean },
): Promise<Committed> {
  if (!(e instanceof UsageError)) throw e;
  // Recover may have carried the attempt's committed claim into its next app attempt: committed.
  const ended = async (): Promise<Committed | null> => {
    if (await stillStaged(env, layout, run.job)) return null;
    if ((await checkNotOverlooked(env, layout, run.job, ctx.task, taskAttempt, run.mine)) !== 'carried') return null;
    const now = await loadJob(env.store, layout);
    const claim = now && (await readClaimRecord(env.store, layout, { ...ctx, appAttempt: now.appAttempt }));
    return claim ? new Committed(claim) : null;
  };
  const carried = run.endFirst ? await ended() : null;
  if (carried) return carried;
  const other = await otherRunCommitted(env, layout, ctx, taskAttempt);
  if (other) return other;
  const claim = await readClaimRecord(env.store, layout, ctx);
  if (claim && claim.taskAttempt !== taskAttempt) throw denied(claim, taskAttempt);
  const later = run.endFirst ? null : await ended();
  if (later) return later;
  throw e;
}

/**
 * Whether another run of this attempt committed it: its claim marked committed, waited for while
 * it says claimed and the attempt dir is gone (that run's promotion took it; `dirMoves` false: a
 * v2 run, which publishes file by file, is waited for while its claim says claimed), up to 30 s;
 * exit 4 when that run has not finished by then; null when no other run of this attempt took it.
 */
async function otherRunCommitted(
  env: StepEnv,
  layout: JobLayout,
  ctx: ClaimContext,
  taskAttempt: string,
  dirMoves = true,
): Promise<Committed | null> {
  const seen = await waitFor(env.now, Math.min(30_000, env.leaseTtlMs), async () => {
    const [claim, dir] = await Promise.all([
      readClaimRecord(env.store, layout, ctx),
      dirMoves ? env.store.stat(layout.attemptDir(ctx.appAttempt, taskAttempt)) : null,
    ]);
    if (claim?.taskAttempt !== taskAttempt) return null;
    if (claim.state === 'committed') return new Committed(claim);
    return dir !== null ? null : undefined;
  });
  if (seen === undefined)
    throw new ConflictError(
      `another run of ${taskAttempt} moved its files while this one committed, and has not finished: run commit-task again once it has ended`,
    );
  return seen;
}

/** The attempt's decision: commit, unless an abort of it came first (protocol.md §5.9). */
async function decideCommit(
  env: StepEnv,
  layout: JobLayout,
  job: JobManifest,
  taskAttempt: string,
  mine: RunRecords,
): Promise<void> {
  const ours = { atMs: env.now(), by: decidedBy(env) };
  const decision = await decide(
    env.store,
    layout,
    job.appAttempt,
    { taskAttempt, outcome: 'commit', ...ours, jobStagedAtMs: job.stagedAtMs },
    job,
  );
  if (decision.atMs === ours.atMs && decision.by === ours.by) mine.decision = ours;
  if (decision.outcome === 'abort') throw abortedError(taskAttempt, decision);
}

/** Whether the job is still as the step first read it: staged, in the same app attempt. */
async function stillStaged(env: StepEnv, layout: JobLayout, job: JobManifest): Promise<boolean> {
  const now = await loadJob(env.store, layout).catch(() => null);
  return now !== null && isSameJob(now, job) && now.state === 'staged' && now.appAttempt === job.appAttempt;
}

/**
 * The attempt's claim, once it is decided: the first attempt to create it wins, the same attempt
 * again finds its own. A re-run after a killed commit-task takes the claim it made (`before`),
 * once the decision still says commit.
 */
async function claimTask(
  env: StepEnv,
  layout: JobLayout,
  job: JobManifest,
  a: { task: string; attempt: number; taskAttempt: string },
  before: ClaimRecord | null,
  output: { files: ClaimFiles; versionDigest: string | null } | null,
  mine: RunRecords,
): Promise<{ claim: ClaimHeader; files: ClaimFiles }> {
  const { store } = env;
  const app = job.appAttempt;
  const { task, taskAttempt } = a;
  if (!output) {
    await decideCommit(env, layout, job, taskAttempt, mine);
    // A re-run after a killed commit: temps must not move into the committed dir with the rest.
    await eachAttemptFile(store, layout.attemptDir(app, taskAttempt), { removeTemps: true }, () => {});
    return { claim: headerOf(before!), files: claimFilesOfRecord(before!) };
  }
  const fresh: ClaimHeader = {
    ...a,
    appAttempt: app,
    state: 'claimed',
    claimedAtMs: env.now(),
    host: env.host,
    pid: env.pid,
    versionDigest: output.versionDigest,
    jobStagedAtMs: job.stagedAtMs,
  };
  if (await store.createExclusive(layout.claimFile(app, task), encodeClaimWith(fresh, output.files))) {
    mine.claim = fresh;
    return { claim: fresh, files: output.files };
  }
  const standing = await readClaimRecord(store, layout, {
    jobId: job.jobId,
    task,
    appAttempt: app,
    jobStagedAtMs: job.stagedAtMs,
  });
  if (!standing)
    throw new ConflictError(
      `the claim of task ${task} vanished while ${taskAttempt} claimed it (recover ran meanwhile?): run commit-task again`,
    );
  if (standing.taskAttempt !== taskAttempt) throw denied(standing, taskAttempt);
  return { claim: headerOf(standing), files: claimFilesOfRecord(standing) };
}

function headerOf(record: ClaimRecord): ClaimHeader {
  const { fileCount, bytes, eachFile, ...header } = record;
  return header;
}

/**
 * A v2 task refused by a clash before its claim: the clash may be its own winning attempt's output,
 * or another run of this attempt publishing it (its commit is this one's, waited for), or it was aborted.
 */
async function refusedV2(
  env: StepEnv,
  layout: JobLayout,
  job: JobManifest,
  taskAttempt: string,
  ctx: ClaimContext,
  e: unknown,
): Promise<Committed> {
  if (!(e instanceof ConflictError)) throw e;
  const [claim, decision] = await Promise.all([
    readClaimRecord(env.store, layout, ctx),
    readDecision(env.store, layout, job.appAttempt, taskAttempt, job),
  ]);
  if (claim && claim.taskAttempt !== taskAttempt) throw denied(claim, taskAttempt);
  if (decision?.outcome === 'abort') throw abortedError(taskAttempt, decision);
  const other = claim && (await otherRunCommitted(env, layout, ctx, taskAttempt, false));
  if (other) return other;
  throw e;
}

/**
 * Moves the attempt's output where commit-job expects it; returns its staging-relative root. A v2
 * task that this run claimed (`fresh`), met by a clash with nothing of it published, lets its
 * claim go: free for another attempt.
 */
async function promote(
  env: StepEnv,
  layout: JobLayout,
  job: JobManifest,
  attemptDir: string,
  task: string,
  files: ClaimFiles,
  fresh: boolean,
): Promise<string> {
  const { store } = env;
  if (job.algorithm === 'v2') {
    env.emit({ type: 'phase', label: `publishing ${files.list.length} file(s)` });
    const onPublished = (done: number, total: number) =>
      env.emit({ type: 'progress', label: 'publishing', done, total });
    const clash = await publishClaimedV2({ ...env, onPublished }, layout, job, attemptDir, taskFilesOf(files), fresh);
    if (clash) {
      await store.delete(layout.claimFile(job.appAttempt, task), false);
      throw clash;
    }
    return '';
  }
  const root = await promoteOutput(
    store,
    attemptDir,
    layout.committedTaskDir(job.appAttempt, task),
    files.list.length > 0,
  );
  if (root === null) {
    throw new OutputVanished(
      `the output of ${posix.basename(attemptDir)} vanished from ${store.toUri(attemptDir)} before it was committed: run the task again as a new attempt`,
    );
  }
  return layout.relative(root);
}

/**
 * The attempt's output gone when it was to be promoted: said as is only when the job did not move on meanwhile (an
 * abort, a recover).
 */
class OutputVanished extends ConflictError {}
