// commit-job: checks the tasks, reaches the commit point through the table log, writes the plan
// (the commit point), applies it, writes _SUCCESS and removes the staging dir. After the commit
// point it only rolls forward.
// How: protocol.md §4.2 and §4.4; it keeps §5.2, §5.3 and §5.19.

import { posix } from 'node:path';
import { BlockedError, CorruptManifestError, ExitCode, StageCommitError, StoreError, withContext } from '../errors.js';
import { claimedUploads, type TaskFile } from '../job/claims.js';
import { saveJob, type JobManifest } from '../job/job.js';
import { defaultStagingRoot, SUCCESS_FILE } from '../job/layout.js';
import { abortRecordedUploads, recordedUploads } from '../job/pending-uploads.js';
import type { Lease } from '../job/lease.js';
import { successJson } from '../job/success.js';
import { TableLog, type LogListing } from '../job/table-log.js';
import { applyPhases } from '../plan/apply.js';
import { allDone } from '../util/pool.js';
import { encodeProgress, readProgress, writePlan, type PersistedPlan, type PlanRef } from '../plan/plan-file.js';
import type { PlanPhase } from '../plan/plan.js';
import type { OpCounts } from '../store/instrumented.js';
import { isTempName } from '../store/temp-names.js';
import type { Store } from '../store/types.js';
import { preparePlan, startPlanReads, type PlanReads } from './prepare-plan.js';
import type { OpenJob } from '../job/open.js';
import { removesInBulk, removeStagingDir, stagingKeys } from '../job/staging-dir.js';
import { keepsPendingUploads, pendingUploadsUnder } from '../store/uploads.js';
import { JobGoneError, openJob } from '../job/open.js';
import type { FencedEnv, StepEnv } from './env.js';
import { readHeldPlan, type HeldPlan } from './held-plan.js';
import { commitPointUnknown } from './commit-point.js';
import { runLeasedStep } from './runner.js';
import { checkUnlocked, operationsOf, summaryOf, type PlannedOperation, type PlanSummary } from './effects.js';

export interface CommitJobInput {
  readonly stagingPath: string;
}

export interface CommitJobResult {
  readonly jobId: string;
  readonly target: string;
  /**
   * 'committed' by this run; 'rolled-forward' when an interrupted commit was finished;
   * 'already-committed' when a rerun finds the job done (its `_SUCCESS` or table-log entry).
   */
  readonly outcome: 'committed' | 'rolled-forward' | 'already-committed';
  readonly files: number;
  readonly bytes: number;
  readonly partitionsWritten: readonly string[];
  readonly partitionsReplaced: readonly string[];
  readonly success: string;
  readonly metrics: OpCounts;
  /** Set when only the clean-up was left (`_job.yaml` said committed): nothing was published by this run. */
  readonly cleanupOnly?: true;
}

function emptyPlan(job: JobManifest): PersistedPlan {
  return {
    jobId: job.jobId,
    appAttempt: job.appAttempt,
    logEntry: null,
    createdAtMs: 0,
    tasks: [],
    phases: [],
    files: 0,
    bytes: 0,
    filenames: [],
    partitionsWritten: [],
    partitionsReplaced: [],
  };
}

/**
 * What the run that made the plan knows already: the log's listing, and the claims' pending
 * uploads (read for the plan; past the commit point no claim changes).
 */
interface JustPlanned {
  readonly listing?: LogListing;
  readonly uploads?: readonly TaskFile[];
}

/**
 * After the commit point: apply the plan, write _SUCCESS, clean up. Safe to run again.
 * `finished`: the table log says the plan was applied and `_SUCCESS` written (checkHeldEntry).
 */
