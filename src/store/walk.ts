// Walking a directory: the whole tree (the store's own way where it has one, else one list() per
// directory), and its files, the one recursive listing the protocol uses for staged output.

import { StoreError } from '../errors.js';
import { forEachLimit, mapLimit } from '../util/pool.js';
import { featuresOf } from './features.js';
import { isTempName } from './temp-names.js';
import type { Entry, ListOptions, Store } from './types.js';
import { compareStrings } from '../util/compare.js';

/**
 * Every entry under `dir` (files, directories and the rest), `name` relative to it, a directory
 * before what is inside it, handed to `fn` one at a time; nothing when `dir` does not exist. On a
 * store that streams its tree (local, S3) nothing is held, elsewhere one directory's listing at a time.
 */
export async function forEachInTree(
  store: Store,
  dir: string,
  opts: ListOptions,
  fn: (e: Entry) => void,
): Promise<void> {
  const tree = featuresOf(store).tree;
  if (tree) return tree.listTreeEach(dir, opts, fn);
  const visit = async (d: string, rel: string): Promise<void> => {
    const entries = await store.list(d, opts);
    const dirs: [string, string][] = [];
    for (const e of entries) {
      const name = rel ? `${rel}/${e.name}` : e.name;
      fn({ ...e, name });
      if (e.kind === 'dir') dirs.push([e.path, name]);
    }
    await forEachLimit(dirs, WALK_PARALLELISM, ([p, name]) => visit(p, name));
  };
  await visit(dir, '');
}

/** Directories listed at once by forEachInTree on a store without a tree listing. */
const WALK_PARALLELISM = 16;

export interface WalkOptions {
  /** Fill size and mtime (costs a stat per entry on some stores). */
  readonly details?: boolean;
  /** Delete temp files met on the way (a killed step's debris) instead of only skipping them. */
  readonly removeTemps?: boolean;
  /** Names directly under `dir` that are not files of it (an attempt marker). */
  readonly ignoreTop?: ReadonlySet<string>;
  /** Collects entries that are neither files nor directories (links, pipes): never output. */
  readonly others?: Entry[];
}

/**
 * Every file under a directory, paths relative to it, sorted; does not follow symbolic links.
 * Temp files (the reserved pattern: writes in progress, or a killed step's debris) are never output.
 */
export async function walkFiles(store: Store, dir: string, opts: WalkOptions = {}): Promise<Entry[]> {
  const out: Entry[] = [];
  await forEachFile(store, dir, opts, (e) => out.push(e));
  return out.sort((a, b) => compareStrings(a.name, b.name));
}

/**
 * The files walkFiles gives, handed to `fn` as they are listed, in no particular order: nothing
 * per file is held here (forEachInTree), only the temps to remove and the entries that are not files.
 */
export async function forEachFile(store: Store, dir: string, opts: WalkOptions, fn: (e: Entry) => void): Promise<void> {
  // Temp files are never output; a killed step's ones go when the next step asks (protocol.md §5.12).
  const temps: Entry[] = [];
  await forEachInTree(store, dir, { details: opts.details ?? false }, (e) => {
    const segs = e.name.split('/');
    if (opts.ignoreTop?.has(segs[0]!)) return;
    const t = segs.findIndex(isTempName);
    if (t < 0) {
      if (e.kind === 'file') fn(e);
      else if (e.kind !== 'dir') opts.others?.push(e);
      // A temp dir goes whole; on an object store its files are all there is of it.
    } else if (t === segs.length - 1 || !store.caps.realDirectories) temps.push(e);
  });
  if (opts.removeTemps) await Promise.all(temps.map((e) => store.delete(e.path, e.kind === 'dir')));
}

export interface TreeMeasure {
  files: number;
  bytes: number;
  /** When the leftover last changed; 0 when the store keeps no time for it. */
  newestMs: number;
}

/**
 * Files, bytes and the newest modification inside a directory (not the directory's own time,
 * which a write deep inside does not change). An empty leftover has nothing inside to date it:
 * its own time is its age, so a `_temporary` made a second ago is not old (protocol.md §6.1).
 */
export async function measureTree(store: Store, dir: string, concurrency: number): Promise<TreeMeasure> {
  const m: TreeMeasure = { files: 0, bytes: 0, newestMs: 0 };
  let entries = 0;
  let level = [dir];
  while (level.length) {
    const next = await mapLimit(level, concurrency, async (d) => {
      const listed = await store.list(d, { details: true });
      entries += listed.length;
      const dirs: string[] = [];
      for (const e of listed) {
        m.newestMs = Math.max(m.newestMs, e.mtimeMs);
        if (e.kind === 'file') {
          m.files++;
          m.bytes += e.size;
        } else if (e.kind === 'dir') dirs.push(e.path);
      }
      return dirs;
    });
    level = next.flat();
  }
  if (entries === 0) {
    const own = await store.stat(dir);
    if (!own) throw new StoreError('not-found', 'stat', [store.toUri(dir)], 'vanished during the scan');
    m.newestMs = Math.max(0, own.mtimeMs);
  }
  return m;
}
