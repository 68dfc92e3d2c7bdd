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
import { settleAttemptUploads } from '../job/pending-uploads.js';
import { checkAttempt, checkTaskId } from '../paths.js';
import { eachAttemptFile } from '../job/tasks.js';
import { planV2, publishClaimedV2, publishedV2Count } from '../plan/publish-v2.js';
import type { ApplyContext } from '../plan/apply.js';
import { promoteOutput } from '../store/operations.js';
import { requireState, type OpenJob } from '../job/open.js';
import { abortedError, attemptOutput } from './attempt-output.js';
import { attemptContext, attemptDirOf, claimContextOf, type AttemptContext } from './attempt-context.js';
import { otherLiveProcessHere, type StepEnv } from './env.js';
import { runStep } from './runner.js';
import { currentAttempt } from './task-attempts.js';
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
  /** The attempt's number: the one given, or the one the task's claim names (else its newest). */
  readonly attempt: number;
  /** 'committed' now, or 'already' when this attempt had committed before (idempotent re-run). */
  readonly outcome: 'committed' | 'already';
  readonly files: number;
  readonly bytes: number;
}

function denied(claim: ClaimHeader, mine: string): CommitDeniedError {
  return new CommitDeniedError({
    reason: 'other-attempt-won',
    taskAttempt: mine,
    task: claim.task,
    winner: claim.taskAttempt,
    host: claim.host,
    pid: claim.pid,
  });
}

/** A task id outside the declared tasks would commit output that commit-job never asks for. */
export function checkDeclared(job: JobManifest, task: string, what = 'committed'): void {
  if (job.tasks !== undefined && !(/^\d+$/.test(task) && Number(task) < job.tasks)) {
    throw new UsageError({ reason: 'task-not-declared', task, tasks: job.tasks, what });
  }
}

export async function commitTask(env: StepEnv, input: CommitTaskInput): Promise<CommitTaskResult> {
  const task = checkTaskId(input.task);
  const given = input.attempt === undefined ? undefined : checkAttempt(input.attempt);
  return runStep(
    env,
    input.stagingPath,
    { name: 'commit-task', ifGone: (gone) => taskOfGoneJob(gone, task) },
    async (open) => {
      const attempt = given ?? (await currentAttempt(env.store, open.layout, open.job, task, 'commit'));
      return commitAttempt(attemptContext(env, open, task, attempt), open);
    },
  );
}

/** What one run of commit-task has learnt so far, step by step. */
interface CommitRun {
  readonly a: AttemptContext;
  /** The task's claim in the job's app attempt, refusing one made for an earlier job of this id. */
  readonly ctx: ClaimContext;
  /** The task's claim as this run first found it (a re-run after a killed commit-task finds its own). */
  readonly before: ClaimRecord | null;
  readonly mine: RunRecords;
  /** The attempt's files as first listed, before the decision. */
  first: Output | null;
  /** The attempt's files listed again once decided: what the claim lists. */
  output: Output | null;
  /** The files of the claim this run holds. */
  files?: ClaimFiles;
}

function resultOf(
  a: AttemptContext,
  outcome: CommitTaskResult['outcome'],
  files: number,
  bytes: number,
): CommitTaskResult {
  return { jobId: a.job.jobId, task: a.task, taskAttempt: a.taskAttempt, attempt: a.attempt, outcome, files, bytes };
}

/** The attempt committed by this run (or by a run that this one finds finished it). */
function committed(a: AttemptContext, files: ClaimFiles): CommitTaskResult {
  return resultOf(a, 'committed', files.list.length, files.bytes);
}

/** The attempt committed before this run: its claim says which files it has. */
function already(a: AttemptContext, c: ClaimRecord): CommitTaskResult {
  c.eachFile(() => {});
  return resultOf(a, 'already', c.fileCount, c.bytes);
}

/** Check the files, decide, list them again, claim the task, promote and record them (protocol.md §5.9, §5.11). */
async function commitAttempt(a: AttemptContext, open: OpenJob): Promise<CommitTaskResult> {
  checkDeclared(a.job, a.task);
  const before = await claimBefore(a, open);
  // Read through all the same: its paths are checked as every claim's are (protocol.md §5.11).
  if (before?.state === 'committed') return already(a, before);
  const run: CommitRun = { a, ctx: claimContextOf(a), before, mine: {}, first: null, output: null };
  // What a v2 task left in the target (this run, or an earlier one), counted only if the job's end
  // overtakes it: its message says so. Null: this run never learnt the task's files.
  if (a.job.algorithm === 'v2') run.mine.published = () => publishedOfRun(run);
  const lookedFirst = await lookFirst(run);
  if (lookedFirst) return already(a, lookedFirst.claim);
  let claimed: { claim: ClaimHeader; files: ClaimFiles };
  try {
    const decided = await decideAndList(run);
    if (decided) return already(a, decided.claim);
    claimed = await claimTask(a, before, run.output, run.mine);
    run.files = claimed.files;
  } catch (e) {
    return claimMadeMeanwhile(run, e);
  }
  return promoteClaimed(run, claimed);
}