export async function rollForward(
  env: StepEnv,
  open: OpenJob,
  plan: PersistedPlan,
  run: {
    readonly lease?: Lease;
    readonly made?: JustPlanned;
    readonly finished?: boolean;
    readonly planName?: string;
  } = {},
): Promise<{ success: string }> {
  const { lease, made, finished = false, planName } = run;
  const { store } = env;
  const { job, layout } = open;
  const success = posix.join(job.targetPath, SUCCESS_FILE);
  const log = new TableLog(store, job.targetPath, env.logRetention);
  // An object store's staging dir is listed while the plan publishes, off the critical path:
  // after the commit point nothing but this run's own bookkeeping is added to it.
  let listed: Promise<string[] | null> | undefined;
  if (job.state !== 'committed') {
    if (removesInBulk(store)) listed = stagingKeys(store, layout).catch(() => null);
    // Before anything is published: a job whose plan is lost later is still known to be past its
    // commit point, and never planned again (protocol.md §5.10).
    // It names the plan, which is then found without the log (an entry is pruned once finished).
    if (job.state === 'staged')
      await saveJob(store, layout, { ...job, state: 'committing', ...(planName === undefined ? {} : { planName }) });
    if (finished) await confirmFinished(store, open, plan);
    else await publish(env, open, plan, success, made);
  }
  const { strays, dropped, recorded } = cleanupReads(env, open, made);
  // 'committed' and the log's done marker at once: a run killed with the marker alone written is
  // finished by the next without publishing again (`finished`); one killed with 'committed' alone
  // written marks it on its next run. Either way the log no longer holds the job's partitions.
  await allDone([
    job.state === 'committed' ? undefined : saveJob(store, layout, { ...job, state: 'committed' }),
    plan.logEntry === null
      ? undefined
      : log.markDone({ number: plan.logEntry, jobId: job.jobId }, 'committed', env.now()),
  ]);
  env.emit({ type: 'phase', label: 'removing the staging dir' });
  await abortRecordedUploads(store, layout, plannedUploads(plan.phases), env.concurrency, {
    targetPath: job.targetPath,
    extra: dropped,
    recorded,
  });
  // A job that wrote a table-log entry leaves the log beside a default staging dir: no parent to tidy.
  const parentsKept = plan.logEntry !== null && posix.dirname(layout.root) === defaultStagingRoot(job.targetPath);
  // The log is tidied by the run that made the entry, from the listing it already holds, while
  // the staging dir goes: neither touches what the other does.
  const pruned =
    made?.listing && plan.logEntry !== null
      ? log
          .prune(made.listing, plan.logEntry)
          .catch((e: unknown) =>
            env.emit({ type: 'warn', message: `could not prune the table log: ${(e as Error).message}` }),
          )
      : undefined;
  await allDone([removeStagingDir(store, layout, lease, { listed, strays, parentsKept }), pruned]);
  return { success: store.toUri(success) };
}

/**
 * The log's done marker says the plan was applied and `_SUCCESS` written: nothing is written again.
 * The progress record must agree (another job marks an entry done when the job's `_job.yaml` is gone).
 */
async function confirmFinished(store: Store, { job, layout }: OpenJob, plan: PersistedPlan): Promise<void> {
  // Replaying the plan, the way out of a damaged record, is closed once the entry is finished.
  const done = await readProgress(store, layout, plan).catch((e: unknown) => {
    if (e instanceof CorruptManifestError) return null;
    throw e;
  });
  if (done === plan.phases.length) return;
  throw new CorruptManifestError(store.toUri(layout.progressFile), {
    reason: 'progress-disagrees',
    done,
    phases: plan.phases.length,
    jobId: job.jobId,
    entry: plan.logEntry,
  });
}

