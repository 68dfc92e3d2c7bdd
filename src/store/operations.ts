// What the protocol does with a store, each decided once by the store's capabilities (rclone's
// operations over Features): how a commit publishes (rename or copy), how a task's output is
// promoted, where an interrupted promotion left it, how adopt takes a leftover, how files and
// emptied dirs go, and how a file is created whole. Each choice has its fallback beside it;
// nothing outside src/store/ reads a capability. Pending uploads: uploads.ts.

import { posix } from 'node:path';
import { StoreError } from '../errors.js';
import { forEachLimit } from '../util/pool.js';
import { featuresOf } from './features.js';
import { tempPathFor } from './temp-names.js';
import { walkFiles } from './walk.js';
import type { Entry, RenamePair, Store } from './types.js';

/**
 * How a commit moves output: 'rename' where one rename moves a directory and all under it (files
 * move too), 'copy' where it does not (object stores: each file is copied server-side and the
 * staged copy goes with the staging dir). The planner's one input about the store.
 */
export type PublishStrategy = 'rename' | 'copy';

export function publishStrategy(store: Store): PublishStrategy {
  return store.caps.directoryRename ? 'rename' : 'copy';
}

/**
 * Promotes a task attempt's output to `committedDir` (v1 commit-task): one directory rename where
 * the store has it; elsewhere the output stays in the attempt dir, which is returned. Returns null
 * when the output vanished before it was promoted (no attempt dir, no committed dir, files expected).
 */
export async function promoteOutput(
  store: Store,
  attemptDir: string,
  committedDir: string,
  expectsFiles: boolean,
): Promise<string | null> {
  if (publishStrategy(store) === 'copy') return attemptDir;
  // The rename first (its parent is there: the attempt dir is under it): one round trip, not three.
  // Only when it finds no source or no parent is the store asked which, as below.
  try {
    await store.rename(attemptDir, committedDir);
    return committedDir;
  } catch (e) {
    if (!(e instanceof StoreError && (e.reason === 'not-found' || e.reason === 'no-location'))) throw e;
  }
  if (await store.stat(attemptDir)) {
    const parent = committedDir.slice(0, committedDir.lastIndexOf('/')) || '/';
    await store.mkdirs(parent);
    await store.rename(attemptDir, committedDir);
    return committedDir;
  }
  if (expectsFiles && !(await store.stat(committedDir))) return null;
  return committedDir;
}

/**
 * Where an interrupted promotion left a task's output, if it is whole: in `committedDir` once the
 * rename happened, or (stores that keep output in place) in the attempt dir when every file is
 * there. Null: the promotion must be undone.
 */
export async function promotedOutput(
  store: Store,
  attemptDir: string,
  committedDir: string,
  files: readonly { path: string; upload?: unknown }[],
): Promise<string | null> {
  if (publishStrategy(store) === 'copy') {
    // A file sent as a pending upload (S3) waits at its final key, not in the attempt dir.
    const present = new Set((await walkFiles(store, attemptDir)).map((e) => e.name));
    return files.every((f) => f.upload || present.has(f.path)) ? attemptDir : null;
  }
  if ((await store.stat(attemptDir)) === null && (files.length === 0 || (await store.stat(committedDir)) !== null))
    return committedDir;
  return null;
}

/**
 * Deletes files, in bulk where the store has a bulk delete (S3: 1,000 keys a request); a file already gone is no error.
 */
export async function deleteFiles(store: Store, paths: readonly string[], concurrency: number): Promise<void> {
  if (paths.length === 0) return;
  const bulk = featuresOf(store).bulkDelete;
  if (bulk && paths.length > 1) await bulk.deleteMany(paths);
  else await forEachLimit(paths, concurrency, async (p) => void (await store.delete(p, false)));
}

/**
 * Removes the dirs in `starts` and their parents while they are empty, deepest first, up to `top`
 * (`top` itself too, unless `keepTop`): the first dir of a walk that is not empty ends it. On a
 * store without directories of their own there is nothing to tidy: a prefix goes with its last key.
 */
export async function removeEmptyDirs(
  store: Store,
  starts: readonly string[],
  top: string,
  keepTop = false,
): Promise<void> {
  if (!store.caps.realDirectories) return;
  for (const start of [...new Set(starts)].sort((a, b) => b.length - a.length)) {
    for (
      let d = start;
      d.startsWith(top) && (keepTop ? d.length > top.length : d.length >= top.length);
      d = posix.dirname(d)
    ) {
      if (!(await store.delete(d, false).catch(() => false)) || d === top) break;
    }
  }
}

/**
 * Removes `dir` if it is empty (a non-recursive delete; one not empty stays). Nothing to do without
 * real directories.
 */
export async function removeDirIfEmpty(store: Store, dir: string): Promise<void> {
  if (store.caps.realDirectories) await store.delete(dir, false).catch(() => false);
}

/**
 * Removes each of `dirs` in turn (deepest first) while it lists empty; the first that holds
 * something ends it. Nothing to do without real directories.
 */
export async function removeEmptyChain(store: Store, dirs: readonly string[]): Promise<void> {
  if (!store.caps.realDirectories) return;
  for (const dir of dirs) {
    if ((await store.list(dir)).length > 0) break;
    await store.delete(dir, false).catch(() => false);
  }
}

/**
 * Whether a listing comes in name order and can start after a name (S3's StartAfter, WebHDFS's
 * LISTSTATUS_BATCH); elsewhere (a local directory) a reader looks names up one by one.
 */
export function listsInOrder(store: Store): boolean {
  return store.caps.listsInOrder === true;
}

