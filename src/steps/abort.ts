// abort: throws away one task attempt, or the whole job's staged data (refused past the commit point).
// Keeps protocol.md §5.9 (one decision per attempt) and §5.18 (an adopted leftover goes back).

import { BlockedError, ConflictError, StoreError } from '../errors.js';
import { posix } from 'node:path';
import { claimedUploads, readClaim, readClaims } from '../job/claims.js';
import { decide, decidedBy, decider, readDecision } from '../job/decisions.js';
import { publishedV2Tasks } from '../job/published.js';
import { isSameJob, loadJob, saveJob, type JobManifest } from '../job/job.js';
import { waitFor } from '../util/wait.js';
import { checkAttempt, checkTaskId } from '../paths.js';
import { abortRecordedUploads, settleAttemptUploads } from '../job/pending-uploads.js';
import { JobGoneError, openJob, requireState, type OpenJob } from '../job/open.js';
import { processGone, type Lease } from '../job/lease.js';
import { removeStagingDir } from '../job/staging-dir.js';
import { giveBackLeftover, giveBackProblem, leftoverToGiveBack } from '../job/adoption.js';
import { ADOPTED_DIR, RESUMED_FILE, taskAttemptName } from '../job/layout.js';
import { attemptFiles } from '../job/tasks.js';
import { walkFiles } from '../store/walk.js';
import { currentAttempt } from './task-attempts.js';
import { attemptContext, attemptDirOf, claimContextOf, type AttemptContext } from './attempt-context.js';
import type { FencedEnv, StepEnv } from './env.js';
import { readHeldPlan } from './held-plan.js';
import { runLeasedStep, runStep } from './runner.js';
import { checkUnlocked, type PlannedOperation } from './effects.js';
import { removeEmptyDirs } from '../store/operations.js';
import { keepsPendingUploads } from '../store/uploads.js';
import { removeOwnRecords, takeBackIfEnded, type RunRecords } from './task-debris.js';
import { carried } from './task-race.js';

export interface AbortInput {
  readonly stagingPath: string;
  readonly task?: string;
  readonly attempt?: number;
  /**
   * An age-judged abort (clean-orphans): a job resumed after this store time is left alone (exit 4),
   * as its lease holder reads `_resumed.yaml` (protocol.md §6.1).
   */
  readonly unlessResumedAfterMs?: number;
}

export interface AbortResult {
  readonly jobId?: string;
  /** 'aborted'; 'nothing' when the handle names no job (like rm -f). */
  readonly outcome: 'aborted' | 'nothing';
  readonly scope: 'job' | 'task';
  readonly taskAttempt?: string;
  /** A task abort of an attempt whose commit had been denied (another attempt won): only its files go. */
  readonly wasDenied?: boolean;
  /** An adopted job's leftover, renamed back to where adopt found it (local, HDFS). */
  readonly leftoverGivenBack?: string;
  /** A v2 job's tasks that had claimed their output: what they published stays in the target (job scope). */
  readonly publishedTasks?: readonly string[];
}

export async function abort(env: StepEnv, input: AbortInput): Promise<AbortResult> {
  const scope = input.task === undefined ? 'job' : 'task';
  const task = input.task === undefined ? undefined : checkTaskId(input.task);
  const given = input.attempt === undefined ? undefined : checkAttempt(input.attempt);
  const ifGone = (gone: JobGoneError): AbortResult => abortGone(env, gone, scope);
  if (task !== undefined)
    return runStep(env, input.stagingPath, { name: 'abort', ifGone }, async (open) => {
      const attempt = given ?? (await currentAttempt(env.store, open.layout, open.job, task, 'commit'));
      return abortTask(attemptContext(env, open, task, attempt), open);
    });
  return runLeasedStep(env, input.stagingPath, { name: 'abort', ifGone }, async (run) => {
    if (input.unlessResumedAfterMs !== undefined) await checkNotResumed(run.env, run.open, input.unlessResumedAfterMs);
    return abortJobLocked(run.env, run.open, run.lease);
  });
}

