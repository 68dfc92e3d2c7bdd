// The one store interface every backend implements, with capabilities declared at construction.
// What a store must provide: protocol.md §7.1.

import type { Readable } from 'node:stream';
import type { StoreError } from '../errors.js';

/**
 * What put stores: a local file (read again for a retry) or a stream; `onBytes` hears how many
 * bytes of it have gone. `move`: the store may take the local file itself, by rename, where it is
 * on the same filesystem (a file taken is no longer at `localPath`; `onTaken` hears it); elsewhere
 * it copies. `syncLater`:
 * the caller makes the written files durable itself, all at once (syncWritten in operations.ts).
 */
export type PutSource = (
  | { readonly localPath: string; readonly move?: boolean; readonly onTaken?: () => void }
  | { readonly stream: Readable; readonly move?: undefined }
) & {
  readonly onBytes?: (sent: number) => void;
  readonly syncLater?: boolean;
};

/** What a store can do; the protocol asks these, never which store it is. */
export interface StoreCapabilities {
  /**
   * A directory (with everything under it) moves with one atomic rename, and file renames are
   * cheap; without it files are published by server-side copy (store/operations decides).
   */
  readonly directoryRename: boolean;
  /** Empty directories exist on their own (false on object stores). */
  readonly realDirectories: boolean;
  /**
   * A file made by createExclusive can be seen before all its bytes are written (WebHDFS: the
   * name node lists a file under construction). Readers of such files read again shortly.
   */
  readonly createsVisibleEarly?: boolean;
  /**
   * A recursive delete removes a directory tree in one step: no reader sees it half removed
   * (HDFS: the Hadoop filesystem specification's atomic directory delete). Elsewhere it is a
   * walk, and what must go last is deleted on its own.
   */
  readonly atomicTreeDelete?: boolean;
  /**
   * A listing from a name (ListOptions.startAfter) reads only what follows it: the store keeps
   * names in order (S3 `start-after`, WebHDFS `LISTSTATUS_BATCH` with `startAfter`). Elsewhere
   * (a local directory) it is a whole listing filtered, and the table log looks names up instead.
   */
  readonly listsInOrder?: boolean;
}

export type EntryKind = 'file' | 'dir' | 'symlink' | 'other';

export interface Entry {
  readonly name: string;
  readonly path: string;
  readonly kind: EntryKind;
  /** Bytes; may be -1 when the listing was asked without details (stores whose listings carry it fill it). */
  readonly size: number;
  /** Modification time; may be -1 when the listing was asked without details. */
  readonly mtimeMs: number;
  /**
   * What changes when a file is written again, where every listing carries it at no cost: S3's
   * ETag, HDFS's modification time. Absent elsewhere (locally it would cost a stat per file).
   */
  readonly version?: string;
}

export interface ListOptions {
  /** Fill size and mtime (costs a stat per entry on some stores). */
  readonly details?: boolean;
  /** Only names after this one, in byte order: read from there where the store lists in order (listsInOrder). */
  readonly startAfter?: string;
}

export interface PendingUpload {
  /** The path the upload was for. */
  readonly path: string;
  readonly uploadId: string;
  readonly initiatedMs: number;
}

/** A pending upload whose parts are all sent: completing it makes the file appear whole. */
export interface ReadyUpload {
  readonly path: string;
  readonly uploadId: string;
  readonly size: number;
  /** The parts' ETags, in part order. */
  readonly etags: readonly string[];
}

export interface RenamePair {
  readonly src: string;
  readonly dst: string;
}

export interface RenameOptions {
  /** Replace an existing destination file atomically (manifest updates, overwrite of a file). */
  readonly replace?: boolean;
}

/**
 * Optional capabilities. Each is a group of methods a store has all of or none of; which ones a
 * store has is resolved once per store (features.ts), and the protocol asks for them only through
 * operations.ts and its neighbours, where each choice sits beside its fallback (rclone's Features).
 */

/**
 * Every entry under a directory, `name` relative to it ('a/b.csv'), not into symbolic links; [] when
 * it does not exist. For stores that list a tree cheaper than one list() per directory (local:
 * readdir without a promise each; S3: one paged listing of every key, so files only, as an object
 * store has no directories of its own). walkTree() falls back to list().
 */
export interface TreeListing {
  listTree(dir: string, opts?: ListOptions): Promise<Entry[]>;
  /** As listTree, each entry handed to `fn` as it is listed, never all held at once (a million-file tree). */
  listTreeEach(dir: string, opts: ListOptions, fn: (e: Entry) => void): Promise<void>;
}

/** Delete many files in few requests (S3 DeleteObjects). Missing files are fine. */
export interface BulkDelete {
  deleteMany(paths: readonly string[]): Promise<void>;
}

/**
 * Many no-replace file renames at once, where a store has a cheaper way than one call each. Same
 * contract as rename, reported per pair (null when that pair moved).
 */
export interface BulkRename {
  renameMany(pairs: readonly RenamePair[]): Promise<(StoreError | null)[]>;
}

/** Uploads begun under a directory and never completed can be listed and aborted (S3 multipart uploads). */
export interface UploadListing {
  listUploads(dir: string): Promise<PendingUpload[]>;
  /** Aborting an upload that is gone (completed or aborted) is success. */
  abortUpload(upload: Pick<PendingUpload, 'path' | 'uploadId'>): Promise<void>;
}

