// A store wrapper that every call goes through: counts operations (DESIGN §9) and lets a
// hook run before each mutation (fault injection wraps the real store here, never a mock).

import type { Readable } from 'node:stream';
import { InjectedFault } from '../errors.js';
import type { StoreError } from '../errors.js';
import type { Entry, ListOptions, MutatingOp, PendingUpload, ReadyUpload, RenameOptions, RenamePair, Store, StoreOp } from './types.js';

export type OpCounts = Partial<Record<StoreOp, number>>;

/** Called before each mutating operation with its 1-based sequence number. */
export type MutationHook = (n: number, op: MutatingOp, path: string) => void | Promise<void>;

export class InstrumentedStore implements Store {
  readonly counts: OpCounts = {};
  private mutations = 0;
  private readonly requestBase: number;
  constructor(readonly inner: Store, private readonly beforeMutation?: MutationHook) {
    this.requestBase = inner.requestCount?.() ?? 0;
  }

  get name(): string { return this.inner.name; }
  get caps() { return this.inner.caps; }
  get mutationCount(): number { return this.mutations; }

  private count(op: StoreOp): void {
    this.counts[op] = (this.counts[op] ?? 0) + 1;
  }

  private async mutate(op: MutatingOp, path: string): Promise<void> {
    this.count(op);
    const n = ++this.mutations;
    if (this.beforeMutation) await this.beforeMutation(n, op, path);
  }

  toUri(p: string): string { return this.inner.toUri(p); }
  async stat(p: string): Promise<Entry | null> { this.count('stat'); return this.inner.stat(p); }
  async list(d: string, o?: ListOptions): Promise<Entry[]> { this.count('list'); return this.inner.list(d, o); }
  async readFile(p: string): Promise<Buffer | null> { this.count('readFile'); return this.inner.readFile(p); }
  async writeFile(p: string, data: Buffer | string): Promise<void> {
    await this.mutate('writeFile', p);
    return this.inner.writeFile(p, data);
  }
  async createExclusive(p: string, data: Buffer | string): Promise<boolean> {
    await this.mutate('createExclusive', p);
    return this.inner.createExclusive(p, data);
  }
  async mkdirs(p: string): Promise<void> { await this.mutate('mkdirs', p); return this.inner.mkdirs(p); }
  async rename(s: string, d: string, o?: RenameOptions): Promise<void> {
    await this.mutate('rename', s);
    return this.inner.rename(s, d, o);
  }
  get renameMany(): ((pairs: readonly RenamePair[]) => Promise<(StoreError | null)[]>) | undefined {
    const many = this.inner.renameMany?.bind(this.inner);
    if (!many) return undefined;
    return async (pairs) => {
      // Each pair is one counted mutation; a hook that fails at pair k stops the batch there.
      let allowed = 0;
      let fault: unknown;
      for (const p of pairs) {
        try {
          await this.mutate('rename', p.src);
        } catch (e) {
          fault = e;
          break;
        }
        allowed++;
      }
      const done = allowed ? await many(pairs.slice(0, allowed)) : [];
      if (fault !== undefined) throw fault;
      return done;
    };
  }
  get deleteMany(): ((paths: readonly string[]) => Promise<void>) | undefined {
    const many = this.inner.deleteMany?.bind(this.inner);
    if (!many) return undefined;
    return async (paths) => {
      for (const p of paths) await this.mutate('delete', p);
      await many(paths);
    };
  }
  get checkWritable(): ((dirs: readonly string[]) => Promise<void>) | undefined {
    return this.inner.checkWritable?.bind(this.inner);
  }
  get verify(): ((dir: string) => Promise<void>) | undefined {
    return this.inner.verify?.bind(this.inner);
  }
  get listTree(): ((dir: string) => Promise<Entry[]>) | undefined {
    const f = this.inner.listTree?.bind(this.inner);
    return f && (async (dir) => (this.count('list'), f(dir)));
  }
  get listUploads(): ((dir: string) => Promise<PendingUpload[]>) | undefined {
    const f = this.inner.listUploads?.bind(this.inner);
    return f && (async (dir) => (this.count('list'), f(dir)));
  }
  get abortUpload(): ((u: Pick<PendingUpload, 'path' | 'uploadId'>) => Promise<void>) | undefined {
    const f = this.inner.abortUpload?.bind(this.inner);
    return f && (async (u) => (await this.mutate('delete', u.path), f(u)));
  }
  get pendingUploadMinBytes(): number | undefined { return this.inner.pendingUploadMinBytes; }
  get beginUpload(): ((p: string) => Promise<string>) | undefined {
    const f = this.inner.beginUpload?.bind(this.inner);
    return f && (async (p) => (await this.mutate('upload', p), f(p)));
  }
  get uploadParts(): ((p: string, id: string, local: string, size: number) => Promise<string[]>) | undefined {
    const f = this.inner.uploadParts?.bind(this.inner);
    return f && (async (p, id, local, size) => (await this.mutate('upload', p), f(p, id, local, size)));
  }
  get completeUpload(): ((u: ReadyUpload) => Promise<void>) | undefined {
    const f = this.inner.completeUpload?.bind(this.inner);
    return f && (async (u) => (await this.mutate('complete', u.path), f(u)));
  }
  /** The counts, with the HTTP requests of stores that make them. */
  metrics(): OpCounts & { requests?: number } {
    const r = this.inner.requestCount?.();
    return r === undefined ? { ...this.counts } : { ...this.counts, requests: r - this.requestBase };
  }
  async copy(s: string, d: string): Promise<void> { await this.mutate('copy', s); return this.inner.copy(s, d); }
  async delete(p: string, r: boolean): Promise<boolean> { await this.mutate('delete', p); return this.inner.delete(p, r); }
  async put(d: string, src: { localPath: string } | { stream: Readable }): Promise<void> {
    await this.mutate('put', d);
    return this.inner.put(d, src);
  }
}

/** A hook that throws at the k-th mutation: the operation and all after it never happen. */
export function failAt(k: number): MutationHook {
  let tripped = false;
  return (n, op, path) => {
    if (tripped || n >= k) {
      tripped = true;
      throw new InjectedFault(n, op, path);
    }
  };
}
