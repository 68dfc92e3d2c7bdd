// recover: after a killed run, finishes or undoes interrupted task commits, keeps every committed
// task, starts the next app attempt and lists the tasks still to run; past the commit point it
// rolls the job forward to done.
// Keeps protocol.md §5.3 (a crash and a rerun end where an uninterrupted run ends).

import { ConflictError } from '../errors.js';
import { encodeClaim, readClaims, type Claim } from '../job/claims.js';
import { decide, readDecisions, type Decision } from '../job/decisions.js';
import { publishedV2Tasks } from '../job/published.js';
import { saveJob, type JobManifest } from '../job/job.js';
import { taskOfAttempt, type JobLayout } from '../job/layout.js';
import type { Entry, Store } from '../store/types.js';
import { compareTasks, dirsHolding } from '../paths.js';
import type { Lease } from '../job/lease.js';
import { commitJobDryRun, commitJobLocked, type CommitJobDryRun } from './commit-job.js';
import { checkUnlocked } from './effects.js';
import { readHeldPlan } from './held-plan.js';
import { abortRecordedUploads, uploadsDir } from '../job/pending-uploads.js';
import { abortJobUploads } from './abort.js';
import { publishClaimedV2 } from '../plan/publish-v2.js';
import { promotedOutput } from '../store/operations.js';
import { openJob, JobGoneError, type OpenJob } from '../job/open.js';
import { removeStagingDir } from '../job/staging-dir.js';
import { attemptsByTask, declaredNotCommitted } from '../job/tasks.js';
import { otherLiveProcessHere, type FencedEnv, type StepEnv } from './env.js';
import { Progress } from './progress.js';
import { runLeasedStep } from './runner.js';
import { forEachLimit } from '../util/pool.js';

export interface RecoverInput {
  readonly stagingPath: string;
}

export interface RecoverResult {
  readonly jobId: string;
  /** What the job is now: 'staged' (ready for the remaining tasks), 'committed' or 'aborted'. */
  readonly state: 'staged' | 'committed' | 'aborted';
  readonly appAttempt: number | null;
  /** Tasks kept from earlier attempts; null once the job is committed (its tasks are in its commit). */
  readonly committedTasks: readonly string[] | null;
  /** Tasks still to run, one a line on stdout. */
  readonly tasksToRun: readonly string[];
  /** Interrupted task commits (task attempts), and what recover did with them. */
  readonly commitsFinished: readonly string[];
  readonly commitsUndone: readonly string[];
  readonly rolledForward: boolean;
  /** An aborted v2 job whose removal this run finished: the tasks whose published files stay in the target. */
  readonly publishedTasks?: readonly string[];
  /**
   * The job had committed before this run (its staging dir is gone): nothing was done, and its app attempt is no longer
   * known (null).
   */
  readonly alreadyCommitted?: { readonly success: string; readonly committedAt: string };
}

export async function recover(env: StepEnv, input: RecoverInput): Promise<RecoverResult> {
  return runLeasedStep(env, input.stagingPath, { name: 'recover', ifGone: (gone) => recoverGone(env, gone) }, (run) =>
    recoverLocked(run.env, run.open, run.lease),
  );
}

/**
 * A job that committed is as far as recover would take it: exit 0 with nothing to run, as a
 * rerun of commit-job is (a script that recovers after a crash must not read it as failure).
 */
function recoverGone(env: StepEnv, gone: JobGoneError): RecoverResult {
  const done = gone.committed;
  if (!done) throw gone;
  const stray = gone.strayWarning();
  if (stray) env.emit({ type: 'warn', message: stray });
  const nothing = { committedTasks: null, tasksToRun: [], commitsFinished: [], commitsUndone: [] };
  return {
    jobId: done.jobId,
    state: 'committed',
    appAttempt: null,
    ...nothing,
    rolledForward: false,
    alreadyCommitted: { success: done.success, committedAt: done.committedAt },
  };
}

async function recoverLocked(env: FencedEnv, opened: OpenJob, lease: Lease): Promise<RecoverResult> {
  const { job } = opened;
  const base = {
    jobId: job.jobId,
    appAttempt: job.appAttempt,
    committedTasks: [],
    tasksToRun: [],
    commitsFinished: [],
    commitsUndone: [],
  };
  if (opened.state === 'aborted') return { ...base, ...(await finishAbort(env, opened, lease)) };
  // Garbage plans are removed (protocol.md §4.1): a job no plan decides is recovered as a staged one.
  const held = await readHeldPlan(env, opened);
  if (held.open.state === 'committing' || held.open.state === 'committed') {
    env.emit({ type: 'phase', label: 'rolling the commit forward' });
    await commitJobLocked(env, held.open, lease, { held });
    return { ...base, committedTasks: null, state: 'committed', rolledForward: true };
  }
  // Not past the commit point: the job holds no table-log entry (an entry is made only as its commit point).
  return startNextAppAttempt(env, held.open);
}