/** Applies the plan from where its progress record says, and writes `_SUCCESS`. */
async function publish(
  env: StepEnv,
  open: OpenJob,
  plan: PersistedPlan,
  success: string,
  made: JustPlanned | undefined,
): Promise<void> {
  const { store } = env;
  const { job, layout } = open;
  // A plan this run just wrote has no progress yet: nothing to read.
  const phasesDone = made ? 0 : await readProgress(store, layout, plan);
  env.emit({ type: 'phase', label: `publishing ${plan.files} file(s)` });
  // The last phase's record is written beside _SUCCESS, not before it: a run killed between the
  // two replays that phase, which is safe while the table log still holds its partitions (it
  // does until the job is 'committed' and its entry marked done, written after both).
  let lastRecorded: Promise<void> | undefined;
  await applyPhases(
    {
      store,
      stagingPath: layout.root,
      targetPath: job.targetPath,
      concurrency: env.concurrency,
      dropCopiedSources: true,
      onProgress: (done, total, copied) => env.emit({ type: 'progress', label: 'publishing', done, total, ...copied }),
      // Every phase is recorded, the last one too: a replay after the log entry is finished
      // must not run a phase again over what later commits wrote.
      onPhaseDone: (phase) => {
        const recorded = store.writeFile(layout.progressFile, encodeProgress(plan, phase + 1));
        if (phase < plan.phases.length - 1) return recorded;
        lastRecorded = recorded;
        return undefined;
      },
    },
    plan.phases,
    phasesDone,
  );
  const successWritten = store.writeFile(
    success,
    successJson({
      job,
      nowMs: env.now(),
      hostname: env.host,
      filenames: plan.filenames,
      files: plan.files,
      bytes: plan.bytes,
      partitionsWritten: plan.partitionsWritten,
      partitionsReplaced: plan.partitionsReplaced,
      metrics: env.metrics(),
      targetUri: job.target,
    }),
  );
  await allDone([lastRecorded, successWritten]);
  // A driver killed while writing _SUCCESS left its temp beside it: this re-run removes it (protocol.md §5.12).
  if (job.state === 'committing' && !made) await removeSuccessTemps(store, job.targetPath);
}

/**
 * What the clean-up reads, started beside the save of 'committed' (past the commit point no claim
 * or upload record changes): uploads of attempts that lost, were denied or aborted are never
 * completed, and are aborted (S3); an append drops a claimed upload whose bytes the target already
 * holds: aborted too; and uploads a killed `stage` left in the staging dir.
 */
function cleanupReads(env: StepEnv, { job, layout }: OpenJob, made?: JustPlanned) {
  const { store } = env;
  const uploads = keepsPendingUploads(store);
  const strays = uploads ? pendingUploadsUnder(store, layout.root) : undefined;
  const dropped =
    job.mode === 'append' && uploads
      ? (made?.uploads ?? claimedUploads(store, layout, job, env.concurrency).catch(() => []))
      : [];
  const recorded = uploads ? recordedUploads(store, layout, env.concurrency) : undefined;
  for (const p of [strays, recorded]) p?.catch(() => {}); // awaited (and their failure reported) by the clean-up
  return { strays, dropped, recorded };
}

/** The upload ids a commit plan completes (kept when the job's other uploads are aborted). */
function plannedUploads(phases: readonly PlanPhase[]): Set<string> {
  const out = new Set<string>();
  for (const phase of phases) for (const op of phase) if (op.op === 'copy' && op.upload) out.add(op.upload.id);
  return out;
}

async function removeSuccessTemps(store: Store, targetPath: string): Promise<void> {
  for (const e of await store.list(targetPath)) {
    if (isTempName(e.name) && e.name.endsWith(`-${SUCCESS_FILE}`)) await store.delete(e.path, false);
  }
}

export async function commitJob(env: StepEnv, input: CommitJobInput): Promise<CommitJobResult> {
  try {
    const readAhead = (open: OpenJob) => (open.state === 'staged' ? startPlanReads(env, open) : undefined);
    return await runLeasedStep(env, input.stagingPath, { name: 'commit-job', readAhead }, (run) =>
      commitJobLocked(run.env, run.open, run.lease, { ahead: run.ahead }),
    );
  } catch (e) {
    return alreadyCommitted(env, e);
  }
}

