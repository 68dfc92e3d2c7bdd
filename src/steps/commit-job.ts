// commit-job: checks the tasks, plans the commit, writes the plan (the commit point), applies
// it, writes _SUCCESS and removes the staging dir. After the commit point it only rolls forward.

import { posix } from 'node:path';
import { ConflictError, IncompleteError } from '../errors.js';
import { readClaims, type Claim } from '../job/claims.js';
import { recordOverwrite } from '../job/commit-log.js';
import { isFullyStatic, saveJob, staticPrefix, type JobManifest } from '../job/job.js';
import { SUCCESS_FILE } from '../job/layout.js';
import { successJson } from '../job/success.js';
import { applyPhases } from '../plan/apply.js';
import { encodePlan, loadPlan, type PersistedPlan } from '../plan/plan-file.js';
import { partitionsOf, planCommit, type SourceTree } from '../plan/plan.js';
import { compareTasks } from '../paths.js';
import type { OpCounts } from '../store/instrumented.js';
import { openJob, removeStagingDir, withJobLease, type OpenJob } from './common.js';
import type { StepEnv } from './env.js';
import { identicalClashes, snapshotTarget } from './publish.js';

export interface CommitJobInput {
  readonly stagingPath: string;
}

export interface CommitJobResult {
  readonly jobId: string;
  readonly target: string;
  /** 'committed' by this run; 'rolled-forward' when an interrupted commit was finished. */
  readonly outcome: 'committed' | 'rolled-forward';
  readonly files: number;
  readonly bytes: number;
  readonly partitionsWritten: readonly string[];
  readonly partitionsReplaced: readonly string[];
  readonly success: string;
  readonly metrics: OpCounts;
}

export function replaceUnitsOf(job: JobManifest, files: readonly { path: string }[]): string[] {
  if (job.mode !== 'overwrite') return [];
  if (job.partitionBy.length === 0) return [''];
  if (isFullyStatic(job)) return [staticPrefix(job)];
  return partitionsOf(files, job.partitionBy.length);
}

/** Committed claims of the current app attempt; a claim still committing stops the commit. */
export function committedTasks(job: JobManifest, claims: ReadonlyMap<string, Claim>): Claim[] {
  const pending = [...claims.values()].filter((c) => c.state !== 'committed');
  if (pending.length) {
    const c = pending[0]!;
    throw new ConflictError(
      `task ${c.task} is still committing (${c.taskAttempt} on ${c.host}, pid ${c.pid}): wait for its commit-task, or run 'stagecommit recover' if it was killed`,
    );
  }
  const committed = [...claims.values()];
  if (job.tasks !== undefined) {
    const missing: string[] = [];
    for (let t = 0; t < job.tasks; t++) if (!claims.has(String(t))) missing.push(String(t));
    if (missing.length) {
      throw new IncompleteError(
        `${missing.length} of ${job.tasks} declared task(s) are not committed: ${missing.slice(0, 20).join(', ')}${missing.length > 20 ? ', …' : ''}; commit them (or run 'stagecommit recover' to list them)`,
      );
    }
  }
  return committed.sort((a, b) => compareTasks(a.task, b.task));
}

/** Plans the commit from the committed tasks; throws before the commit point on any problem. */
async function preparePlan(env: StepEnv, open: OpenJob): Promise<PersistedPlan> {
  const { store } = env;
  const { job, layout } = open;
  const claims = committedTasks(job, await readClaims(store, layout, job.appAttempt));
  const base = { jobId: job.jobId, appAttempt: job.appAttempt, createdAtMs: env.now(), tasks: claims.map((c) => c.task) };
  const all = claims.flatMap((c) => c.files);
  if (job.algorithm === 'v2') {
    // Every task published itself at commit-task; the job commit only marks success.
    return { ...base, phases: [], files: all.length, bytes: all.reduce((a, f) => a + f.size, 0), filenames: all.map((f) => f.path).sort(), partitionsWritten: partitionsOf(all, job.partitionBy.length), partitionsReplaced: [] };
  }
  const sources: SourceTree[] = claims.map((c) => ({ task: c.task, root: c.root ?? '', files: c.files }));
  const replaceUnits = replaceUnitsOf(job, all);
  env.emit({ type: 'phase', label: 'reading the target' });
  const target = await snapshotTarget(store, job.targetPath, sources, replaceUnits, env.concurrency);
  if (job.mode === 'create' && target.exists) {
    throw new ConflictError(`the target ${job.target} appeared after job ${job.jobId} was staged, and --mode create never replaces anything: nothing was changed; abort this job, or stage it again with --mode append or overwrite`);
  }
  const identical = job.mode === 'append' ? await identicalClashes(store, layout, job.targetPath, sources, target, env.concurrency) : undefined;
  const plan = planCommit({ mode: job.mode, replaceUnits, renameDirs: store.caps.directoryRename, sources, target, identical }, job.partitionBy.length);
  if (job.mode === 'overwrite') {
    await recordOverwrite(store, job.targetPath, { jobId: job.jobId, stagedAtMs: job.stagedAtMs, partitions: replaceUnits }, env.now());
  }
  return { ...base, ...plan };
}

