// Which optional capabilities a store has, resolved once per store object (rclone's Features.Fill):
// each group whole or not at all, its methods bound to the store. Only operations.ts and its
// neighbours ask; the protocol asks them for an operation, never for a capability.

import type {
  BulkDelete,
  BulkRename,
  LocalChecks,
  PendingUploadWrites,
  Store,
  TreeListing,
  UploadListing,
} from './types.js';

export interface StoreFeatures {
  readonly tree: TreeListing | null;
  readonly bulkDelete: BulkDelete | null;
  readonly bulkRename: BulkRename | null;
  readonly uploads: UploadListing | null;
  readonly pendingUploads: PendingUploadWrites | null;
  readonly localChecks: LocalChecks | null;
}

const resolved = new WeakMap<Store, StoreFeatures>();

/** The store's capabilities; the first call resolves them, later calls answer from that. */
export function featuresOf(store: Store): StoreFeatures {
  let f = resolved.get(store);
  if (!f) {
    f = resolve(store);
    resolved.set(store, f);
  }
  return f;
}

function resolve(s: Store): StoreFeatures {
  const listTree = s.listTree?.bind(s);
  const listTreeEach = s.listTreeEach?.bind(s);
  const { deleteMany, renameMany, listUploads, abortUpload, beginUpload, uploadParts, completeUpload } = s;
  const { checkWritable, sameFilesystem, syncFiles, pendingUploadMinBytes } = s;
  return {
    tree: listTree
      ? {
          listTree,
          // A store that lists a tree only whole hands it over entry by entry once it has it.
          listTreeEach: listTreeEach ?? (async (dir, opts, fn) => (await listTree(dir, opts)).forEach((e) => fn(e))),
        }
      : null,
    bulkDelete: deleteMany ? { deleteMany: deleteMany.bind(s) } : null,
    bulkRename: renameMany ? { renameMany: renameMany.bind(s) } : null,
    uploads: listUploads && abortUpload ? { listUploads: listUploads.bind(s), abortUpload: abortUpload.bind(s) } : null,
    pendingUploads:
      beginUpload && uploadParts && completeUpload && pendingUploadMinBytes !== undefined
        ? {
            pendingUploadMinBytes,
            beginUpload: beginUpload.bind(s),
            uploadParts: uploadParts.bind(s),
            completeUpload: completeUpload.bind(s),
          }
        : null,
    localChecks:
      checkWritable && sameFilesystem && syncFiles
        ? {
            checkWritable: checkWritable.bind(s),
            sameFilesystem: sameFilesystem.bind(s),
            syncFiles: syncFiles.bind(s),
          }
        : null,
  };
}