/** Under the lease: a job a rerun resumed after `afterMs` (store time) is in use again (exit 4). */
async function checkNotResumed(env: StepEnv, open: OpenJob, afterMs: number): Promise<void> {
  const marker = await env.store.stat(posix.join(open.layout.root, RESUMED_FILE));
  if (marker && marker.mtimeMs > afterMs)
    throw new ConflictError({
      reason: 'resumed-meanwhile',
      jobId: open.job.jobId,
      at: new Date(marker.mtimeMs).toISOString(),
    });
}

/**
 * Nothing to abort; but a job that committed cannot be undone, and a script must not take that
 * for a clean abort: exit 2, as every step that would change a finished job.
 */
function abortGone(env: StepEnv, gone: JobGoneError, scope: 'job' | 'task'): AbortResult {
  const done = gone.committed;
  if (done) {
    throw new JobGoneError(
      { reason: 'job-finished-abort', jobId: done.jobId, success: done.success, committedAt: done.committedAt },
      done,
    );
  }
  if (gone.stray) env.emit({ type: 'warn', message: gone.message });
  return { outcome: 'nothing', scope };
}

/** The whole job's abort, under its lease: refused past the commit point. */
async function abortJobLocked(env: FencedEnv, opened: OpenJob, lease: Lease): Promise<AbortResult> {
  // Read again under the lease: a plan no entry names was never applied, and the job may be aborted.
  const locked = opened.plans?.length ? (await readHeldPlan(env, opened, { load: false })).open : opened;
  // Past its commit point a job only rolls forward: an abort never passes, however often it runs (exit 6).
  if (locked.state === 'committing')
    throw new BlockedError({ reason: 'wrong-state', doing: 'abort', jobId: locked.job.jobId, state: locked.state });
  requireState(locked, ['staged', 'aborted'], 'abort');
  const { job, layout } = locked;
  const { published, back } = await jobAbortEffects(env, locked);
  if (job.state !== 'aborted') {
    await saveJob(env.store, layout, {
      ...job,
      state: 'aborted',
      ...(published.length ? { publishedTasks: published } : {}),
    });
  }
  await abortJobUploads(env, locked);
  // An adopted leftover goes back where the engine left it, never with the staging dir.
  await giveBackLeftover(env.store, layout, job);
  env.emit({ type: 'phase', label: 'removing the staging dir' });
  await removeStagingDir(env.store, layout, lease);
  return {
    jobId: job.jobId,
    outcome: 'aborted' as const,
    scope: 'job',
    ...(back ? { leftoverGivenBack: env.store.toUri(back.to!) } : {}),
    ...(published.length ? { publishedTasks: published } : {}),
  };
}

/** What aborting a whole job changes, read before it changes anything: the real abort's effects and its dry run's. */
interface JobAbortEffects {
  /** A v2 job's tasks that published: read before the state changes, and kept in it (a rerun finds no claims). */
  readonly published: readonly string[];
  /** An adopted leftover renamed back to where adopt found it, before the staging dir goes. */
  readonly back: { readonly from: string; readonly to: string | null } | null;
  readonly operations: readonly PlannedOperation[];
}

async function jobAbortEffects(env: StepEnv, { job, layout }: OpenJob): Promise<JobAbortEffects> {
  const { store } = env;
  const [published, back] = await Promise.all([
    publishedV2Tasks(store, layout, job),
    leftoverToGiveBack(store, layout, job),
  ]);
  return {
    published,
    back,
    operations: [
      ...(job.state === 'aborted' ? [] : [{ op: 'write', path: store.toUri(layout.jobFile) }]),
      ...(back ? [{ op: 'rename', from: store.toUri(back.from), to: store.toUri(back.to ?? '') }] : []),
      { op: 'delete', path: job.staging, dir: true },
    ],
  };
}

/**
 * One decision per attempt (protocol.md §5.9): the abort wins only by creating the attempt's decision
 * first. After a commit-task has decided, its output belongs to the job (exit 4).
 */