/** An abort that was killed: its clean-up is finished. */
async function finishAbort(env: StepEnv, opened: OpenJob, lease: Lease) {
  const { job, layout } = opened;
  const published = await publishedV2Tasks(env.store, layout, job);
  await abortJobUploads(env, opened);
  env.emit({ type: 'phase', label: 'removing the staging dir' });
  await removeStagingDir(env.store, layout, lease);
  return {
    state: 'aborted' as const,
    rolledForward: false,
    ...(published.length ? { publishedTasks: published } : {}),
  };
}

/**
 * What starting the next app attempt does, read before anything changes: the effects recover
 * applies, and what recover --dry-run reports. Interrupted task commits are settled (finished
 * when their output is where a commit puts it, else undone), the claims left are the committed
 * tasks, and the tasks to run follow from them and from every trace of an attempt.
 */
interface NextAppAttempt {
  readonly claims: ReadonlyMap<string, Claim>;
  readonly decisions: ReadonlyMap<string, Decision>;
  /**
   * Each interrupted claim, with the committed root it is finished at (v2: '', published at apply),
   * or null: undone.
   */
  readonly settle: readonly { readonly claim: Claim; readonly root: string | null }[];
  /** The claims once the interrupted ones are settled: every one committed. */
  readonly kept: ReadonlyMap<string, Claim>;
  readonly committedTasks: readonly string[];
  readonly tasksToRun: readonly string[];
  readonly finished: readonly string[];
  readonly undone: readonly string[];
}

async function planNextAppAttempt(env: StepEnv, opened: OpenJob): Promise<NextAppAttempt> {
  const { store } = env;
  const { job, layout } = opened;
  const app = job.appAttempt;
  const [claims, decisions] = await Promise.all([
    readClaims(store, layout, { jobId: job.jobId, appAttempt: app, jobStagedAtMs: job.stagedAtMs }, env.concurrency),
    readDecisions(store, layout, app, env.concurrency, job),
  ]);
  refuseLiveV2Claims(env, job, claims.values());
  const settle: { claim: Claim; root: string | null }[] = [];
  const kept = new Map(claims);
  for (const claim of [...claims.values()].filter((c) => c.state === 'claimed')) {
    const root = await finishableRoot(env, layout, job, claim);
    settle.push({ claim, root });
    if (root === null) kept.delete(claim.task);
    else kept.set(claim.task, { ...claim, state: 'committed', root });
  }
  const attempted = await attemptedTasks(env, opened, decisions);
  return {
    claims,
    decisions,
    settle,
    kept,
    committedTasks: [...kept.keys()].sort(compareTasks),
    tasksToRun:
      job.tasks !== undefined
        ? declaredNotCommitted(job, kept)
        : [...attempted].filter((t) => !kept.has(t)).sort(compareTasks),
    finished: settle.filter((s) => s.root !== null).map((s) => s.claim.taskAttempt),
    undone: settle.filter((s) => s.root === null).map((s) => s.claim.taskAttempt),
  };
}

/**
 * The job's next app attempt: interrupted task commits finished or undone, committed tasks and
 * decisions carried into it (their files stay put), then what no committed claim refers to in
 * the earlier app attempts discarded.
 */
async function startNextAppAttempt(env: StepEnv, opened: OpenJob): Promise<RecoverResult> {
  const { store } = env;
  const { job, layout } = opened;
  const next = job.appAttempt + 1;
  const plan = await planNextAppAttempt(env, opened);
  await settleInterruptedClaims(env, opened, plan.settle);
  await carryForward(env, opened, plan.kept, plan.decisions);
  await saveJob(store, layout, { ...job, appAttempt: next });
  await discardEarlierAttempts(env, opened, plan.kept);
  const { committedTasks, tasksToRun, finished, undone } = plan;
  return {
    jobId: job.jobId,
    state: 'staged',
    appAttempt: next,
    committedTasks,
    tasksToRun,
    commitsFinished: finished,
    commitsUndone: undone,
    rolledForward: false,
  };
}