/**
 * A file staged as an upload to its final path, left pending (invisible) until completed, then
 * appears whole without its bytes being copied (S3).
 */
export interface PendingUploadWrites {
  readonly pendingUploadMinBytes: number;
  beginUpload(path: string): Promise<string>;
  uploadParts(
    path: string,
    uploadId: string,
    localPath: string,
    size: number,
    onBytes?: (sent: number) => void,
  ): Promise<string[]>;
  /** Idempotent: an upload completed before is success when the path holds its bytes. */
  completeUpload(upload: ReadyUpload): Promise<void>;
}

/** Checks only a local filesystem can answer before anything is changed. */
export interface LocalChecks {
  /**
   * Fails (StoreError 'refused') when this process cannot change the entries of one of these
   * directories; a directory that does not exist yet is judged by its nearest existing parent.
   */
  checkWritable(dirs: readonly string[]): Promise<void>;
  /**
   * False when a rename from `a` to `b` would cross filesystems (local EXDEV); a path that does
   * not exist yet is judged by its nearest existing parent.
   */
  sameFilesystem(a: string, b: string): Promise<boolean>;
  /** Makes these files (put with syncLater) durable: on disk before it returns. */
  syncFiles(paths: readonly string[]): Promise<void>;
}

/**
 * Paths are absolute, '/'-separated strings in the store's own namespace
 * (a filesystem path locally, "/bucket/key" on S3, the HDFS path on WebHDFS).
 *
 * Error contract (StoreError.kind):
 * - reads of a missing path return null (stat, readFile) or [] (list): never an error;
 * - rename without `replace` onto an existing path fails with 'exists'; a missing source fails
 *   with 'not-found'; the destination's parent must exist (mkdirs first);
 * - delete of a missing path is no error: cleanup is idempotent (its answer, whether something was
 *   removed, is not to be relied on: S3 cannot tell and answers true);
 * - createExclusive returns false when the path exists.
 *
 * The optional members are the capability groups above: a store declares a group whole or not at
 * all, and only src/store/ reads them (features.ts resolves them, operations.ts uses them).
 */
export interface Store
  extends
    Partial<TreeListing>,
    Partial<BulkDelete>,
    Partial<BulkRename>,
    Partial<UploadListing>,
    Partial<PendingUploadWrites>,
    Partial<LocalChecks> {
  readonly caps: StoreCapabilities;
  /** The URI a user would type for this path. */
  toUri(path: string): string;
  /**
   * Optional: the path in this store that a URI written in another spelling names (a name service
   * and one of its name nodes' HTTP addresses are one cluster), or null when it names another
   * store. Without it, only toUri's own spelling names this store (pathInStore, sameLocation).
   */
  pathOfUri?(uri: string): string | null;
  /**
   * Optional: how many leading path segments name a namespace rather than a directory (S3: 1,
   * the bucket); a path that deep or less cannot hold a table. Default 0: only the root.
   */
  readonly namespaceDepth?: number;
  stat(path: string): Promise<Entry | null>;
  /** Direct children of a directory, held in memory whole (not streamed); [] when it does not exist. */
  list(dir: string, opts?: ListOptions): Promise<Entry[]>;
  readFile(path: string): Promise<Buffer | null>;
  /** Writes a whole file: readers see the old content or the new, never a part. Creates parents. */
  writeFile(path: string, data: Buffer | string): Promise<void>;
  /** Creates a whole file only if nothing is at the path; false if something is. Creates parents. */
  createExclusive(path: string, data: Buffer | string): Promise<boolean>;
  mkdirs(path: string): Promise<void>;
  rename(src: string, dst: string, opts?: RenameOptions): Promise<void>;
  /** Server-side copy of one file: how stores without directoryRename publish. */
  copy(src: string, dst: string): Promise<void>;
  delete(path: string, recursive: boolean): Promise<boolean>;
  /** Optional: HTTP requests made so far, for stores that speak HTTP (protocol.md §9.3 metrics). */
  requestCount?(): number;
  /** Optional: prove at `stage` that a capability the protocol relies on really works here. */
  verify?(dir: string): Promise<void>;
  /** Stores a local file or a stream at dst, creating parents. */
  put(dst: string, source: PutSource): Promise<void>;
}

/** Operation names as counted in metrics (protocol.md §9.3). */
export type ReadOp = 'stat' | 'list' | 'readFile';
export type MutatingOp =
  'writeFile' | 'createExclusive' | 'mkdirs' | 'rename' | 'copy' | 'delete' | 'put' | 'upload' | 'complete';
export type StoreOp = ReadOp | MutatingOp;

/** Whether `uri` (as a manifest recorded it) names `path` in this store, in whatever spelling of its location. */
export function sameLocation(store: Store, uri: string, path: string): boolean {
  return uri === store.toUri(path) || pathInStore(store, uri) === path;
}

/** The path in this store that `uri` names in another spelling of its location, or null (only toUri's own spelling). */
export function pathInStore(store: Store, uri: string): string | null {
  return store.pathOfUri ? store.pathOfUri(uri) : null;
}
