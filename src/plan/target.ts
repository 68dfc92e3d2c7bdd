// Reading the target where the output touches it: the planner's view of what is already there.

import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { claimRootPath } from '../job/claims.js';
import type { JobLayout } from '../job/layout.js';
import type { Entry, Store } from '../store/types.js';
import { mapLimit } from '../util/pool.js';
import { findClashes, type OutputTree, type SourceTree, type TargetKind, type TargetSnapshot } from './plan.js';
import type { FileInfo } from './tree.js';

/** Every directory prefix of the given table-relative paths, plus the paths themselves. */
function prefixes(paths: Iterable<string>, includeSelf: boolean): Set<string> {
  const out = new Set<string>(['']);
  for (const p of paths) {
    let end = includeSelf ? p.length : p.lastIndexOf('/');
    // Walk up until a prefix is already known: siblings share their parents.
    while (end > 0 && !out.has(p.slice(0, end))) {
      out.add(p.slice(0, end));
      end = p.lastIndexOf('/', end - 1);
    }
  }
  return out;
}

export type TargetRoot = [Entry | null, Entry[]];

/** The store the target is read from, and how many reads run at once. */
export interface TargetReader {
  readonly store: Store;
  readonly concurrency: number;
}

/** The target's root: its stat and its listing, at once (neither depends on the other; a listing of nothing is []). */
export function readTargetRoot(store: Store, targetPath: string): Promise<TargetRoot> {
  return Promise.all([store.stat(targetPath), store.list(targetPath)]);
}

/**
 * Lists the target's directories that the output (or a replaced unit) reaches into: one
 * listing per existing directory touched, never the whole table.
 */
export async function snapshotTarget(
  { store, concurrency }: TargetReader,
  targetPath: string,
  tree: OutputTree,
  replaceUnits: readonly string[],
  first?: Promise<TargetRoot>,
): Promise<TargetSnapshot> {
  const [root, rootEntries] = await (first ?? readTargetRoot(store, targetPath));
  const dirs = new Map<string, Map<string, TargetKind>>();
  if (!root) return { exists: false, dirs };
  const wanted = new Set(tree.dirs());
  for (const u of prefixes(
    replaceUnits.filter((u) => u !== ''),
    true,
  ))
    wanted.add(u);
  let level = [''];
  while (level.length) {
    const listed = await mapLimit(level, concurrency, async (rel) => {
      const entries = rel === '' ? rootEntries : await store.list(posix.join(targetPath, rel));
      const children = new Map<string, TargetKind>();
      for (const e of entries) children.set(e.name, e.kind === 'file' ? 'file' : e.kind === 'dir' ? 'dir' : 'other');
      dirs.set(rel, children);
      return [...children]
        .filter(([name, kind]) => kind === 'dir' && wanted.has(rel ? `${rel}/${name}` : name))
        .map(([name]) => (rel ? `${rel}/${name}` : name));
    });
    level = listed.flat();
  }
  return { exists: true, dirs };
}

/** The output of a job as planned: where its sources are staged, and the tree they make in the target. */
export interface PlannedOutput {
  readonly layout: JobLayout;
  readonly targetPath: string;
  readonly sources: readonly SourceTree[];
  readonly tree: OutputTree;
}

/** Append clashes whose bytes equal the existing file's: those staged copies are dropped. */
export async function identicalClashes(
  { store, concurrency }: TargetReader,
  output: PlannedOutput,
  target: TargetSnapshot,
): Promise<Set<string>> {
  const { layout, targetPath, sources, tree } = output;
  const clashes = findClashes(tree, target);
  if (clashes.length === 0) return new Set();
  const same = await mapLimit(clashes, concurrency, async (rel) => {
    const f = tree.at(rel)!.file!;
    if (f.upload) return sameAsUpload(f, await store.readFile(posix.join(targetPath, rel)));
    const staged = posix.join(claimRootPath(layout, targetPath, sources[f.source]!.root), rel);
    const [a, b] = await Promise.all([store.readFile(staged), store.readFile(posix.join(targetPath, rel))]);
    return a !== null && b !== null && a.equals(b);
  });
  return new Set(clashes.filter((_, i) => same[i]));
}

/**
 * A pending upload's bytes cannot be read: a one-part upload equals a file whose MD5 is its part's
 * ETag. Larger ones are taken as different (the clash is then refused, never overwritten).
 */
function sameAsUpload(f: FileInfo, existing: Buffer | null): boolean {
  if (existing === null || existing.length !== f.size || f.upload!.etags.length !== 1) return false;
  return createHash('md5').update(existing).digest('hex') === f.upload!.etags[0]!.replace(/"/g, '');
}