async function abortTask(a: AttemptContext, open: OpenJob): Promise<AbortResult> {
  const { env, layout, job, taskAttempt } = a;
  const { store } = env;
  requireState(open, ['staged'], 'abort a task attempt');
  const app = job.appAttempt;
  const ours = { atMs: env.now(), by: decidedBy(env) };
  let wasDenied = false;
  let failed: StoreError | null = null;
  try {
    wasDenied = await decideAbort(a, ours);
  } catch (e) {
    // A recover or an abort that ran meanwhile removes the app attempt's dirs, and a store reports
    // that as it may (not found, a directory that went as it was made): said below, if so.
    if (!(e instanceof StoreError)) throw e;
    failed = e;
  }
  // The job ended (its abort or commit removed the staging dir) or a new job took its place while
  // this decided: the decision written since is debris (protocol.md §5.12), taken back as a commit-task's is.
  // recover writes the next app attempt into _job.yaml before it prunes this one's decisions, so a
  // decision created here with the job still in this app attempt is one that recover sees.
  const now = await loadJob(store, layout).catch(() => null);
  if (await takeBackIfEnded(a, now, { decision: ours })) return aborted(job, taskAttempt, wasDenied);
  if (now && now.appAttempt !== app) {
    // What recover carried (a committed attempt, its files and uploads where they were staged) is not touched.
    await droppedByRecover(a, now, ours);
    return aborted(job, taskAttempt, wasDenied);
  }
  if (failed) throw failed;
  await store.delete(attemptDirOf(a), true);
  await settleAttemptUploads(store, a, [], env.concurrency);
  return aborted(job, taskAttempt, wasDenied);
}

/**
 * The abort's decision for the attempt. True when another attempt won the task: this one's files
 * were never going to appear. A commit decided first wins, unless its commit-task's outcome moved
 * the attempt out of the job (exit 4 otherwise).
 */
async function decideAbort(a: AttemptContext, ours: { atMs: number; by: string }): Promise<boolean> {
  const { env, layout, job, taskAttempt } = a;
  const decision = await decide(
    env.store,
    layout,
    job.appAttempt,
    { taskAttempt, outcome: 'abort', ...ours, jobStagedAtMs: job.stagedAtMs },
    job,
  );
  if (decision.outcome !== 'commit') return false;
  const claim = await readClaim(env.store, layout, claimContextOf(a));
  if (claim && claim.taskAttempt !== taskAttempt) return true;
  // Its commit-task still committing: what it comes to decides (protocol.md §5.19: a recover that
  // undoes it meanwhile drops the attempt, whose files then do not belong to the job).
  const settled = claim?.state === 'committed' ? await committedStays(a) : await settledCommit(a, decision.by);
  if (settled === 'stuck') {
    // Its outcome is recover's to decide: abort cannot say the files belong to the job.
    throw new BlockedError({ reason: 'abort-undecided', taskAttempt, by: decision.by });
  }
  if (settled !== 'moved') {
    const state = settled === 'committed' ? 'committed' : 'committing';
    throw new BlockedError({ reason: 'attempt-belongs-to-job', taskAttempt, state });
  }
  return false;
}

/**
 * A claim committed in this app attempt, once recover started the next one, holds only if recover
 * carried it (a commit-task that wrote it after recover's look left it behind): 'moved' otherwise.
 */
async function committedStays(
  a: AttemptContext,
  read?: { readonly now: JobManifest | null },
): Promise<'committed' | 'moved'> {
  const now = read ? read.now : await loadJob(a.env.store, a.layout).catch(() => null);
  if (!now || !isSameJob(now, a.job) || now.appAttempt === a.job.appAttempt) return 'committed';
  return (await carried(a, now)) ? 'committed' : 'moved';
}

/**
 * What an attempt whose commit-task decided first comes to, waited for (up to 30 s, or the lease
 * time): 'committed', 'moved' when its job ended or recover started the next app attempt (said
 * after), 'stuck' when its commit-task is known dead, undefined while it is still committing.
 */