/** Each interrupted claim is finished at its root (v2: its files published first), or undone. */
async function settleInterruptedClaims(
  env: StepEnv,
  { job, layout }: OpenJob,
  settle: NextAppAttempt['settle'],
): Promise<void> {
  const { store } = env;
  const app = job.appAttempt;
  for (const { claim, root } of settle) {
    if (root === null) {
      await store.delete(layout.claimFile(app, claim.task), false);
      continue;
    }
    if (job.algorithm === 'v2') {
      // Some files may already be visible: undoing is impossible, so the publish is completed (a
      // clash is thrown, the claim kept: recover cannot know that no re-run is publishing it).
      const attemptDir = layout.attemptDir(app, claim.taskAttempt);
      await publishClaimedV2(env, { layout, job, attemptDir, files: claim.files }, false);
    }
    await store.writeFile(layout.claimFile(app, claim.task), encodeClaim({ ...claim, state: 'committed', root }));
  }
}

/**
 * Carry committed tasks, their decisions and every abort into the next app attempt; files stay put.
 * Many tasks' records go at once: one after another, 10,000 tasks took minutes on S3.
 */
async function carryForward(
  env: StepEnv,
  { job, layout }: OpenJob,
  claims: ReadonlyMap<string, Claim>,
  decisions: ReadonlyMap<string, Decision>,
): Promise<void> {
  const { store } = env;
  const next = job.appAttempt + 1;
  const carrying = new Progress(env, 'keeping committed tasks', claims.size);
  await forEachLimit([...claims.values()], env.concurrency, async (claim) => {
    await store.createExclusive(layout.claimFile(next, claim.task), encodeClaim({ ...claim, appAttempt: next }));
    carrying.item(claim.task);
  });
  const winners = new Set([...claims.values()].map((c) => c.taskAttempt));
  const carried = [...decisions.values()].filter((d) => d.outcome === 'abort' || winners.has(d.taskAttempt));
  await forEachLimit(carried, env.concurrency, async (d) => void (await decide(store, layout, next, d)));
}

/**
 * The tasks that were attempted in the app attempt: a dir, an uploads record (S3: even without
 * files) or a decision.
 */
async function attemptedTasks(
  env: StepEnv,
  { job, layout }: OpenJob,
  decisions: ReadonlyMap<string, Decision>,
): Promise<Set<string>> {
  const app = job.appAttempt;
  const [byTask, uploaded] = await Promise.all([
    attemptsByTask(env.store, layout, job.jobId, app),
    env.store.list(uploadsDir(layout, app)),
  ]);
  const attempted = new Set(byTask.keys());
  for (const e of uploaded) {
    const task = taskOfAttempt(job.jobId, e.name);
    if (task) attempted.add(task);
  }
  for (const d of decisions.values()) {
    const task = taskOfAttempt(job.jobId, d.taskAttempt);
    if (task) attempted.add(task);
  }
  return attempted;
}

/** Discard what no committed claim refers to in the earlier app attempts, and their uploads (S3). */
async function discardEarlierAttempts(
  env: StepEnv,
  { job, layout }: OpenJob,
  claims: ReadonlyMap<string, Claim>,
): Promise<void> {
  const { store } = env;
  const next = job.appAttempt + 1;
  const keep = new Set([...claims.values()].map((c) => c.root ?? '').filter((r) => r !== ''));
  const holding = dirsHolding(keep);
  for (const e of await store.list(layout.temporary)) {
    if (e.name !== String(next)) await pruneExcept(store, layout, e.path, { keep, holding }, env.concurrency);
  }
  await store.delete(layout.output, true);
  await store.delete(layout.trash, true);
  // Uploads of the earlier attempts that no kept claim holds will never be completed.
  const kept = new Set([...claims.values()].flatMap((c) => c.files.map((f) => f.upload?.id ?? '')));
  await abortRecordedUploads(store, layout, kept, env.concurrency, { targetPath: job.targetPath, beforeApp: next });
}

/**
 * A v2 task commit still running on this host is publishing its files: finishing it beside it
 * would rename the same files twice (a false clash, and advice to move the task's own files
 * aside). Refused before anything changes; recover run again once it has ended finishes the rest.
 */
