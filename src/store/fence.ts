// What may stop a store's changes: the job lease (protocol.md §5.6). A step's calls carry their fence
// with them (AsyncLocalStorage), so two steps that share one store object in a process — two
// jobs committed at once through the library — each answer to their own lease.

import { AsyncLocalStorage } from 'node:async_hooks';
import type { Entry, ListOptions, PutSource, ReadyUpload, RenameOptions, Store } from './types.js';

/**
 * `admit` throws when no request may change `path` any more; else it returns a signal that aborts
 * once that becomes so (none: never), so that a request sent just before is not left to land later.
 */
export interface StoreFence {
  admit(path: string): AbortSignal | undefined;
}

const active = new AsyncLocalStorage<StoreFence>();

/** Runs `fn` (a store call) under `fence`: every request it sends that changes something asks it. */
export function withFence<T>(fence: StoreFence | undefined, fn: () => T): T {
  return fence ? active.run(fence, fn) : fn();
}

/**
 * For stores that send requests of their own (S3, WebHDFS): asked before every request that
 * changes something, first tries, retries and the parts of one call alike; throws when the fence
 * has tripped, else returns the signal that cuts the request off if it trips before the answer.
 */
export function admitChange(...paths: readonly (string | undefined)[]): AbortSignal | undefined {
  const fence = active.getStore();
  if (!fence) return undefined;
  // Usually one signal for every path (the lease's): no combined signal made per request then.
  const signals = [...new Set(paths.flatMap((p) => (p === undefined ? [] : [fence.admit(p)])))].filter(
    (s) => s !== undefined,
  );
  return signals.length > 1 ? AbortSignal.any(signals) : signals[0];
}

/**
 * A store whose every change asks `fence` first and runs under it (its requests cut off when the
 * fence trips). Only a step that holds the job lease has one (runner.ts): a function that must
 * not change a job without the lease takes a FencedStore, and cannot be given a bare store.
 */
export class FencedStore implements Store {
  constructor(
    readonly inner: Store,
    readonly fence: StoreFence,
  ) {}

  /** Admits every path the call changes, then runs it under the fence. */
  private change<T>(paths: readonly string[], fn: () => Promise<T>): Promise<T> {
    try {
      for (const p of paths) this.fence.admit(p);
    } catch (e) {
      return Promise.reject(e);
    }
    return withFence(this.fence, fn);
  }

  get caps() {
    return this.inner.caps;
  }
  get namespaceDepth(): number | undefined {
    return this.inner.namespaceDepth;
  }
  toUri(p: string): string {
    return this.inner.toUri(p);
  }
  get pathOfUri(): Store['pathOfUri'] {
    return this.inner.pathOfUri?.bind(this.inner);
  }
  get requestCount(): Store['requestCount'] {
    return this.inner.requestCount?.bind(this.inner);
  }
  get verify(): Store['verify'] {
    return this.inner.verify?.bind(this.inner);
  }
  stat(p: string): Promise<Entry | null> {
    return this.inner.stat(p);
  }
  list(d: string, o?: ListOptions): Promise<Entry[]> {
    return this.inner.list(d, o);
  }
  readFile(p: string): Promise<Buffer | null> {
    return this.inner.readFile(p);
  }
  get listTree(): Store['listTree'] {
    return this.inner.listTree?.bind(this.inner);
  }
  get listTreeEach(): Store['listTreeEach'] {
    return this.inner.listTreeEach?.bind(this.inner);
  }
  get listUploads(): Store['listUploads'] {
    return this.inner.listUploads?.bind(this.inner);
  }
  get checkWritable(): Store['checkWritable'] {
    return this.inner.checkWritable?.bind(this.inner);
  }
  get sameFilesystem(): Store['sameFilesystem'] {
    return this.inner.sameFilesystem?.bind(this.inner);
  }
  get syncFiles(): Store['syncFiles'] {
    return this.inner.syncFiles?.bind(this.inner);
  }
  get pendingUploadMinBytes(): number | undefined {
    return this.inner.pendingUploadMinBytes;
  }
  writeFile(p: string, data: Buffer | string): Promise<void> {
    return this.change([p], () => this.inner.writeFile(p, data));
  }
  createExclusive(p: string, data: Buffer | string): Promise<boolean> {
    return this.change([p], () => this.inner.createExclusive(p, data));
  }
  mkdirs(p: string): Promise<void> {
    return this.change([p], () => this.inner.mkdirs(p));
  }
  rename(s: string, d: string, o?: RenameOptions): Promise<void> {
    return this.change([s, d], () => this.inner.rename(s, d, o));
  }
  copy(s: string, d: string): Promise<void> {
    return this.change([s, d], () => this.inner.copy(s, d));
  }
  delete(p: string, r: boolean): Promise<boolean> {
    return this.change([p], () => this.inner.delete(p, r));
  }
  put(d: string, src: PutSource): Promise<void> {
    return this.change([d], () => this.inner.put(d, src));
  }
  get renameMany(): Store['renameMany'] {
    const many = this.inner.renameMany?.bind(this.inner);
    return (
      many &&
      ((pairs) =>
        this.change(
          pairs.flatMap((p) => [p.src, p.dst]),
          () => many(pairs),
        ))
    );
  }
  get deleteMany(): Store['deleteMany'] {
    const many = this.inner.deleteMany?.bind(this.inner);
    return many && ((paths) => this.change(paths, () => many(paths)));
  }
  get abortUpload(): Store['abortUpload'] {
    const f = this.inner.abortUpload?.bind(this.inner);
    return f && ((u) => this.change([u.path], () => f(u)));
  }
  get beginUpload(): Store['beginUpload'] {
    const f = this.inner.beginUpload?.bind(this.inner);
    return f && ((p) => this.change([p], () => f(p)));
  }
  get uploadParts(): Store['uploadParts'] {
    const f = this.inner.uploadParts?.bind(this.inner);
    return f && ((p, id, local, size, onBytes) => this.change([p], () => f(p, id, local, size, onBytes)));
  }
  get completeUpload(): Store['completeUpload'] {
    const f = this.inner.completeUpload?.bind(this.inner);
    return f && ((u: ReadyUpload) => this.change([u.path], () => f(u)));
  }
}
