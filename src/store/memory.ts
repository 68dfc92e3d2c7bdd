// A store held in this process's memory: the Store contract (types.ts) with nothing behind it,
// for step-level tests that need no process boundary. It poses as a filesystem (directories,
// atomic file and directory renames) or as an object store (no directories, renames by copy).

import { readFile } from 'node:fs/promises';
import { posix } from 'node:path';
import { StoreError } from '../errors.js';
import type { Entry, ListOptions, PutSource, RenameOptions, Store, StoreCapabilities } from './types.js';
import { compareStrings } from '../util/compare.js';

export type MemoryStoreKind = 'filesystem' | 'object';

const CAPS: Record<MemoryStoreKind, StoreCapabilities> = {
  filesystem: { directoryRename: true, realDirectories: true },
  object: { directoryRename: false, realDirectories: false, listsInOrder: true },
};

interface MemFile {
  readonly data: Buffer;
  readonly mtimeMs: number;
}

function norm(p: string): string {
  const n = posix.normalize(p);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

function under(p: string, dir: string): boolean {
  return dir === '/' ? p !== '/' : p.startsWith(dir + '/');
}

/** Each call yields once before it acts, so concurrent steps interleave at call boundaries. */
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

export class MemoryStore implements Store {
  readonly name = 'memory';
  readonly caps: StoreCapabilities;
  private readonly files = new Map<string, MemFile>();
  /** Directories made on their own (filesystem kind only; '/' always exists). */
  private readonly dirs = new Map<string, number>();

  constructor(
    readonly kind: MemoryStoreKind = 'filesystem',
    private readonly now: () => number = Date.now,
  ) {
    this.caps = CAPS[kind];
  }

  toUri(p: string): string {
    return `memory://${p}`;
  }

  private isDir(p: string): boolean {
    if (p === '/' || this.dirs.has(p)) return true;
    if (this.caps.realDirectories) return false;
    for (const k of this.files.keys()) if (under(k, p)) return true;
    return false;
  }

  private fail(
    kind: 'not-found' | 'exists' | 'io' | 'refused',
    op: string,
    paths: string[],
    detail: string,
  ): StoreError {
    return new StoreError(
      kind,
      op,
      paths.map((p) => this.toUri(p)),
      detail,
    );
  }

  /** Filesystem kind: every ancestor of `p` becomes a directory; a file in the way is an error. */
  private makeParents(p: string, op: string): void {
    if (!this.caps.realDirectories) return;
    const chain: string[] = [];
    for (let d = posix.dirname(p); d !== '/'; d = posix.dirname(d)) chain.unshift(d);
    for (const d of chain) {
      if (this.files.has(d)) throw this.fail('io', op, [p], `${d} is a file, not a directory`);
      if (!this.dirs.has(d)) this.dirs.set(d, this.now());
    }
  }

  private parentMissing(p: string): boolean {
    return this.caps.realDirectories && !this.isDir(posix.dirname(p));
  }

  private set(p: string, data: Buffer | string): void {
    this.files.set(p, { data: Buffer.from(data), mtimeMs: this.now() });
  }

  async stat(path: string): Promise<Entry | null> {
    await tick();
    const p = norm(path);
    const f = this.files.get(p);
    if (f) return { name: posix.basename(p), path: p, kind: 'file', size: f.data.length, mtimeMs: f.mtimeMs };
    if (this.isDir(p))
      return { name: posix.basename(p), path: p, kind: 'dir', size: 0, mtimeMs: this.dirs.get(p) ?? 0 };
    return null;
  }

  async list(path: string, opts?: ListOptions): Promise<Entry[]> {
    await tick();
    const dir = norm(path);
    const out = new Map<string, Entry>();
    for (const [k, f] of this.files) {
      if (!under(k, dir)) continue;
      const name = k.slice(dir === '/' ? 1 : dir.length + 1).split('/')[0]!;
      const child = posix.join(dir, name);
      if (child === k) out.set(name, { name, path: k, kind: 'file', size: f.data.length, mtimeMs: f.mtimeMs });
      else if (!out.has(name))
        out.set(name, { name, path: child, kind: 'dir', size: 0, mtimeMs: this.dirs.get(child) ?? 0 });
    }
    for (const [d, mtimeMs] of this.dirs) {
      if (posix.dirname(d) === dir && d !== dir)
        out.set(posix.basename(d), { name: posix.basename(d), path: d, kind: 'dir', size: 0, mtimeMs });
    }
    const after = opts?.startAfter;
    return [...out.values()]
      .filter((e) => after === undefined || e.name > after)
      .sort((a, b) => compareStrings(a.name, b.name));
  }

  async readFile(path: string): Promise<Buffer | null> {
    await tick();
    const p = norm(path);
    const f = this.files.get(p);
    if (f) return Buffer.from(f.data);
    if (this.caps.realDirectories && this.isDir(p)) throw this.fail('io', 'readFile', [p], 'is a directory');
    return null;
  }

  async writeFile(path: string, data: Buffer | string): Promise<void> {
    await tick();
    const p = norm(path);
    if (this.caps.realDirectories && this.isDir(p)) throw this.fail('io', 'writeFile', [p], 'is a directory');
    this.makeParents(p, 'writeFile');
    this.set(p, data);
  }

  async createExclusive(path: string, data: Buffer | string): Promise<boolean> {
    await tick();
    const p = norm(path);
    if (this.files.has(p) || (this.caps.realDirectories && this.isDir(p))) return false;
    this.makeParents(p, 'createExclusive');
    this.set(p, data);
    return true;
  }

  async mkdirs(path: string): Promise<void> {
    await tick();
    const p = norm(path);
    if (!this.caps.realDirectories || p === '/') return;
    if (this.files.has(p)) throw this.fail('exists', 'mkdirs', [p], 'a file has this name');
    this.makeParents(p, 'mkdirs');
    if (!this.dirs.has(p)) this.dirs.set(p, this.now());
  }

  async rename(source: string, destination: string, opts: RenameOptions = {}): Promise<void> {
    await tick();
    const [src, dst] = [norm(source), norm(destination)];
    const file = this.files.get(src);
    if (!file && !this.isDir(src)) throw this.fail('not-found', 'rename', [src, dst], 'the source does not exist');
    if (this.isDir(dst) || (this.files.has(dst) && (!opts.replace || !file)))
      throw this.fail('exists', 'rename', [src, dst], 'destination exists');
    if (this.parentMissing(dst))
      throw this.fail('not-found', 'rename', [src, dst], "the destination's parent does not exist");
    if (file) {
      this.files.delete(src);
      this.files.set(dst, file);
      return;
    }
    if (!this.caps.directoryRename)
      throw this.fail('refused', 'rename', [src, dst], 'directories cannot be renamed on this store');
    if (under(dst, src)) throw this.fail('io', 'rename', [src, dst], 'cannot move a directory inside itself');
    const moved = (p: string) => dst + p.slice(src.length);
    for (const [k, f] of [...this.files]) {
      if (!under(k, src)) continue;
      this.files.delete(k);
      this.files.set(moved(k), f);
    }
    for (const [d, t] of [...this.dirs]) {
      if (d !== src && !under(d, src)) continue;
      this.dirs.delete(d);
      this.dirs.set(moved(d), t);
    }
  }

  async copy(source: string, destination: string): Promise<void> {
    await tick();
    const [src, dst] = [norm(source), norm(destination)];
    const f = this.files.get(src);
    if (!f) throw this.fail('not-found', 'copy', [src, dst], 'the source does not exist');
    if (this.parentMissing(dst))
      throw this.fail('not-found', 'copy', [src, dst], "the destination's parent does not exist");
    this.set(dst, f.data);
  }

  async delete(path: string, recursive: boolean): Promise<boolean> {
    await tick();
    const p = norm(path);
    if (this.files.delete(p)) return true;
    if (!this.isDir(p)) return false;
    const inside = [...this.files.keys(), ...this.dirs.keys()].filter((k) => under(k, p));
    if (!recursive) {
      // An object store has no directory to remove: only its objects are.
      if (!this.caps.realDirectories) return false;
      if (inside.length) throw this.fail('exists', 'delete', [p], 'the directory is not empty');
    }
    for (const k of inside) {
      this.files.delete(k);
      this.dirs.delete(k);
    }
    return this.dirs.delete(p) || inside.length > 0;
  }

  async deleteMany(paths: readonly string[]): Promise<void> {
    await tick();
    for (const p of paths) this.files.delete(norm(p));
  }

  async put(destination: string, source: PutSource): Promise<void> {
    const data =
      'localPath' in source ? await readFile(source.localPath) : Buffer.concat(await source.stream.toArray());
    await this.writeFile(destination, data);
  }
}
