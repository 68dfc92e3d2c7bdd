// Pending uploads (S3 multipart), each choice with its fallback beside it: a store without them
// has none to list, none to abort, and stages every file into the attempt dir.

import { StoreError } from '../errors.js';
import { forEachLimit } from '../util/pool.js';
import { featuresOf } from './features.js';
import type { PendingUpload, PendingUploadWrites, ReadyUpload, Store } from './types.js';

/** Whether the store keeps uploads begun and never completed (they are billed until aborted). */
export function keepsPendingUploads(store: Store): boolean {
  return featuresOf(store).uploads !== null;
}

/** The uploads begun under `dir` and never completed; none on a store without them. */
export async function pendingUploadsUnder(store: Store, dir: string): Promise<PendingUpload[]> {
  const uploads = featuresOf(store).uploads;
  return uploads ? uploads.listUploads(dir) : [];
}

/** Aborts the uploads, `concurrency` at once; one that is gone already is success. Nothing to do without them. */
export async function abortUploads(
  store: Store,
  uploads: readonly Pick<PendingUpload, 'path' | 'uploadId'>[],
  concurrency: number,
): Promise<void> {
  const abort = featuresOf(store).uploads?.abortUpload;
  if (abort && uploads.length > 0) await forEachLimit(uploads, concurrency, (u) => abort(u));
}

/**
 * How a file may be staged as a pending upload to its final path (null: the store has no such
 * uploads, and every file goes into the attempt dir).
 */
export function pendingUploadWrites(store: Store): PendingUploadWrites | null {
  return featuresOf(store).pendingUploads;
}

/** Completes a pending upload a plan names; a store without pending uploads cannot have one (refused). */
export function completeUpload(store: Store, upload: ReadyUpload): Promise<void> {
  const writes = featuresOf(store).pendingUploads;
  if (!writes)
    throw new StoreError(
      'refused',
      'complete',
      [store.toUri(upload.path)],
      'the plan completes a pending upload, but this store has none',
    );
  return writes.completeUpload(upload);
}
