// Planning a commit: the job's output and the target read, checked, and turned into a plan; the
// table log's commit point reached (commit-point.ts). Nothing here changes the target.
// How: protocol.md §4.2; it keeps §5.1 and §5.13 (what can fail, fails before the commit point).

import { posix } from 'node:path';
import { BlockedError, ConflictError } from '../errors.js';
import { leftoverOfRoot, type TaskFile } from '../job/claims.js';
import { isFullyStatic, staticPrefix, type JobManifest } from '../job/job.js';
import { SUCCESS_FILE } from '../job/layout.js';
import type { OpenJob } from '../job/open.js';
import { TableLog, type LogListing } from '../job/table-log.js';
import type { PersistedPlan, PlanRef } from '../plan/plan-file.js';
import {
  planTree,
  targetDirsChanged,
  type CommitPlan,
  type OutputStats,
  type OutputTree,
  type SourceTree,
} from '../plan/plan.js';
import { identicalClashes, readTargetRoot, snapshotTarget, type TargetRoot } from '../plan/target.js';
import { checkWritable, deleteFiles, publishStrategy } from '../store/operations.js';
import { reachCommitPoint, type CommitUnits } from './commit-point.js';
import type { StepEnv } from './env.js';
import { readOutput, takeTree } from './job-output.js';

/** `partitions`: the full partition paths the job's files are in (partitionsOf). */
export function replaceUnitsOf(job: JobManifest, partitions: readonly string[]): string[] {
  if (job.mode !== 'overwrite') return [];
  if (job.partitionBy.length === 0) return [''];
  if (isFullyStatic(job)) return [staticPrefix(job)];
  return [...partitions];
}

/**
 * What a commit holds in the table log: the partitions it writes and replaces (the whole table when unpartitioned or
 * created).
 */
export function commitUnitsOf(job: JobManifest, partitions: readonly string[]): CommitUnits {
  const replaces = replaceUnitsOf(job, partitions);
  if (job.mode === 'create' || job.partitionBy.length === 0) return { touches: [''], replaces };
  return { touches: [...new Set([...partitions, ...replaces])].sort(), replaces };
}

/** `_SUCCESS` as something other than a file would stop the commit after its commit point. */
function successInTheWay(env: StepEnv, job: JobManifest): ConflictError {
  return new BlockedError({
    reason: 'success-in-the-way',
    path: env.store.toUri(posix.join(job.targetPath, SUCCESS_FILE)),
  });
}

/** What planning reads first: the job's output and the table log's listing, which do not depend on each other. */
export interface PlanReads {
  readonly output: ReturnType<typeof readOutput>;
  /** v1 only: v2 has no entry. */
  readonly firstListing?: Promise<LogListing>;
}

/** Starts the reads planning begins with (commit-job starts them beside its second look at the job). */
export function startPlanReads(env: StepEnv, open: OpenJob): PlanReads {
  const output = readOutput(env, open);
  const firstListing =
    open.job.algorithm === 'v1'
      ? new TableLog(env.store, open.job.targetPath).listFrom(TableLog.readFromOf(open.job))
      : undefined;
  // Awaited by whoever uses them; left unused when the job changed meanwhile.
  for (const p of [output, firstListing]) p?.catch(() => undefined);
  return { output, firstListing };
}

/** Writes a plan under a name never used before (plan-file.ts writePlan). */
export type PlanWrite = (plan: PersistedPlan) => Promise<{ readonly ref: PlanRef; readonly sha256: string }>;

/**
 * Plans the commit and, given `write`, reaches the commit point of a plan that names a table-log
 * entry: the plan written, then the entry naming it created (protocol.md §4.2). Throws before it on
 * any problem. A dry run (no `write`) makes the same checks and plan, reading only: no plan, no log
 * entry, no wait. `ahead`: the first reads, already started for this job. `ref`: the plan's file,
 * when it was written (a plan that names no entry is left to the caller to create).
 */
