// What the protocol does with a store, each decided once by the store's capabilities (rclone's
// operations over Features): how a commit publishes (rename or copy), how a task's output is
// promoted, where an interrupted promotion left it, and how files and emptied dirs go.

import { posix } from 'node:path';
import { StoreError } from '../errors.js';
import { forEachLimit } from '../util/pool.js';
import { walkFiles } from './walk.js';
import type { Store } from './types.js';

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
  if (store.deleteMany && paths.length > 1) await store.deleteMany(paths);
  else await forEachLimit(paths, concurrency, async (p) => void (await store.delete(p, false)));
}

/**
 * Removes the dirs in `starts` and their parents while they are empty, deepest first, up to `top`
 * (`top` itself too, unless `keepTop`): the first dir of a walk that is not empty ends it.
 */
export async function removeEmptyDirs(
  store: Store,
  starts: readonly string[],
  top: string,
  keepTop = false,
): Promise<void> {
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
