// Whole trees on the local filesystem (listed without a promise per directory, removed level by
// level in parallel), and the local store's error and entry-kind mapping.

import { lstatSync, promises as fs, readdirSync, realpathSync } from 'node:fs';
import { posix } from 'node:path';
import { forEachLimit } from '../util/pool.js';
import { StoreError } from '../errors.js';
import type { Entry, EntryKind, ListOptions } from './types.js';

export function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException)?.code;
}

export function wrap(e: unknown, op: string, paths: string[]): StoreError {
  const c = code(e);
  if (c === 'ENOTDIR') {
    // A place under a file cannot exist: bad input (exit 2), naming the file in the way.
    const file = paths.map(fileInTheWay).find((f) => f !== null);
    return new StoreError(
      'no-location',
      op,
      paths,
      `${file ?? 'a part of the path'} is not a directory: choose a location under a directory, or move what is there`,
    );
  }
  const kind = c === 'ENOENT' ? 'not-found' : c === 'EEXIST' || c === 'ENOTEMPTY' ? 'exists' : 'io';
  return new StoreError(kind, op, paths, (e as Error).message ?? String(e));
}

/** The nearest ancestor of `p` that exists and is not a directory (a file, a link): only on the failure path. */
function fileInTheWay(p: string): string | null {
  for (let d = posix.dirname(p); d !== posix.dirname(d); d = posix.dirname(d)) {
    try {
      if (!lstatSync(d).isDirectory()) return d;
    } catch {
      // not there: look further up
    }
  }
  return null;
}

export function kindOf(d: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): EntryKind {
  return d.isFile() ? 'file' : d.isDirectory() ? 'dir' : d.isSymbolicLink() ? 'symlink' : 'other';
}

/** Removals in flight when a tree goes (each waits on the disk, not the CPU). */
const TREE_REMOVAL_PARALLELISM = 128;

/**
 * readdir (and lstat, for details) called directly, which costs a tenth of one promise per call;
 * the event loop gets a turn every 256 directories and every 4,096 entries (a lease is renewed
 * on a timer, and one directory can hold a million files).
 */
export async function listTreeLocal(dir: string, opts: ListOptions = {}): Promise<Entry[]> {
  const out: Entry[] = [];
  await eachInTreeLocal(dir, opts, (e) => out.push(e));
  return out;
}

/** listTreeLocal, each entry handed over as it is met: memory does not grow with the tree. */
export async function eachInTreeLocal(dir: string, opts: ListOptions, fn: (e: Entry) => void): Promise<void> {
  const pending: [string, string][] = [[dir, '']];
  let entries = 0;
  for (let n = 1; pending.length > 0; n++) {
    const [d, rel] = pending.pop()!;
    let dirents;
    try {
      dirents = readdirSync(d, { withFileTypes: true });
    } catch (e) {
      if (code(e) === 'ENOENT' || code(e) === 'ENOTDIR') continue;
      throw wrap(e, 'list', [d]);
    }
    const base = d.endsWith('/') ? d : `${d}/`;
    for (const de of dirents) {
      if (++entries % 4096 === 0) await new Promise((r) => setImmediate(r));
      const p = base + de.name;
      const name = rel ? `${rel}/${de.name}` : de.name;
      const kind = kindOf(de);
      if (kind === 'dir') pending.push([p, name]);
      if (!opts.details) {
        fn({ name, path: p, kind, size: -1, mtimeMs: -1 });
        continue;
      }
      let s;
      try {
        s = lstatSync(p);
      } catch (e) {
        if (code(e) !== 'ENOENT') throw wrap(e, 'list', [p]);
        // Vanished meanwhile: not listed. A name that is not valid UTF-8 reads back with U+FFFD
        // and nothing has it, nor can what is under it be listed: listed all the same, as a file,
        // for the caller to find it and say so.
        if (de.name.includes('\uFFFD')) fn({ name, path: p, kind: 'file', size: 0, mtimeMs: -1 });
        continue;
      }
      fn({ name, path: p, kind: kindOf(s), size: s.size, mtimeMs: s.mtimeMs });
    }
    if (n % 256 === 0) await new Promise((r) => setImmediate(r));
  }
}

