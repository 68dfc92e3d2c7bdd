// Removing a job's staging dir when the job is over (committed or aborted).
// Keeps protocol.md §5.12: `_job.yaml` goes last, so a half-done clean-up is still a job.

import { StoreError } from '../errors.js';
import type { Entry, PendingUpload, Store } from '../store/types.js';
import { forEachInTree } from '../store/walk.js';
import { removeEmptyChain, treeRemoval, type TreeRemoval } from '../store/operations.js';
import { abortUploads, pendingUploadsUnder } from '../store/uploads.js';
import { defaultStagingParents, type JobLayout } from './layout.js';
import type { Lease } from './lease.js';
import { recoverAdvice } from '../messages/advice.js';

/** Whether removeStagingDir deletes by one listing of every key and bulk deletes (object stores). */
export function removesInBulk(store: Store): boolean {
  return treeRemoval(store).kind === 'bulk';
}

/** Every key under the staging dir, as paths only: commit-job holds them while it publishes. */
export async function stagingKeys(store: Store, layout: JobLayout): Promise<string[]> {
  const paths: string[] = [];
  await forEachInTree(store, layout.root, {}, (e) => paths.push(e.path));
  return paths;
}

/** Stale uploads aborted at once (one request each). */
const ABORTS_AT_ONCE = 16;

/** Rounds of "list what is left, delete it" before `_job.yaml` goes, while keys keep appearing. */
const SETTLE_ROUNDS = 5;

/** What a caller of removeStagingDir read or knows already: round trips it need not make again. */
export interface KnownBefore {
  readonly listed?: Promise<string[] | null>;
  readonly strays?: Promise<PendingUpload[]>;
  /** The default layout's table dir holds the table log (the job wrote an entry): nothing to tidy. */
  readonly parentsKept?: boolean;
}

/** A listing this long or shorter is read beside the bulk delete of what it must find gone. */
const SETTLE_BESIDE = 1000;

/**
 * Removes the staging dir whole, `_job.yaml` last, so a half-done cleanup is still a job.
 * `known.listed`: on an object store, the paths of every key (stagingKeys), listed earlier by a caller
 * that knows nothing it needs is added meanwhile but its own bookkeeping (commit-job lists while
 * it publishes). Whatever appears after a listing is found by the next one: `_job.yaml` goes only
 * when a listing shows nothing else (but our lease) is left.
 */
export async function removeStagingDir(
  store: Store,
  layout: JobLayout,
  lease?: Lease,
  known: KnownBefore = {},
): Promise<void> {
  // The lease is renewed while the tree goes (a long clean-up must not let it lapse), and stops
  // just before its own file goes: a renewal landing after that would make it again.
  const removal = treeRemoval(store);
  if (removal.kind === 'atomic') {
    // One delete removes the whole tree at once: nothing is ever left half removed to order.
    await lease?.stopRenewal();
    await store.delete(layout.root, true);
    lease?.gone();
    return tidyParents(store, layout, known);
  }
  const bulk = removal.kind === 'bulk' ? removal : null;
  // `_job.yaml` and our lease go last.
  const last = (path: string) => path === layout.jobFile || path === lease?.path;
  const r: Removal = { store, layout, lease, bulk, last };
  const keys = await abortStrayUploads(r, known);
  await settle(r, keys && bulk ? await deleteKeys(r, bulk, keys) : await removeListed(r));
  await lease?.stopRenewal();
  await removeLast(r);
  await tidyParents(store, layout, known);
}

type BulkRemoval = Extract<TreeRemoval, { kind: 'bulk' }>;

/** One removal of a staging dir that is not one delete: what it removes, how, and what goes last. */
interface Removal {
  readonly store: Store;
  readonly layout: JobLayout;
  readonly lease: Lease | undefined;
  /** Object stores: listings of every key and bulk deletes; null: one dir level at a time. */
  readonly bulk: BulkRemoval | null;
  readonly last: (path: string) => boolean;
}

/**
 * Aborts the uploads a killed `stage` left behind (S3 multipart: they would be billed forever;
 * `known.strays`: listed already by the caller). They are not keys, so the listing of every key
 * (object stores) is read at the same time: returned, or null where there is no bulk delete.
 */
