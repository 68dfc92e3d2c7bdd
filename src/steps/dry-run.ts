// --dry-run of commit-job, abort and recover: the checks and the plan of the real step, read
// only; no lease, no log entry, no plan file, nothing written. Conflicts and missing tasks throw
// the error (and exit code) the real step would.

import { posix } from 'node:path';
import { BlockedError, ConflictError } from '../errors.js';
import { readClaims } from '../job/claims.js';
import { readDecision } from '../job/decisions.js';
import { publishedV2Tasks } from '../job/published.js';
import { ADOPTED_DIR, taskAttemptName, SUCCESS_FILE, type JobLayout } from '../job/layout.js';
import { giveBackProblem, leftoverToGiveBack } from '../job/adoption.js';
import { describeHolder, holderKnownDead, leaseTtl, readCurrentLease } from '../job/lease.js';
import { resolveLoc } from '../plan/apply.js';
import { loadJobPlan, readProgress, type PersistedPlan } from '../plan/plan-file.js';
import { singleOps, type PlanPhase } from '../plan/plan.js';
import { checkAttempt, checkTaskId, compareTasks } from '../paths.js';
import type { CommitJobResult } from './commit-job.js';
import { planMissing } from './held-plan.js';
import { preparePlan } from './prepare-plan.js';
import { JobGoneError, openJob, requireState, type OpenJob } from '../job/open.js';
import { attemptFiles, attemptsByTask, declaredNotCommitted } from '../job/tasks.js';
import { walkFiles } from '../store/walk.js';
import type { StepEnv } from './env.js';

/** One planned store operation, with URIs. */
export interface PlannedOperation {
  readonly op: string;
  readonly path?: string;
  readonly from?: string;
  readonly to?: string;
  readonly dir?: boolean;
  /** A file move that replaces an old file of the same name in the target (an overwrite). */
  readonly replace?: boolean;
  readonly phase?: number;
}

export interface CommitJobDryRun extends CommitJobResult {
  readonly dryRun: true;
  /** The table-log entry the commit would take (null: v2, or a roll-forward of a plan without one). */
  readonly logEntry: number | null;
  readonly summary: {
    readonly directoriesMovedWhole: number;
    readonly filesMovedOneByOne: number;
    readonly filesCopied: number;
    readonly displaced: readonly string[];
  };
  readonly operations: readonly PlannedOperation[];
}

/**
 * A lease held by a process not known dead: the real step watches it for up to its TTL and exits 4 if it is renewed;
 * one look cannot tell, so the dry run exits 4 saying so.
 */
async function checkUnlocked(env: StepEnv, layout: JobLayout): Promise<void> {
  const current = await readCurrentLease(env.store, layout);
  const mine = current?.record?.host === env.host && current.record.pid === env.pid;
  if (current && !mine && !holderKnownDead(current, env)) {
    throw new ConflictError({
      reason: 'lease-held',
      job: env.store.toUri(layout.root),
      holder: describeHolder(current.record),
      takeoverSeconds: Math.round(leaseTtl(current, env) / 1000),
    });
  }
}

function operationsOf(env: StepEnv, open: OpenJob, phases: readonly PlanPhase[], from = 0): PlannedOperation[] {
  const ctx = { stagingPath: open.layout.root, targetPath: open.job.targetPath };
  const uri = (loc: string) => env.store.toUri(resolveLoc(ctx, loc));
  return phases.slice(from).flatMap((phase, i) =>
    [...singleOps(phase)].map((op): PlannedOperation => {
      const at = { phase: from + i + 1 };
      if (op.op === 'mkdir') return { op: 'mkdir', path: uri(op.path), ...at };
      if (op.op === 'delete') return { op: 'delete', path: uri(op.path), dir: op.dir, ...at };
      if (op.op === 'swap')
        return { op: 'swap', path: uri(op.path), from: uri(op.from), to: uri(op.trash), dir: op.dir, ...at };
      // A pending upload is completed where it waits: nothing is copied.
      if (op.op === 'copy' && op.upload) return { op: 'complete', path: uri(op.to), ...at };
      return {
        op: op.op,
        from: uri(op.from),
        to: uri(op.to),
        ...(op.op === 'move' && op.dir ? { dir: true } : {}),
        ...(op.op === 'move' && op.replace ? { replace: true } : {}),
        ...at,
      };
    }),
  );
}

function summaryOf(env: StepEnv, open: OpenJob, phases: readonly PlanPhase[]): CommitJobDryRun['summary'] {
  const ops = phases.flatMap((p) => [...singleOps(p)]);
  const ctx = { stagingPath: open.layout.root, targetPath: open.job.targetPath };
  return {
    directoriesMovedWhole: ops.filter((o) => (o.op === 'move' && o.dir) || (o.op === 'swap' && o.dir)).length,
    filesMovedOneByOne: ops.filter((o) => o.op === 'move' && !o.dir).length,
    filesCopied: ops.filter((o) => o.op === 'copy' && !o.upload).length,
    // What the target loses: a swapped or deleted path, an old file a new one replaces in place.
    displaced: ops.flatMap((o) => {
      const old =
        o.op === 'swap' || (o.op === 'delete' && o.path.startsWith('t:'))
          ? o.path
          : o.op === 'move' && o.replace
            ? o.to
            : null;
      return old === null ? [] : [env.store.toUri(resolveLoc(ctx, old))];
    }),
  };
}