async function settledCommit(a: AttemptContext, by: string): Promise<'committed' | 'moved' | 'stuck' | undefined> {
  const { env, layout, job, taskAttempt } = a;
  // The decision names its commit-task: one known dead before its claim is not waited for either.
  const who = decider(by);
  return waitFor(env.now, Math.min(30_000, env.leaseTtlMs), async () => {
    const [claim, now] = await Promise.all([
      readClaim(env.store, layout, claimContextOf(a)).catch(() => null),
      loadJob(env.store, layout).catch(() => null),
    ]);
    if (claim?.taskAttempt === taskAttempt && claim.state === 'committed') return committedStays(a, { now });
    // The job moved on first: a commit-task that recover finished or undid has ended, and is gone.
    if (!now || !isSameJob(now, job) || now.appAttempt !== job.appAttempt) return 'moved';
    // A commit-task known to be dead is not waited for: recover finishes or undoes it.
    if (claim?.taskAttempt === taskAttempt ? processGone(claim, env) : !claim && who !== null && processGone(who, env))
      return 'stuck';
    return undefined;
  });
}

const aborted = (job: JobManifest, taskAttempt: string, wasDenied: boolean): AbortResult => ({
  jobId: job.jobId,
  outcome: 'aborted',
  scope: 'task',
  taskAttempt,
  wasDenied,
});

/**
 * recover started the job's next app attempt while this abort ran. It carried the task attempt
 * only if it was committed (exit 4: its files belong to the job); else it dropped it, which is
 * what the abort wanted, and the decision this run made in the app attempt recover removed (in a
 * directory its creation made again) goes.
 */
async function droppedByRecover(
  a: AttemptContext,
  now: JobManifest,
  ours: Required<RunRecords>['decision'],
): Promise<void> {
  const { env, layout, job, taskAttempt } = a;
  if (await carried(a, now)) {
    throw new BlockedError({ reason: 'attempt-carried', taskAttempt, appAttempt: now.appAttempt, jobId: job.jobId });
  }
  await removeOwnRecords(a, { decision: ours });
  await removeEmptyDirs(env.store, [layout.decisionsDir(job.appAttempt)], layout.root, true);
  env.emit({
    type: 'warn',
    message: `recover started app attempt ${now.appAttempt} of job ${job.jobId} while this abort ran, without ${taskAttempt}: nothing of it will be published`,
  });
}

/** Every upload the job began, recorded or claimed, is aborted (S3): none will be completed. */
export async function abortJobUploads(env: StepEnv, open: OpenJob): Promise<void> {
  const { store } = env;
  const { job, layout } = open;
  if (!keepsPendingUploads(store)) return;
  // A job being thrown away is not held up by a damaged claim: its uploads, if any, are left to clean-orphans' age
  // rule.
  const claimed = await claimedUploads(store, layout, job, env.concurrency, (file, e) =>
    env.emit({
      type: 'warn',
      message: `${file} could not be read (${e.message}): any pending upload it named is left for 'stagecommit clean-orphans'`,
    }),
  );
  await abortRecordedUploads(store, layout, new Set(), env.concurrency, {
    targetPath: job.targetPath,
    extra: claimed,
  });
}

export interface AbortDryRun {
  readonly dryRun: true;
  readonly jobId?: string;
  readonly outcome: 'aborted' | 'nothing';
  readonly scope: 'job' | 'task';
  readonly taskAttempt?: string;
  readonly files: number;
  readonly bytes: number;
  /** An adopted job's leftover, which abort renames back to where adopt found it (local, HDFS). */
  readonly givesBack?: { readonly from: string; readonly to: string; readonly files: number; readonly bytes: number };
  /** A v2 job's tasks that had claimed their output: what they published stays in the target. */
  readonly publishedTasks?: readonly string[];
  readonly operations: readonly PlannedOperation[];
}