function emptyPlan(job: JobManifest): PersistedPlan {
  return { jobId: job.jobId, appAttempt: job.appAttempt, createdAtMs: 0, tasks: [], phases: [], files: 0, bytes: 0, filenames: [], partitionsWritten: [], partitionsReplaced: [] };
}

/** After the commit point: apply the plan, write _SUCCESS, clean up. Safe to run again. */
export async function rollForward(env: StepEnv, open: OpenJob, plan: PersistedPlan): Promise<{ success: string }> {
  const { store } = env;
  const { job, layout } = open;
  const success = posix.join(job.targetPath, SUCCESS_FILE);
  if (job.state === 'committed') {
    await removeStagingDir(env, layout);
    return { success: store.toUri(success) };
  }
  if (job.state === 'staged') await saveJob(store, layout, { ...job, state: 'committing' });
  env.emit({ type: 'phase', label: `publishing ${plan.files} file(s)` });
  const progress = await store.readFile(layout.progressFile);
  const phasesDone = progress ? Number.parseInt(progress.toString('utf8'), 10) || 0 : 0;
  await applyPhases(
    {
      store,
      stagingPath: layout.root,
      targetPath: job.targetPath,
      concurrency: env.concurrency,
      onProgress: (done, total) => env.emit({ type: 'progress', label: 'publishing', done, total }),
      onPhaseDone: (phase) => (phase < plan.phases.length - 1 ? store.writeFile(layout.progressFile, `${phase + 1}\n`) : undefined),
    },
    plan.phases,
    phasesDone,
  );
  await store.writeFile(
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
  await saveJob(store, layout, { ...job, state: 'committed' });
  env.emit({ type: 'phase', label: 'removing the staging dir' });
  await removeStagingDir(env, layout);
  return { success: store.toUri(success) };
}

export async function commitJob(env: StepEnv, input: CommitJobInput): Promise<CommitJobResult> {
  return withJobLease(env, await openJob(env.store, input.stagingPath), 'commit-job', (open) => commitJobLocked(env, open));
}

/** commit-job's work, for a caller that holds the job lease (commit-job itself, recover). */
export async function commitJobLocked(env: StepEnv, open: OpenJob): Promise<CommitJobResult> {
  const { store } = env;
  const { job, layout } = open;
  if (open.state === 'aborted') throw new ConflictError(`cannot commit: job ${job.jobId} was aborted; stage a new job`);
  let plan = await loadPlan(store, layout);
  const outcome = plan ? 'rolled-forward' : 'committed';
  if (!plan && open.state === 'committed') {
    // Only the clean-up was left: the plan is removed just before `_job.yaml`.
    const { success } = await rollForward(env, open, emptyPlan(job));
    return { jobId: job.jobId, target: job.target, outcome: 'rolled-forward', files: 0, bytes: 0, partitionsWritten: [], partitionsReplaced: [], success, metrics: env.metrics() };
  }
  if (!plan) {
    plan = await preparePlan(env, open);
    env.emit({ type: 'phase', label: 'writing the commit plan' });
    await store.writeFile(layout.commitFile, encodePlan(plan));
  }
  const { success } = await rollForward(env, open, plan);
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