/**
 * The task's claim before this run decides anything: another attempt's denies this one, and a job
 * being aborted commits nothing, whatever its claims say. Returned committed as it stands.
 */
async function claimBefore(a: AttemptContext, open: OpenJob): Promise<ClaimRecord | null> {
  const { env, layout, job, task, taskAttempt } = a;
  const before = await readClaimRecord(env.store, layout, claimContextOf(a));
  if (before && before.taskAttempt !== taskAttempt) throw denied(before, taskAttempt);
  if (open.state === 'aborted') await abortedJob(env, job, task, before);
  if (before?.state === 'committed') return before;
  requireState(open, ['staged'], 'commit a task');
  // A v2 publication of this attempt still running here: a second run beside it could undo it.
  if (before && job.algorithm === 'v2' && otherLiveProcessHere(before, env)) {
    const { pid, host } = before;
    throw new ConflictError({ reason: 'attempt-being-committed', step: 'commit-task', taskAttempt, host, pid });
  }
  return before;
}

/** Whether the task's files stand in the target (v2); null when this run never learnt them. */
async function publishedOfRun(run: CommitRun): Promise<boolean | null> {
  const { before } = run;
  const f = run.files ?? run.output?.files ?? run.first?.files ?? (before ? claimFilesOfRecord(before) : null);
  return f === null ? null : (await publishedV2Count(run.a.env, run.a.job, taskFilesOf(f))) > 0;
}

/**
 * The attempt's output, checked before the decision: output refused here leaves the attempt free
 * to abort or fix (a stage's temp, which may be in flight, is not touched). So is a v2 task whose
 * files cannot go into the target (an append clash): planned again once claimed. A re-run that
 * found its claim looks once decided.
 */
async function lookFirst(run: CommitRun): Promise<Committed | null> {
  run.a.env.emit({ type: 'phase', label: `reading the files of ${run.a.taskAttempt}` });
  if (run.before) return null;
  const looked = await attemptOutput(run.a, false).catch((e: unknown) => committedMeanwhile(run, e));
  if (looked instanceof Committed) return looked;
  run.first = looked;
  return run.a.job.algorithm === 'v2' ? planned(run, looked) : null;
}

/** A v2 task's files planned into the target: a clash may be another run's commit of this attempt. */
function planned(run: CommitRun, o: Output): Promise<Committed | null> {
  const { env, layout, job } = run.a;
  return planV2(env, { layout, job, attemptDir: attemptDirOf(run.a), files: taskFilesOf(o.files) }).then(
    () => null,
    (e: unknown) => refusedV2(run.a, e),
  );
}

/**
 * The decision, then the attempt's files listed again. A `stage` that found the attempt undecided
 * once its files were written may have written them after the first listing: the claim lists what
 * the attempt holds once decided. (Refused now, the attempt stays decided: another run of it may
 * be going on with the decision.) None left to list: the job's end may have removed them since
 * the first look, or another run of this attempt committed it whole.
 */
async function decideAndList(run: CommitRun): Promise<Committed | null> {
  const { a, first } = run;
  if (!first) return null;
  await decideCommit(a, run.mine);
  const listed = await attemptOutput(a).catch((e: unknown) => committedMeanwhile(run, e, true));
  if (listed instanceof Committed) return listed;
  run.output = listed;
  const grew = listed.files.list.length !== first.files.list.length || listed.files.bytes !== first.files.bytes;
  return a.job.algorithm === 'v2' && grew ? planned(run, listed) : null;
}

/**
 * A recover or abort that ran meanwhile removes the app attempt's dirs, and a store reports that
 * as it may (not found; an IOException from WebHDFS): say what it did, if it did anything. A
 * claim made whose answer was lost, which recover finished and carried, is this task's commit.
 */
async function claimMadeMeanwhile(run: CommitRun, e: unknown): Promise<CommitTaskResult> {
  if (!(e instanceof StoreError) || (await checkNotOverlooked(run.a, run.mine)) === 'go') throw e;
  return committed(run.a, run.output?.files ?? claimFilesOfRecord(run.before!));
}