export async function commitJobDryRun(env: StepEnv, input: { stagingPath: string }): Promise<CommitJobDryRun> {
  const { store } = env;
  const open = await openJob(env, input.stagingPath);
  const { job, layout } = open;
  await checkUnlocked(env, layout);
  if (open.state === 'aborted')
    throw new BlockedError({ reason: 'job-aborted', jobId: job.jobId, leftover: job.adopted?.leftover ?? null });
  // A plan that never became the commit point is removed by the real run, which then plans afresh.
  let plan: PersistedPlan | null = open.stalePlan ? null : await loadJobPlan(store, layout, job);
  const outcome = plan || open.state === 'committed' ? 'rolled-forward' : 'committed';
  if (!plan && open.state === 'committing') {
    throw planMissing(env, open);
  }
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
      ...(plan && outcome === 'committed' ? [{ op: 'write', path: store.toUri(layout.commitFile) }] : []),
      ...operationsOf(env, open, phases, done),
      { op: 'write', path: store.toUri(posix.join(job.targetPath, SUCCESS_FILE)) },
      { op: 'delete', path: job.staging, dir: true },
    ],
  };
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

// eslint-disable-next-line max-lines-per-function -- not yet split (issue 40)
export async function abortDryRun(
  env: StepEnv,
  input: { stagingPath: string; task?: string; attempt?: number },
): Promise<AbortDryRun> {
  const { store } = env;
  const scope = input.task === undefined ? 'job' : 'task';
  const task = input.task === undefined ? undefined : checkTaskId(input.task);
  const attempt = checkAttempt(input.attempt);
  let open: OpenJob;
  try {
    open = await openJob(env, input.stagingPath);
  } catch (e) {
    if (e instanceof JobGoneError)
      return { dryRun: true, outcome: 'nothing', scope, files: 0, bytes: 0, operations: [] };
    throw e;
  }
  const { job, layout } = open;
  if (task !== undefined) {
    requireState(open, ['staged'], 'abort a task attempt');
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
      scope,
      taskAttempt,
      files: files.length,
      bytes: files.reduce((a, f) => a + Math.max(0, f.size), 0),
      operations,
    };
  }
  await checkUnlocked(env, layout);
  requireState(open, ['staged', 'aborted'], 'abort');
  const back = await leftoverToGiveBack(store, layout, job);
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
  const published = await publishedV2Tasks(store, layout, job);
  return {
    dryRun: true,
    jobId: job.jobId,
    outcome: 'aborted',
    scope,
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
    operations: [
      ...(job.state === 'aborted' ? [] : [{ op: 'write', path: store.toUri(layout.jobFile) }]),
      ...(back ? [{ op: 'rename', from: store.toUri(back.from), to: store.toUri(back.to!) }] : []),
      { op: 'delete', path: job.staging, dir: true },
    ],
  };
}

export interface RecoverDryRun {
  readonly dryRun: true;
  readonly jobId: string;
  readonly state: 'staged' | 'committed' | 'aborted';
  readonly appAttempt: number;
  readonly committedTasks: readonly string[];
  readonly tasksToRun: readonly string[];
  /** Interrupted task commits that recover would finish or undo. */
  readonly interrupted: readonly string[];
  readonly rolledForward: boolean;
  readonly commit?: CommitJobDryRun;
}

export async function recoverDryRun(env: StepEnv, input: { stagingPath: string }): Promise<RecoverDryRun> {
  const { store } = env;
  const open = await openJob(env, input.stagingPath);
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
  const claims = await readClaims(store, layout, { jobId: job.jobId, appAttempt: job.appAttempt });
  const committed = [...claims.values()]
    .filter((c) => c.state === 'committed')
    .map((c) => c.task)
    .sort(compareTasks);
  const interrupted = [...claims.values()]
    .filter((c) => c.state !== 'committed')
    .map((c) => c.taskAttempt)
    .sort();
  // As recover counts them: declared tasks not committed, else the attempted ones not committed.
  const tasksToRun =
    job.tasks !== undefined
      ? declaredNotCommitted(job, claims)
      : [...(await attemptsByTask(store, layout, job.jobId, job.appAttempt)).keys()]
          .filter((t) => claims.get(t)?.state !== 'committed')
          .sort(compareTasks);
  // An interrupted commit that recover undoes leaves its task to run again; one it finishes does not.
  return {
    ...base,
    state: 'staged',
    appAttempt: job.appAttempt + 1,
    committedTasks: committed,
    tasksToRun,
    interrupted,
    rolledForward: false,
  };
}