/** A retried commit-job of a job that did commit is a success, not bad input (protocol.md §8). */
function alreadyCommitted(env: StepEnv, e: unknown): CommitJobResult {
  const done = e instanceof JobGoneError ? e.committed : null;
  if (!done) throw e;
  const stray = (e as JobGoneError).strayWarning();
  if (stray) env.emit({ type: 'warn', message: stray });
  const { jobId, target, files, bytes, partitionsWritten, partitionsReplaced, success } = done;
  return {
    jobId,
    target,
    outcome: 'already-committed',
    files,
    bytes,
    partitionsWritten,
    partitionsReplaced,
    success,
    metrics: env.metrics(),
  };
}

/**
 * A failure after the commit point changed the target, or may have: its message (exit 1) says
 * the job is committing and how to finish it, since "failed" alone reads as "nothing changed".
 * A store's "no such place" (exit 2, bad input) is exit 1 here too: the job's input was taken.
 */
function pastCommitPoint(store: Store, open: OpenJob): (e: unknown) => never {
  return (e) => {
    // A damaged record is not healed by running recover: its message says what to do.
    if (
      e instanceof StoreError ||
      (e instanceof StageCommitError && e.exitCode === ExitCode.failed && !(e instanceof CorruptManifestError))
    ) {
      throw withContext(e, {
        reason: 'past-commit-point',
        jobId: open.job.jobId,
        handle: store.toUri(open.layout.root),
      });
    }
    throw e;
  };
}

/** A committed job whose clean-up was left: rolled forward with nothing to publish. */
async function cleanUpCommitted(
  env: StepEnv,
  open: OpenJob,
  job: JobManifest,
  lease: Lease | undefined,
): Promise<CommitJobResult> {
  const { success } = await rollForward(env, open, emptyPlan(job), { lease }).catch(pastCommitPoint(env.store, open));
  return {
    jobId: job.jobId,
    target: job.target,
    outcome: 'rolled-forward',
    files: 0,
    bytes: 0,
    partitionsWritten: [],
    partitionsReplaced: [],
    success,
    metrics: env.metrics(),
    cleanupOnly: true,
  };
}

/**
 * The commit point of a plan that names no table-log entry (v2, or nothing to publish): its create,
 * once per app attempt (protocol.md §4.1). One there already was created by an earlier driver of
 * this app attempt whose write landed late: it decided the job, and is rolled forward instead.
 */
async function createOwnPlan(
  env: FencedEnv,
  open: OpenJob,
  plan: PersistedPlan,
): Promise<{ plan: PersistedPlan; ref: PlanRef | null }> {
  env.emit({ type: 'phase', label: 'writing the commit plan' });
  const created = await writePlan(env.store, open.layout, plan).catch((e: unknown) => {
    throw commitPointUnknown(env, open, e, 'plan was created');
  });
  if (created) return { plan, ref: created.ref };
  const held = await readHeldPlan(env, open);
  if (!held.plan) throw new Error(`a plan of app attempt ${open.job.appAttempt} appeared and went: ${open.job.jobId}`);
  return { plan: held.plan, ref: held.ref };
}

/**
 * commit-job's work, for a caller that holds the job lease (commit-job itself, recover).
 * `known.held`: the plan the caller read under the lease (recover); `known.ahead`: the planning
 * reads the runner started for this job, given only while it is still staged (commit-job).
 */