/** The claim held: its files promoted, the claim marked committed, the attempt's uploads settled. */
async function promoteClaimed(
  run: CommitRun,
  { claim, files }: { claim: ClaimHeader; files: ClaimFiles },
): Promise<CommitTaskResult> {
  const { a, mine } = run;
  // Recover finished this claim and carried it into its app attempt (S3: the files stay where they were staged).
  if ((await checkNotOverlooked(a, mine)) === 'carried') return committed(a, files);
  const removedMeanwhile = await promoteAndRecord(run, claim, files);
  if (removedMeanwhile instanceof Committed) return already(a, removedMeanwhile.claim);
  const unchanged = await checkKept(a, mine);
  if (removedMeanwhile && unchanged) {
    // Another run of this attempt promoted it first (its rename took the dir from under ours).
    if (await otherRunCommitted(a)) return committed(a, files);
    // Nothing moved the job on: the store failed this step, which a re-run finishes.
    throw removedMeanwhile;
  }
  return committed(a, files);
}

/**
 * Promotes the claimed files and records the claim committed. A recover or abort that ran
 * meanwhile removes the app attempt's dirs: the store's error comes back, told by checkKept.
 */
async function promoteAndRecord(
  run: CommitRun,
  claim: ClaimHeader,
  files: ClaimFiles,
): Promise<Committed | StoreError | OutputVanished | null> {
  const { a, mine, before } = run;
  const { env, layout, job, task } = a;
  try {
    // Only the run that made the claim may let it go (another run of this attempt may be publishing under it).
    const root = await promote(a, files, mine.claim !== undefined);
    const app = job.appAttempt;
    await env.store.writeFile(
      layout.claimFile(app, task),
      encodeClaimWith({ ...claim, state: 'committed', root }, files),
    );
    await settleAttemptUploads(env.store, a, files.uploads, env.concurrency, run.output?.pending);
    return null;
  } catch (e) {
    // v2: another run of this attempt made the claim after this one began, and published the same
    // files first: its commit is this one's (waited for while it runs), never a clash with the
    // task's own files. (A claim there before this run began is an earlier run's, dead or elsewhere.)
    if (e instanceof ConflictError && job.algorithm === 'v2' && !mine.claim && before === null) {
      const other = await otherRunCommitted(a, false);
      if (other) return other;
    }
    if (!(e instanceof StoreError || e instanceof OutputVanished)) throw e;
    return e;
  }
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
async function committedMeanwhile(run: CommitRun, e: unknown, endFirst = false): Promise<Committed> {
  if (!(e instanceof UsageError)) throw e;
  const { a } = run;
  const { env, layout, taskAttempt } = a;
  // Recover may have carried the attempt's committed claim into its next app attempt: committed.
  const ended = async (): Promise<Committed | null> => {
    if (await stillStaged(a)) return null;
    if ((await checkNotOverlooked(a, run.mine)) !== 'carried') return null;
    const now = await loadJob(env.store, layout);
    const claim = now && (await readClaimRecord(env.store, layout, claimContextOf(a, now.appAttempt)));
    return claim ? new Committed(claim) : null;
  };
  const carried = endFirst ? await ended() : null;
  if (carried) return carried;
  const other = await otherRunCommitted(a);
  if (other) return other;
  const claim = await readClaimRecord(env.store, layout, run.ctx);
  if (claim && claim.taskAttempt !== taskAttempt) throw denied(claim, taskAttempt);
  const later = endFirst ? null : await ended();
  if (later) return later;
  throw e;
}

/**
 * Whether another run of this attempt committed it: its claim marked committed, waited for while
 * it says claimed and the attempt dir is gone (that run's promotion took it; `dirMoves` false: a
 * v2 run, which publishes file by file, is waited for while its claim says claimed), up to 30 s;
 * exit 4 when that run has not finished by then; null when no other run of this attempt took it.
 */
async function otherRunCommitted(a: AttemptContext, dirMoves = true): Promise<Committed | null> {
  const { env, layout, taskAttempt } = a;
  const seen = await waitFor(env.now, Math.min(30_000, env.leaseTtlMs), async () => {
    const [claim, dir] = await Promise.all([
      readClaimRecord(env.store, layout, claimContextOf(a)),
      dirMoves ? env.store.stat(attemptDirOf(a)) : null,
    ]);
    if (claim?.taskAttempt !== taskAttempt) return null;
    if (claim.state === 'committed') return new Committed(claim);
    return dir !== null ? null : undefined;
  });
  if (seen === undefined) throw new ConflictError({ reason: 'other-run-moved-files', taskAttempt });
  return seen;
}

/** The attempt's decision: commit, unless an abort of it came first (protocol.md §5.9). */
async function decideCommit(a: AttemptContext, mine: RunRecords): Promise<void> {
  const { env, layout, job, taskAttempt } = a;
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
async function stillStaged({ env, layout, job }: AttemptContext): Promise<boolean> {
  const now = await loadJob(env.store, layout).catch(() => null);
  return now !== null && isSameJob(now, job) && now.state === 'staged' && now.appAttempt === job.appAttempt;
}

/**
 * The attempt's claim, once it is decided: the first attempt to create it wins, the same attempt
 * again finds its own. A re-run after a killed commit-task takes the claim it made (`before`),
 * once the decision still says commit.
 */
async function claimTask(
  a: AttemptContext,
  before: ClaimRecord | null,
  output: { files: ClaimFiles; versionDigest: string | null } | null,
  mine: RunRecords,
): Promise<{ claim: ClaimHeader; files: ClaimFiles }> {
  const claiming = output?.files ?? (before ? claimFilesOfRecord(before) : null);
  // One create claims every file at once: the count goes from none to all.
  const progress = (done: number) =>
    claiming &&
    a.env.emit({ type: 'progress', label: 'claiming', done, total: claiming.list.length, bytes: claiming.bytes });
  progress(0);
  const claimed = await claimOnce(a, before, output, mine, claiming);
  progress(claimed.files.list.length);
  return claimed;
}

async function claimOnce(
  a: AttemptContext,
  before: ClaimRecord | null,
  output: { files: ClaimFiles; versionDigest: string | null } | null,
  mine: RunRecords,
  claiming: ClaimFiles | null,
): Promise<{ claim: ClaimHeader; files: ClaimFiles }> {
  const { env, layout, job, task, attempt, taskAttempt } = a;
  const { store } = env;
  const app = job.appAttempt;
  if (!output) {
    await decideCommit(a, mine);
    // A re-run after a killed commit: temps must not move into the committed dir with the rest.
    await eachAttemptFile(store, attemptDirOf(a), { removeTemps: true }, () => {});
    // A claim's file list is read once: `claiming` holds it.
    return { claim: headerOf(before!), files: claiming! };
  }
  const fresh: ClaimHeader = {
    task,
    attempt,
    taskAttempt,
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
  const standing = await readClaimRecord(store, layout, claimContextOf(a));
  if (!standing) throw new ConflictError({ reason: 'claim-vanished', task, taskAttempt });
  if (standing.taskAttempt !== taskAttempt) throw denied(standing, taskAttempt);
  return { claim: headerOf(standing), files: claimFilesOfRecord(standing) };
}

function headerOf(record: ClaimRecord): ClaimHeader {
  const { fileCount: _fileCount, bytes: _bytes, eachFile: _eachFile, ...header } = record;
  return header;
}

/**
 * A v2 task refused by a clash before its claim: the clash may be its own winning attempt's output,
 * or another run of this attempt publishing it (its commit is this one's, waited for), or it was aborted.
 */
async function refusedV2(a: AttemptContext, e: unknown): Promise<Committed> {
  if (!(e instanceof ConflictError)) throw e;
  const { env, layout, job, taskAttempt } = a;
  const [claim, decision] = await Promise.all([
    readClaimRecord(env.store, layout, claimContextOf(a)),
    readDecision(env.store, layout, job.appAttempt, taskAttempt, job),
  ]);
  if (claim && claim.taskAttempt !== taskAttempt) throw denied(claim, taskAttempt);
  if (decision?.outcome === 'abort') throw abortedError(taskAttempt, decision);
  const other = claim && (await otherRunCommitted(a, false));
  if (other) return other;
  throw e;
}

/**
 * Moves the attempt's output where commit-job expects it; returns its staging-relative root. A v2
 * task that this run claimed (`fresh`), met by a clash with nothing of it published, lets its
 * claim go: free for another attempt.
 */
async function promote(a: AttemptContext, files: ClaimFiles, fresh: boolean): Promise<string> {
  const { env, layout, job, task } = a;
  const { store } = env;
  const attemptDir = attemptDirOf(a);
  if (job.algorithm === 'v2') {
    env.emit({ type: 'phase', label: `publishing ${files.list.length} file(s)` });
    const onPublished: ApplyContext['onProgress'] = (done, total, copied) =>
      env.emit({ type: 'progress', label: 'publishing', done, total, ...copied });
    const v2 = { layout, job, attemptDir, files: taskFilesOf(files) };
    const clash = await publishClaimedV2({ ...env, onPublished }, v2, fresh);
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
    throw new OutputVanished({
      reason: 'output-vanished',
      attempt: posix.basename(attemptDir),
      dir: store.toUri(attemptDir),
    });
  }
  return layout.relative(root);
}

/**
 * The attempt's output gone when it was to be promoted: said as is only when the job did not move on meanwhile (an
 * abort, a recover).
 */
class OutputVanished extends ConflictError {}