function refuseLiveV2Claims(env: StepEnv, job: JobManifest, claims: Iterable<Claim>): void {
  if (job.algorithm !== 'v2') return;
  for (const c of claims) {
    if (c.state !== 'claimed' || !otherLiveProcessHere(c, env)) continue;
    const { taskAttempt, pid, host } = c;
    throw new ConflictError({ reason: 'attempt-being-committed', step: 'recover', taskAttempt, host, pid });
  }
}

/**
 * An interrupted task commit is finished when its files are already where a commit puts them
 * (the rename happened, or the store keeps files in the attempt dir); otherwise it is undone.
 * Returns the committed root, or null to undo.
 */
async function finishableRoot(env: StepEnv, layout: JobLayout, job: JobManifest, claim: Claim): Promise<string | null> {
  const { store } = env;
  const attemptDir = layout.attemptDir(job.appAttempt, claim.taskAttempt);
  // v2: some files may already be visible, so the publish is always completed (at apply).
  if (job.algorithm === 'v2') return '';
  const root = await promotedOutput(
    store,
    attemptDir,
    layout.committedTaskDir(job.appAttempt, claim.task),
    claim.files,
  );
  return root === null ? null : layout.relative(root);
}

/** Deletes everything under `dir` except the kept staging-relative roots (`holding`: the directories they are in). */
async function pruneExcept(
  store: Store,
  layout: JobLayout,
  dir: string,
  kept: { readonly keep: ReadonlySet<string>; readonly holding: ReadonlySet<string> },
  concurrency: number,
): Promise<void> {
  const { keep, holding } = kept;
  const rel = layout.relative(dir);
  if (keep.has(rel)) return;
  if (!holding.has(rel)) {
    await store.delete(dir, true);
    return;
  }
  const gone: Entry[] = [];
  for (const e of await store.list(dir)) {
    const r = layout.relative(e.path);
    if (keep.has(r)) continue;
    if (e.kind === 'dir' && holding.has(r)) await pruneExcept(store, layout, e.path, kept, concurrency);
    else gone.push(e);
  }
  // The losing attempts of many tasks go at once, not one after another.
  await forEachLimit(gone, concurrency, async (e) => void (await store.delete(e.path, e.kind === 'dir')));
}

export interface RecoverDryRun {
  readonly dryRun: true;
  readonly jobId: string;
  readonly state: 'staged' | 'committed' | 'aborted';
  /** null: the job had committed before (its staging dir is gone), as in RecoverResult. */
  readonly appAttempt: number | null;
  /** null: the job had committed before, as in RecoverResult. */
  readonly committedTasks: readonly string[] | null;
  readonly tasksToRun: readonly string[];
  /** Interrupted task commits that recover would finish or undo. */
  readonly interrupted: readonly string[];
  readonly rolledForward: boolean;
  readonly commit?: CommitJobDryRun;
  readonly alreadyCommitted?: RecoverResult['alreadyCommitted'];
}

/**
 * recover --dry-run: what the real recover would do, from its own reading of the job (the same
 * plan of the next app attempt, or commit-job's plan past the commit point); nothing changed.
 */
export async function recoverDryRun(env: StepEnv, input: RecoverInput): Promise<RecoverDryRun> {
  let open: OpenJob;
  try {
    open = await openJob(env, input.stagingPath);
  } catch (e) {
    if (!(e instanceof JobGoneError)) throw e;
    const { jobId, appAttempt, committedTasks, tasksToRun, rolledForward, alreadyCommitted } = recoverGone(env, e);
    return {
      dryRun: true,
      jobId,
      state: 'committed',
      appAttempt,
      committedTasks,
      tasksToRun,
      interrupted: [],
      rolledForward,
      alreadyCommitted,
    };
  }
  const { job, layout } = open;
  await checkUnlocked(env, layout);
  const base = { dryRun: true as const, jobId: job.jobId, committedTasks: [], tasksToRun: [], interrupted: [] };
  if (open.state === 'aborted') return { ...base, state: 'aborted', appAttempt: job.appAttempt, rolledForward: false };
  if (open.state === 'committing' || open.state === 'committed') {
    return {
      ...base,
      state: 'committed',
      appAttempt: job.appAttempt,
      rolledForward: true,
      commit: await commitJobDryRun(env, input),
    };
  }
  const plan = await planNextAppAttempt(env, open);
  return {
    ...base,
    state: 'staged',
    appAttempt: job.appAttempt + 1,
    committedTasks: plan.committedTasks,
    tasksToRun: plan.tasksToRun,
    interrupted: plan.settle.map((s) => s.claim.taskAttempt).sort(),
    rolledForward: false,
  };
}