export async function commitJobLocked(
  env: FencedEnv,
  opened: OpenJob,
  lease: Lease,
  known: { held?: HeldPlan; ahead?: PlanReads } = {},
): Promise<CommitJobResult> {
  const { store } = env;
  const { job } = opened;
  if (opened.state === 'aborted')
    throw new BlockedError({ reason: 'job-aborted', jobId: job.jobId, leftover: job.adopted?.leftover ?? null });
  // Under the lease, a job that openJob found before its commit point has no plan to read.
  const held = known.held ?? (await readHeldPlan(env, opened));
  const { open } = held;
  let { plan, ref } = held;
  const outcome = plan ? 'rolled-forward' : 'committed';
  // Only the clean-up was left: the plan is removed just before `_job.yaml`.
  if (!plan && open.state === 'committed') return cleanUpCommitted(env, open, job, lease);
  let made: JustPlanned | undefined;
  if (!plan) {
    // A plan naming a table-log entry is written just before the entry (reachCommitPoint).
    const write = (p: PersistedPlan) =>
      writePlan(store, open.layout, p).then((w) => w ?? Promise.reject(new Error(`plan name taken: ${p.jobId}`)));
    const prepared = await preparePlan(env, open, false, known.ahead, write);
    made = prepared;
    ({ plan, ref = null } = prepared);
    if (plan.logEntry === null) {
      const own = await createOwnPlan(env, open, plan);
      if (own.plan !== plan) made = undefined;
      ({ plan, ref } = own);
    }
  }
  const run = { lease, made, finished: held.finished, planName: ref?.name };
  const { success } = await rollForward(env, open, plan, run).catch(pastCommitPoint(store, open));
  return {
    jobId: job.jobId,
    target: job.target,
    outcome,
    files: plan.files,
    bytes: plan.bytes,
    partitionsWritten: plan.partitionsWritten,
    partitionsReplaced: plan.partitionsReplaced,
    success,
    metrics: env.metrics(),
  };
}

export interface CommitJobDryRun extends CommitJobResult {
  readonly dryRun: true;
  /** The table-log entry the commit would take (null: v2, or a roll-forward of a plan without one). */
  readonly logEntry: number | null;
  readonly summary: PlanSummary;
  readonly operations: readonly PlannedOperation[];
}

/**
 * commit-job --dry-run: the real step's checks and its plan (the planner commit-job runs, read
 * only), reported as operations instead of applied; no lease, no log entry, no plan file.
 */
export async function commitJobDryRun(env: StepEnv, input: { stagingPath: string }): Promise<CommitJobDryRun> {
  const { store } = env;
  let open: OpenJob;
  try {
    open = await openJob(env, input.stagingPath);
  } catch (e) {
    // What the real run answers for a job that committed, with nothing to do.
    const none = { directoriesMovedWhole: 0, filesMovedOneByOne: 0, filesCopied: 0, displaced: [] };
    return { ...alreadyCommitted(env, e), dryRun: true, logEntry: null, summary: none, operations: [] };
  }
  const { job, layout } = open;
  await checkUnlocked(env, layout);
  if (open.state === 'aborted')
    throw new BlockedError({ reason: 'job-aborted', jobId: job.jobId, leftover: job.adopted?.leftover ?? null });
  // Garbage plans are removed by the real run, which then plans afresh.
  let plan: PersistedPlan | null =
    open.state === 'committing' ? (await readHeldPlan(env, open, { tidy: false })).plan : null;
  const outcome = plan || open.state === 'committed' ? 'rolled-forward' : 'committed';
  let done = 0;
  if (plan) {
    done = await readProgress(store, layout, plan);
  } else if (open.state !== 'committed') {
    plan = (await preparePlan(env, open, true)).plan;
  }
  const phases = plan?.phases ?? [];
  return {
    dryRun: true,
    jobId: job.jobId,
    target: job.target,
    outcome,
    files: plan?.files ?? 0,
    bytes: plan?.bytes ?? 0,
    partitionsWritten: plan?.partitionsWritten ?? [],
    partitionsReplaced: plan?.partitionsReplaced ?? [],
    success: store.toUri(posix.join(job.targetPath, SUCCESS_FILE)),
    metrics: env.metrics(),
    logEntry: plan?.logEntry ?? null,
    summary: summaryOf(env, open, phases.slice(done)),
    operations: [
      ...(plan && outcome === 'committed' ? [{ op: 'write', path: store.toUri(layout.planDir) }] : []),
      ...operationsOf(env, open, phases, done),
      { op: 'write', path: store.toUri(posix.join(job.targetPath, SUCCESS_FILE)) },
      { op: 'delete', path: job.staging, dir: true },
    ],
  };
}
