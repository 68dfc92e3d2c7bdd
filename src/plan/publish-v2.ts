// Publishing a v2 task: its files go straight into the target when it commits (create/append
// only), planned like a job commit and applied at once.

import type { TaskFile } from '../job/claims.js';
import type { JobManifest } from '../job/job.js';
import type { JobLayout } from '../job/layout.js';
import { attemptFiles } from '../job/tasks.js';
import { publishStrategy } from '../store/operations.js';
import type { Store } from '../store/types.js';
import { applyPhases } from './apply.js';
import { buildTree, planTree, type CommitPlan, type SourceTree } from './plan.js';
import { identicalClashes, snapshotTarget } from './target.js';

export async function publishV2(ctx: { store: Store; concurrency: number }, layout: JobLayout, job: JobManifest, attemptDir: string, files: readonly TaskFile[]): Promise<CommitPlan> {
  const plan = await planV2(ctx, layout, job, attemptDir, files);
  await applyV2(ctx, layout, job, plan);
  return plan;
}

/** Publishes what planV2 planned. */
export function applyV2(ctx: { store: Store; concurrency: number }, layout: JobLayout, job: JobManifest, plan: CommitPlan): Promise<void> {
  return applyPhases({ store: ctx.store, stagingPath: layout.root, targetPath: job.targetPath, concurrency: ctx.concurrency }, plan.phases);
}

/** What publishing the task would do; an append clash or a file where the target has a directory is a ConflictError. */
export async function planV2(ctx: { store: Store; concurrency: number }, layout: JobLayout, job: JobManifest, attemptDir: string, files: readonly TaskFile[]): Promise<CommitPlan> {
  const { store, concurrency } = ctx;
  // Files already published by an interrupted run of this commit are no longer in the attempt dir.
  const present = new Set((await attemptFiles(store, attemptDir)).map((e) => e.name));
  const sources: SourceTree[] = [{ task: 'v2', root: layout.relative(attemptDir), files: files.filter((f) => present.has(f.path)) }];
  const tree = buildTree(sources);
  const target = await snapshotTarget(store, job.targetPath, tree, [], concurrency);
  const identical = await identicalClashes(store, layout, job.targetPath, sources, tree, target, concurrency);
  for (const rel of identical) tree.remove(rel);
  return planTree({ mode: 'append', replaceUnits: [], strategy: publishStrategy(store), sources, target, identical, v2: true }, tree, job.partitionBy.length);
}

/**
 * Whether nothing of a v2 task is published, as far as the store can tell: a rename moves each
 * file out of the attempt dir, so all of them still there is proof; a copy (S3) leaves them there,
 * so there it can never be told.
 */
export async function unpublishedV2(store: Store, attemptDir: string, claimed: number): Promise<boolean> {
  return publishStrategy(store) === 'rename' && (await attemptFiles(store, attemptDir)).length === claimed;
}