async function abortStrayUploads(r: Removal, known: KnownBefore): Promise<string[] | null> {
  const { store, layout, bulk } = r;
  const listKeys = async () => (await known.listed) ?? stagingKeys(store, layout);
  const [uploads, keys] = await Promise.all([
    known.strays ?? pendingUploadsUnder(store, layout.root),
    bulk ? listKeys() : null,
  ]);
  await abortUploads(store, uploads, ABORTS_AT_ONCE);
  return keys;
}

/**
 * Object stores: bulk deletes of every listed key but the last ones (the plan goes with the
 * rest). The plan's progress record may postdate an early listing: named here, it goes now and
 * the settling listing usually finds nothing left (a key that is not there is no error). Where
 * the keys are few, that listing is read at the same time as they are deleted: what it shows
 * beyond them (returned) appeared since the first listing.
 */
async function deleteKeys(r: Removal, bulk: BulkRemoval, keys: readonly string[]): Promise<Entry[] | undefined> {
  const paths = keys.filter((p) => !r.last(p));
  if (!paths.includes(r.layout.progressFile)) paths.push(r.layout.progressFile);
  if (paths.length > SETTLE_BESIDE) {
    await bulk.deleteMany(paths);
    return undefined;
  }
  const gone = new Set(paths);
  const [, now] = await Promise.all([bulk.deleteMany(paths), bulk.listTree(r.layout.root)]);
  return now.filter((e) => !gone.has(e.path));
}

/**
 * One dir level at a time: the plan goes with the rest (a job whose `_job.yaml` says committed
 * needs it no more, and one only aborted never had one).
 */
async function removeListed(r: Removal): Promise<undefined> {
  await removeEntries(
    r,
    (await r.store.list(r.layout.root)).filter((e) => !r.last(e.path)),
  );
}

function removeEntries(r: Removal, entries: readonly Entry[]): Promise<unknown> {
  if (r.bulk) return r.bulk.deleteMany(entries.map((e) => e.path));
  // A dir that a racing step wrote into after its removal listed it is "not empty" (local rmdir):
  // what is left is listed and removed again by settle, as anything written meanwhile is.
  const notEmpty = (e: unknown) => {
    if (!(e instanceof StoreError && e.reason === 'exists')) throw e;
  };
  return Promise.all(entries.map((e) => r.store.delete(e.path, e.kind === 'dir').catch(notEmpty)));
}

/**
 * Lists what is left but the last ones and removes it, until a listing shows nothing:
 * `settled` is a listing read already. Whatever appears after a listing is found by the next
 * one; a dir that keeps filling after SETTLE_ROUNDS is an error.
 */
async function settle(r: Removal, settled: Entry[] | undefined): Promise<void> {
  const { store, layout, bulk } = r;
  for (let round = 1; ; round++) {
    const listing = settled ?? (await (bulk ? bulk.listTree(layout.root) : store.list(layout.root)));
    const left = listing.filter((e) => !r.last(e.path));
    settled = undefined;
    if (left.length === 0) return;
    if (round > SETTLE_ROUNDS) {
      throw new StoreError(
        'io',
        'delete',
        [store.toUri(left[0]!.path)],
        `something keeps writing into the staging dir of a finished job (${left.length} entries after ${SETTLE_ROUNDS} rounds): stop it, then ${recoverAdvice({ why: 'to finish the clean-up' })}`,
      );
    }
    await removeEntries(r, left);
  }
}

/** Removes `_job.yaml` and our lease, all that is left; nothing else goes after them. */
async function removeLast(r: Removal): Promise<void> {
  const { store, layout, lease, bulk } = r;
  if (bulk) {
    await bulk.deleteMany([layout.jobFile, ...(lease ? [lease.path] : [])]);
    lease?.gone();
    return;
  }
  // They and the directory go in one operation. A racing step's lease file can appear
  // meanwhile (it will find no job): remove it too.
  for (let i = 0; ; i++) {
    try {
      await store.delete(layout.root, true);
      lease?.gone();
      return;
    } catch (e) {
      if (!(e instanceof StoreError && e.reason === 'exists') || i >= 5) throw e;
    }
  }
}

/** Tidies the default layout's empty parents; another job's files keep them in place. */
async function tidyParents(store: Store, layout: JobLayout, known: KnownBefore): Promise<void> {
  if (!known.parentsKept) await tidyStagingParents(store, layout);
}

/**
 * The default layout's parents of a staging dir that is gone, while they are empty (a step killed before it tidied them
 * leaves them so).
 */
export async function tidyStagingParents(store: Store, layout: JobLayout): Promise<void> {
  await removeEmptyChain(store, defaultStagingParents(layout.root));
}
