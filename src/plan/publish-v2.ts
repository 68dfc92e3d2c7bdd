// Publishing a v2 task: its files go straight into the target when it commits (create/append
// only), planned like a job commit and applied at once.

import type { TaskFile } from '../job/claims.js';
import type { JobManifest } from '../job/job.js';
import { taskOfAttempt, type JobLayout } from '../job/layout.js';
import { posix } from 'node:path';
import { attemptFiles } from '../job/tasks.js';
import { publishStrategy } from '../store/operations.js';
import { forEachLimit } from '../util/pool.js';
import type { Store } from '../store/types.js';
import { applyPhases, type ApplyContext } from './apply.js';
import { BlockedError, ConflictError, StoreError } from '../errors.js';
import { buildTree, planTree, type CommitPlan, type SourceTree } from './plan.js';
import { appendClashWords } from '../messages/conflict.js';
import { identicalClashes, snapshotTarget } from './target.js';

type Ctx = {
  readonly store: Store;
  readonly concurrency: number;
  /** Hears the files published so far, of how many. */
  readonly onPublished?: ApplyContext['onProgress'];
};

/** A claimed v2 task to publish: its job, the attempt dir that holds its files, and the files its claim lists. */
export interface V2Task {
  readonly layout: JobLayout;
  readonly job: JobManifest;
  readonly attemptDir: string;
  readonly files: readonly TaskFile[];
}

/**
 * Publishes a claimed v2 task. A clash met on the way (its plan refused, or a rename that finds
 * its destination taken: another task published there at the same moment) comes back as the
 * error to report when nothing of the task is published and no other run of it can be
 * publishing; the caller then lets the claim go. Only the run that made the claim (`fresh`) can
 * tell: a re-run after a kill cannot know that another re-run is not publishing beside it (both
 * see the same dead claimer). Any other clash is thrown, saying the claim stays.
 */
export async function publishClaimedV2(ctx: Ctx, task: V2Task, fresh: boolean): Promise<ConflictError | null> {
  const { layout, job, attemptDir, files } = task;
  const untouched = async (applied: boolean) =>
    fresh && (!applied || (await unpublishedV2(ctx.store, attemptDir, files.length)));
  const held = (clash: string, cause: Error) =>
    new BlockedError({ reason: 'v2-publish-clash', clash, published: true }, { cause });
  let plan: CommitPlan;
  try {
    plan = await planV2(ctx, task);
  } catch (e) {
    if (!(e instanceof ConflictError)) throw e;
    if (await untouched(false)) return e;
    throw held(e.detail.reason === 'append-clash' ? appendClashWords(e.detail) : e.message, e);
  }
  // Nothing left to publish (an earlier run published it all, or an abort took the files): no
  // phase runs, so none makes the target's dirs for nothing.
  if (plan.files === 0) return null;
  try {
    await applyPhases(
      {
        store: ctx.store,
        stagingPath: layout.root,
        targetPath: job.targetPath,
        concurrency: ctx.concurrency,
        onProgress: ctx.onPublished,
      },
      plan.phases,
    );
  } catch (e) {
    // A file where a directory goes is a clash too. (S3 has no such rename: there the last copy wins, see README.)
    if (!(e instanceof StoreError && (e.reason === 'exists' || e.reason === 'no-location'))) throw e;
    const clash = `${e.message}: another task or writer published there while this task did`;
    if (await untouched(true))
      return new BlockedError({ reason: 'v2-publish-clash', clash, published: false }, { cause: e });
    throw held(clash, e);
  }
  return null;
}

/** What publishing the task would do; an append clash or a file where the target has a directory is a ConflictError. */
export async function planV2(ctx: Ctx, v2: V2Task): Promise<CommitPlan> {
  const { store } = ctx;
  const { layout, job, attemptDir, files } = v2;
  // Files already published by an interrupted run of this commit are no longer in the attempt dir.
  const present = new Set((await attemptFiles(store, attemptDir)).map((e) => e.name));
  const task = taskOfAttempt(job.jobId, posix.basename(attemptDir)) ?? posix.basename(attemptDir);
  const sources: SourceTree[] = [
    { task, root: layout.relative(attemptDir), files: files.filter((f) => present.has(f.path)) },
  ];
  const tree = buildTree(sources);
  const target = await snapshotTarget(ctx, job.targetPath, tree, []);
  const identical = await identicalClashes(ctx, { layout, targetPath: job.targetPath, sources, tree }, target);
  for (const rel of identical) tree.remove(rel);
  return planTree(
    { mode: 'append', replaceUnits: [], strategy: publishStrategy(store), sources, target, identical, v2: true },
    tree,
    job.partitionBy.length,
  );
}

/**
 * Whether nothing of a v2 task is published, as far as the store can tell: a rename moves each
 * file out of the attempt dir, so all of them still there is proof; a copy (S3) leaves them there,
 * so there it can never be told.
 */
async function unpublishedV2(store: Store, attemptDir: string, claimed: number): Promise<boolean> {
  return publishStrategy(store) === 'rename' && (await attemptFiles(store, attemptDir)).length === claimed;
}

/**
 * How many of a claimed v2 task's files stand in the target (published by this run or an earlier
 * one): what a commit-task that the job's end overtook tells its user stays there.
 */
export async function publishedV2Count(ctx: Ctx, job: JobManifest, files: readonly TaskFile[]): Promise<number> {
  let found = 0;
  await forEachLimit(files, ctx.concurrency, async (f) => {
    const st = await ctx.store.stat(posix.join(job.targetPath, f.path));
    if (st?.kind === 'file') found++;
  });
  return found;
}