/**
 * Paths in turns by parent directory: the first child of each parent, then the second, …
 * Removals in flight then lock many parents, not one (ext4 removes a directory's entries one at
 * a time under its lock, and with `discard` each removal may wait for the disk to trim a block).
 */
export function byParentInTurns(paths: readonly string[]): string[] {
  const groups = new Map<string, string[]>();
  for (const p of paths) {
    const parent = p.slice(0, p.lastIndexOf('/'));
    const g = groups.get(parent);
    if (g) g.push(p);
    else groups.set(parent, [p]);
  }
  // Each turn visits only the parents with children left: linear in the paths, whatever their shape.
  let active = [...groups.values()];
  const out: string[] = [];
  for (let i = 0; active.length > 0; i++) {
    const next: string[][] = [];
    for (const g of active) {
      out.push(g[i]!);
      if (i + 1 < g.length) next.push(g);
    }
    active = next;
  }
  return out;
}

/**
 * A tree goes bottom up, each level's removals in parallel and in turns by parent: on a busy
 * disk every rmdir waits for the journal or a trim, and parallel waits overlap (10,000 emptied
 * task dirs: 1.5–2× faster than fs.rm, and in turns by parent 0.58 against 0.74 s). Anything
 * unexpected (an entry appearing meanwhile) is left to fs.rm.
 */
export async function removeTreeLocal(root: string): Promise<void> {
  const entries = await listTreeLocal(root);
  const levels: string[][] = [[]];
  const files: string[] = [];
  for (const e of entries) {
    if (e.kind !== 'dir') files.push(e.path);
    else (levels[e.name.split('/').length] ??= []).push(e.path);
  }
  const gone = (e: unknown) => {
    if (code(e) !== 'ENOENT') throw e;
  };
  try {
    await forEachLimit(byParentInTurns(files), TREE_REMOVAL_PARALLELISM, (f) => fs.unlink(f).catch(gone));
    for (let i = levels.length - 1; i > 0; i--)
      await forEachLimit(byParentInTurns(levels[i] ?? []), TREE_REMOVAL_PARALLELISM, (d) => fs.rmdir(d).catch(gone));
    await fs.rmdir(root);
  } catch (first) {
    // What fs.rm says when it fails too is about its own walk; the first failure is the cause. A
    // file another process wrote meanwhile (rmdir: ENOTEMPTY) is found on its walk again.
    await fs.rm(root, { recursive: true, force: true, maxRetries: 3, retryDelay: 20 }).catch(() => {
      throw first;
    });
  }
}

/**
 * `mkdir -p`, one plain mkdir a level, each tried once more after its parent is made. Node's
 * recursive mkdir never returns where mkdir says "no such file" of a parent that exists (a target
 * under /proc/self spun a core for ever).
 */
export async function mkdirsOnce(p: string): Promise<void> {
  try {
    await fs.mkdir(p);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      // Something not a directory (a file, a dangling symlink) is in the way: mkdir's own error.
      if (await isDir(p)) return;
      throw e;
    }
    const parent = posix.dirname(p);
    if (code !== 'ENOENT' || parent === p) throw e;
    await mkdirsOnce(parent);
    await fs.mkdir(p).catch(async (again: NodeJS.ErrnoException) => {
      if (again.code !== 'EEXIST' || !(await isDir(p))) throw again;
    });
  }
}

const isDir = (p: string) =>
  fs.stat(p).then(
    (s) => s.isDirectory(),
    () => false,
  );

/**
 * A local path with the symbolic links of its existing part resolved (what is not there yet is
 * kept as written): one directory has one path however it is reached, so a job reached through
 * a link to its table is the same job. With `followLast` false the last name is kept as it is,
 * so a step that refuses a link given to it still sees the link.
 */
export function realLocalPath(p: string, followLast = true): string {
  if (!followLast) {
    const parent = posix.dirname(p);
    return parent === p ? p : posix.join(realLocalPath(parent), posix.basename(p));
  }
  const rest: string[] = [];
  for (let head = p; ;) {
    try {
      return posix.join(realpathSync(head), ...rest);
    } catch {
      // Not there (or not readable): resolve what is above it.
      const parent = posix.dirname(head);
      if (parent === head) return p;
      rest.unshift(posix.basename(head));
      head = parent;
    }
  }
}
