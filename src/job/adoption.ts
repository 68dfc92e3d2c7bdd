// An adopted job's leftover: whether adopt finished making the job, and giving the leftover back
// to where the engine left it when the job is aborted (it may hold the only copy of partitions
// the engine had already deleted from the table).
// Keeps protocol.md §5.18 (an adopted leftover is never deleted unpublished).

import { posix } from 'node:path';
import { BlockedError, StoreError } from '../errors.js';
import { adoptStrategy } from '../store/operations.js';
import type { Store } from '../store/types.js';
import type { Claim } from './claims.js';
import type { JobManifest } from './job.js';
import { ADOPTED_DIR, type JobLayout } from './layout.js';

export function adoptedDir(layout: JobLayout): string {
  return posix.join(layout.root, ADOPTED_DIR);
}

/**
 * Why an adopted job is half-made (adopt was killed, or lost a race with another adopt of the
 * same leftover), or null when it is whole or not adopted. Only for a job before its commit point.
 */
export async function halfMadeAdoption(
  store: Store,
  layout: JobLayout,
  job: JobManifest,
  claims: ReadonlyMap<string, Pick<Claim, 'root'>>,
): Promise<string | null> {
  if (!job.adopted) {
    // Adopted by a stagecommit that recorded no adoption: its claims point into `_adopted`.
    const needsDir =
      adoptStrategy(store) === 'rename' &&
      [...claims.values()].some((c) => c.root === ADOPTED_DIR || c.root?.startsWith(ADOPTED_DIR + '/'));
    return needsDir && (await store.stat(adoptedDir(layout))) === null
      ? `its leftover never reached ${store.toUri(adoptedDir(layout))}`
      : null;
  }
  if (claims.size < job.adopted.tasks) return `adopt wrote ${claims.size} of its ${job.adopted.tasks} claim(s)`;
  if (adoptStrategy(store) === 'rename' && (await store.stat(adoptedDir(layout))) === null)
    return `its leftover was never moved in (it is still at ${job.adopted.leftover}, or another adopt took it)`;
  return null;
}

export function halfMadeAdvice(job: JobManifest): string {
  return `abort it ('stagecommit abort --job ${job.staging}', which leaves the leftover where it is) and adopt ${job.adopted ? job.adopted.leftover : 'the leftover'} again`;
}

/**
 * What aborting gives back: the leftover renamed from the staging dir to where adopt found it (null: nothing to give).
 */
export async function leftoverToGiveBack(
  store: Store,
  layout: JobLayout,
  job: JobManifest,
): Promise<{ from: string; to: string | null } | null> {
  if (adoptStrategy(store) === 'in-place') return null; // the leftover never left its place
  const from = adoptedDir(layout);
  if ((await store.stat(from)) === null) return null;
  return { from, to: job.adopted?.leftoverPath ?? null };
}

/** Why the leftover cannot go back (its place is taken, or was never recorded), or null. */
export async function giveBackProblem(
  store: Store,
  job: JobManifest,
  back: { from: string; to: string | null },
): Promise<BlockedError | null> {
  const from = store.toUri(back.from);
  if (back.to === null) return new BlockedError({ reason: 'leftover-place-unknown', jobId: job.jobId, from });
  if ((await store.stat(back.to)) !== null) return placeTaken(store, back.from, back.to);
  return null;
}

function placeTaken(store: Store, from: string, to: string): BlockedError {
  return new BlockedError({ reason: 'leftover-place-taken', from: store.toUri(from), to: store.toUri(to) });
}

/**
 * Renames `_adopted` back to the leftover's original path before the staging dir goes. Where that
 * path is taken (or unknown), the leftover stays in the staging dir and the abort fails: it is
 * never deleted.
 */
export async function giveBackLeftover(store: Store, layout: JobLayout, job: JobManifest): Promise<void> {
  const back = await leftoverToGiveBack(store, layout, job);
  if (!back) return;
  const problem = await giveBackProblem(store, job, back);
  if (problem) throw problem;
  try {
    await store.rename(back.from, back.to!);
  } catch (e) {
    if (e instanceof StoreError && e.reason === 'exists') throw placeTaken(store, back.from, back.to!);
    throw e;
  }
}

/** What to do after a conflict: an adopted job is not staged again, its leftover is adopted again. */
export function againAdvice(job: JobManifest, staged: string): string {
  if (!job.adopted) return staged;
  return `abort it ('stagecommit abort --job ${job.staging}' gives the leftover back to ${job.adopted.leftover}) and adopt the leftover again once the conflicting job is done`;
}