export async function preparePlan(
  env: StepEnv,
  open: OpenJob,
  dryRun = false,
  ahead?: PlanReads,
  write?: PlanWrite,
): Promise<{ plan: PersistedPlan; ref?: PlanRef; listing?: LogListing; uploads?: readonly TaskFile[] }> {
  const { store } = env;
  const { job } = open;
  const { output, firstListing } = ahead ?? startPlanReads(env, open);
  // The target's root, read after that listing: current if the listing shows no unfinished commit where this job
  // writes.
  const targetRoot = firstListing?.then(() => readTargetRoot(store, job.targetPath));
  targetRoot?.catch(() => undefined);
  const read = await output;
  const { claims, sources, stats, uploads } = read;
  // A stage's temp that its attempt's commit carried along would move into the target with the dir.
  if (!dryRun) await deleteFiles(store, read.temps, env.concurrency);
  const tree = takeTree(read);
  const base = { jobId: job.jobId, appAttempt: job.appAttempt, tasks: claims.map((c) => c.task) };
  const partitions = stats.partitionsWritten();
  if (!tree) return { plan: await successOnlyPlan(env, job, base, stats) };
  const units = commitUnitsOf(job, partitions);
  const persisted = (planned: CommitPlan, entry: number): PersistedPlan => ({
    ...base,
    createdAtMs: env.now(),
    logEntry: entry,
    ...planned,
  });
  let written: { plan: PersistedPlan; ref: PlanRef } | undefined;
  const toWrite =
    write && !dryRun
      ? async (planned: CommitPlan, entry: number) => {
          env.emit({ type: 'phase', label: 'writing the commit plan' });
          const plan = persisted(planned, entry);
          const done = await write(plan);
          written = { plan, ref: done.ref };
          return done;
        }
      : undefined;
  const { plan, entry, listing } = await reachCommitPoint(
    env,
    open,
    units,
    (settled) => planOnTarget(env, open, { tree, sources, units }, settled ? targetRoot : undefined),
    { dryRun, firstListing, ...(toWrite ? { write: toWrite } : {}) },
  );
  return written
    ? { plan: written.plan, ref: written.ref, listing, uploads }
    : { plan: persisted(plan, entry.number), listing, uploads };
}

/** v2: every task published itself at commit-task; the job commit only marks success. */
async function successOnlyPlan(
  env: StepEnv,
  job: JobManifest,
  base: { jobId: string; appAttempt: number; tasks: string[] },
  stats: OutputStats,
): Promise<PersistedPlan> {
  const marker = await env.store.stat(posix.join(job.targetPath, SUCCESS_FILE));
  if (marker && marker.kind !== 'file') throw successInTheWay(env, job);
  return {
    ...base,
    createdAtMs: env.now(),
    logEntry: null,
    phases: [],
    files: stats.files,
    bytes: stats.bytes,
    filenames: stats.filenames(),
    partitionsWritten: stats.partitionsWritten(),
    partitionsReplaced: [],
  };
}

/**
 * The commit planned against the target as it is now (read where the output reaches into it;
 * `targetRoot`: its root, read already and still current).
 */
async function planOnTarget(
  env: StepEnv,
  { job, layout }: OpenJob,
  output: { tree: OutputTree; sources: readonly SourceTree[]; units: CommitUnits },
  targetRoot: Promise<TargetRoot> | undefined,
): Promise<CommitPlan> {
  const { store } = env;
  const { tree, sources, units } = output;
  env.emit({ type: 'phase', label: 'reading the target' });
  const target = await snapshotTarget(env, job.targetPath, tree, units.replaces, targetRoot);
  if (job.mode === 'create' && target.exists) {
    throw new BlockedError({ reason: 'target-appeared', target: job.target, jobId: job.jobId });
  }
  const marker = target.dirs.get('')?.get(SUCCESS_FILE);
  if (marker !== undefined && marker !== 'file') throw successInTheWay(env, job);
  const identical =
    job.mode === 'append'
      ? await identicalClashes(env, { layout, targetPath: job.targetPath, sources, tree }, target)
      : undefined;
  for (const rel of identical ?? []) tree.remove(rel);
  const planned = planTree(
    { mode: job.mode, replaceUnits: units.replaces, strategy: publishStrategy(store), sources, target, identical },
    tree,
    job.partitionBy.length,
  );
  // A directory the commit cannot change is found now, not after the commit point (protocol.md §5.13).
  const changed = targetDirsChanged(planned.phases).map((rel) =>
    rel === '' ? job.targetPath : posix.join(job.targetPath, rel),
  );
  await checkWritable(store, changed);
  return withLeftoversRemoved(planned, sources);
}

/** An adopted leftover left in the target (stores without rename) goes once its files are published. */
function withLeftoversRemoved(plan: CommitPlan, sources: readonly SourceTree[]): CommitPlan {
  const leftovers = [
    ...new Set(sources.map((s) => leftoverOfRoot(s.root)).filter((l): l is string => l !== null)),
  ].sort();
  if (leftovers.length === 0) return plan;
  return {
    ...plan,
    phases: [...plan.phases, leftovers.map((l) => ({ op: 'delete', path: `t:${l}`, dir: true }) as const)],
  };
}