/**
 * Whether a failed call is known to have changed nothing: a local filesystem's calls always
 * answer (a create that failed made nothing), where a remote store's answer may be lost after it
 * acted.
 */
export function failuresAreAnswers(store: Store): boolean {
  return featuresOf(store).localChecks !== null;
}

/**
 * Whether a directory exists only through what is in it (object stores): a file created and then
 * deleted leaves no directory behind, and a dir that must be seen while empty needs a marker file.
 */
export function dirsVanishWhenEmpty(store: Store): boolean {
  return !store.caps.realDirectories;
}

/**
 * Whether the entries under many sibling dirs are listed cheaper as one listing of their parent
 * than a listing each (object stores with a paged listing of every key). Elsewhere a listing costs
 * a request per directory anyway.
 */
export function listsSiblingsAsOne(store: Store): boolean {
  return !store.caps.realDirectories && featuresOf(store).tree !== null;
}

/**
 * How a directory tree is removed: 'atomic' (one recursive delete no reader sees half done: HDFS),
 * 'bulk' (one listing of every key, then bulk deletes: object stores), else 'walk' (a listing and
 * a delete per entry, what must go last deleted on its own).
 */
export type TreeRemoval =
  | { readonly kind: 'atomic' }
  | {
      readonly kind: 'bulk';
      readonly listTree: (dir: string) => Promise<Entry[]>;
      readonly deleteMany: (paths: readonly string[]) => Promise<void>;
    }
  | { readonly kind: 'walk' };

export function treeRemoval(store: Store): TreeRemoval {
  if (store.caps.atomicTreeDelete) return { kind: 'atomic' };
  const { tree, bulkDelete } = featuresOf(store);
  if (!store.caps.realDirectories && tree && bulkDelete)
    return { kind: 'bulk', listTree: (dir) => tree.listTree(dir), deleteMany: (p) => bulkDelete.deleteMany(p) };
  return { kind: 'walk' };
}

/**
 * Whether a file made by createExclusive may be read before all its bytes are there (WebHDFS lists
 * a file under construction): a reader that finds it short or damaged reads again shortly.
 */
export function readsMayCatchACreate(store: Store): boolean {
  return store.caps.createsVisibleEarly === true;
}

/**
 * Creates a whole file only if nothing is at `path`; false if something is. Where a create is
 * visible before its bytes are (WebHDFS), the bytes go to a temp file first and are renamed into
 * place without replace; elsewhere createExclusive is already whole.
 */
export async function createWhole(store: Store, path: string, data: Buffer | string): Promise<boolean> {
  if (!readsMayCatchACreate(store)) return store.createExclusive(path, data);
  const tmp = tempPathFor(path);
  let made: boolean;
  try {
    made = await store.createExclusive(tmp, data);
  } catch (e) {
    await store.delete(tmp, false).catch(() => false);
    throw e;
  }
  if (!made) throw new StoreError('exists', 'writeFile', [store.toUri(tmp)], 'a temp file of that name exists already');
  try {
    await store.rename(tmp, path);
    return true;
  } catch (e) {
    await store.delete(tmp, false).catch(() => false);
    if (e instanceof StoreError && e.reason === 'exists') return false;
    throw e;
  }
}

/**
 * How adopt takes a leftover: 'rename' moves it into the staging dir with one directory rename
 * (it must then not cross filesystems); 'in-place' leaves it where it is, to be published from
 * there by server-side copy (stores without directory rename: it must lie inside the target).
 */
export type AdoptStrategy = 'rename' | 'in-place';

export function adoptStrategy(store: Store): AdoptStrategy {
  return publishStrategy(store) === 'rename' ? 'rename' : 'in-place';
}

/** Whether one rename can move `a` to `b` (false: they are on different local filesystems); remote stores: true. */
export async function renamesBetween(store: Store, a: string, b: string): Promise<boolean> {
  const local = featuresOf(store).localChecks;
  return local ? local.sameFilesystem(a, b) : true;
}

/**
 * Makes files put with `syncLater` durable, all at once (a local filesystem: one sync of the
 * filesystem for many files, not one fsync each); elsewhere a put is durable when it returns.
 */
export async function syncWritten(store: Store, paths: readonly string[]): Promise<void> {
  if (paths.length > 0) await featuresOf(store).localChecks?.syncFiles(paths);
}

/**
 * Fails (StoreError 'refused') when this process cannot change the entries of one of these dirs,
 * before anything is changed. Only a local filesystem can tell ahead; elsewhere the write itself
 * answers.
 */
export async function checkWritable(store: Store, dirs: readonly string[]): Promise<void> {
  if (dirs.length > 0) await featuresOf(store).localChecks?.checkWritable(dirs);
}

/** Proves at `stage` that what the protocol relies on really works on this store, where it can be proved. */
export async function verifyStore(store: Store, dir: string): Promise<void> {
  if (store.verify) await store.verify(dir);
}

/**
 * Renames many files at once where the store has a bulk rename: errors per pair; null: no bulk
 * rename (rename each).
 */
export function bulkRename(store: Store): ((pairs: readonly RenamePair[]) => Promise<(StoreError | null)[]>) | null {
  const many = featuresOf(store).bulkRename;
  return many && ((pairs) => many.renameMany(pairs));
}

/** Deletes many files in one go where the store has a bulk delete; null: no bulk delete (delete each). */
export function bulkDelete(store: Store): ((paths: readonly string[]) => Promise<void>) | null {
  const many = featuresOf(store).bulkDelete;
  return many && ((paths) => many.deleteMany(paths));
}