export async function abortDryRun(
  env: StepEnv,
  input: { stagingPath: string; task?: string; attempt?: number },
): Promise<AbortDryRun> {
  const scope = input.task === undefined ? 'job' : 'task';
  const task = input.task === undefined ? undefined : checkTaskId(input.task);
  const givenAttempt = input.attempt === undefined ? undefined : checkAttempt(input.attempt);
  let open: OpenJob;
  try {
    open = await openJob(env, input.stagingPath);
  } catch (e) {
    if (!(e instanceof JobGoneError)) throw e;
    abortGone(env, e, scope);
    return { dryRun: true, outcome: 'nothing', scope, files: 0, bytes: 0, operations: [] };
  }
  return task === undefined ? jobAbortDryRun(env, open) : taskAbortDryRun(env, open, task, givenAttempt);
}

/** What `abort --task` would do: decide the attempt aborted (unless decided) and delete its dir. */
async function taskAbortDryRun(
  env: StepEnv,
  open: OpenJob,
  task: string,
  givenAttempt: number | undefined,
): Promise<AbortDryRun> {
  const { store } = env;
  const { job, layout } = open;
  requireState(open, ['staged'], 'abort a task attempt');
  const attempt = givenAttempt ?? (await currentAttempt(store, layout, job, task, 'commit'));
  const taskAttempt = taskAttemptName(job.jobId, task, attempt);
  const decision = await readDecision(store, layout, job.appAttempt, taskAttempt);
  const claims = await readClaims(store, layout, { jobId: job.jobId, appAttempt: job.appAttempt });
  if (decision?.outcome === 'commit' && (claims.get(task)?.taskAttempt ?? taskAttempt) === taskAttempt) {
    const state = claims.get(task)?.state === 'committed' ? 'committed' : 'committing';
    throw new BlockedError({ reason: 'attempt-belongs-to-job', taskAttempt, state });
  }
  const dir = layout.attemptDir(job.appAttempt, taskAttempt);
  const files = await attemptFiles(store, dir, { details: true });
  const operations = [
    ...(decision ? [] : [{ op: 'create', path: store.toUri(layout.decisionFile(job.appAttempt, taskAttempt)) }]),
    { op: 'delete', path: store.toUri(dir), dir: true },
  ];
  return {
    dryRun: true,
    jobId: job.jobId,
    outcome: 'aborted',
    scope: 'task',
    taskAttempt,
    files: files.length,
    bytes: files.reduce((a, f) => a + Math.max(0, f.size), 0),
    operations,
  };
}

/** What `abort` of a whole job would do: throw its staged data away, give an adopted leftover back. */
async function jobAbortDryRun(env: StepEnv, open: OpenJob): Promise<AbortDryRun> {
  const { store } = env;
  const { job, layout } = open;
  await checkUnlocked(env, layout);
  requireState(open, ['staged', 'aborted'], 'abort');
  const { published, back, operations } = await jobAbortEffects(env, open);
  // The staged data: what is under the task dirs, not the job's own manifests nor an adopted leftover (it is given
  // back).
  const files = (await walkFiles(store, layout.root, { details: true })).filter(
    (f) => f.name.includes('/') && !/(^|\/)_(claims|decisions)\//.test(f.name),
  );
  const given = files.filter((f) => f.name.startsWith(ADOPTED_DIR + '/'));
  const thrown = files.filter((f) => !f.name.startsWith(ADOPTED_DIR + '/'));
  const sum = (fs: typeof files) => fs.reduce((a, f) => a + Math.max(0, f.size), 0);
  const problem = back && (await giveBackProblem(store, job, back));
  if (problem) throw problem;
  return {
    dryRun: true,
    jobId: job.jobId,
    outcome: 'aborted',
    scope: 'job',
    files: thrown.length,
    bytes: sum(thrown),
    ...(back
      ? {
          givesBack: {
            from: store.toUri(back.from),
            to: store.toUri(back.to!),
            files: given.length,
            bytes: sum(given),
          },
        }
      : {}),
    ...(published.length ? { publishedTasks: published } : {}),
    operations,
  };
}
