// A store wrapper that every call goes through: counts operations (protocol.md §9.3) and lets hooks run
// before each call (fault injection wraps the real store here, never a mock). Faults are named by
// operation and path (Hadoop's UnreliableManifestStoreOperations), or by a mutation's number.

import { InjectedFault } from '../errors.js';
import type { StoreError } from '../errors.js';
import type {
  PutSource,
  Entry,
  ListOptions,
  MutatingOp,
  PendingUpload,
  ReadOp,
  ReadyUpload,
  RenameOptions,
  RenamePair,
  Store,
  StoreOp,
} from './types.js';

export type OpCounts = Partial<Record<StoreOp, number>>;

/** Called before each mutating operation with its 1-based sequence number. */
export type MutationHook = (n: number, op: MutatingOp, path: string) => void | Promise<void>;
/** Called before each read. */
export type ReadHook = (op: ReadOp, path: string) => void | Promise<void>;

export interface StoreHooks {
  readonly beforeMutation?: MutationHook;
  readonly beforeRead?: ReadHook;
}

export class InstrumentedStore implements Store {
  readonly counts: OpCounts = {};
  private mutations = 0;
  private readonly requestBase: number;
  private readonly hooks: StoreHooks;
  constructor(
    readonly inner: Store,
    hooks: MutationHook | StoreHooks = {},
  ) {
    this.requestBase = inner.requestCount?.() ?? 0;
    this.hooks = typeof hooks === 'function' ? { beforeMutation: hooks } : hooks;
  }

  get caps() {
    return this.inner.caps;
  }
  get namespaceDepth(): number | undefined {
    return this.inner.namespaceDepth;
  }

  private count(op: StoreOp): void {
    this.counts[op] = (this.counts[op] ?? 0) + 1;
  }

  /** Counts a call that changes something and runs the hook (a step's fence, if any, admitted it already: fence.ts). */
  private async mutate(op: MutatingOp, path: string): Promise<void> {
    this.count(op);
    const n = ++this.mutations;
    if (this.hooks.beforeMutation) await this.hooks.beforeMutation(n, op, path);
  }

  private async read(op: ReadOp, path: string): Promise<void> {
    this.count(op);
    if (this.hooks.beforeRead) await this.hooks.beforeRead(op, path);
  }

  toUri(p: string): string {
    return this.inner.toUri(p);
  }
  async stat(p: string): Promise<Entry | null> {
    await this.read('stat', p);
    return this.inner.stat(p);
  }
  async list(d: string, o?: ListOptions): Promise<Entry[]> {
    await this.read('list', d);
    return this.inner.list(d, o);
  }
  async readFile(p: string): Promise<Buffer | null> {
    await this.read('readFile', p);
    return this.inner.readFile(p);
  }
  async writeFile(p: string, data: Buffer | string): Promise<void> {
    await this.mutate('writeFile', p);
    return this.inner.writeFile(p, data);
  }
  async createExclusive(p: string, data: Buffer | string): Promise<boolean> {
    await this.mutate('createExclusive', p);
    return this.inner.createExclusive(p, data);
  }
  async mkdirs(p: string): Promise<void> {
    await this.mutate('mkdirs', p);
    return this.inner.mkdirs(p);
  }
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
  get listTree(): ((dir: string, o?: ListOptions) => Promise<Entry[]>) | undefined {
    const f = this.inner.listTree?.bind(this.inner);
    return f && (async (dir, o) => (await this.read('list', dir), f(dir, o)));
  }
  get listTreeEach(): ((dir: string, o: ListOptions, fn: (e: Entry) => void) => Promise<void>) | undefined {
    const f = this.inner.listTreeEach?.bind(this.inner);
    return f && (async (dir, o, fn) => (await this.read('list', dir), f(dir, o, fn)));
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

  get sameFilesystem(): ((a: string, b: string) => Promise<boolean>) | undefined {
    return this.inner.sameFilesystem?.bind(this.inner);
  }
  get syncFiles(): Store['syncFiles'] {
    return this.inner.syncFiles?.bind(this.inner);
  }
  get pathOfUri(): ((uri: string) => string | null) | undefined {
    return this.inner.pathOfUri?.bind(this.inner);
  }

  get verify(): ((dir: string) => Promise<void>) | undefined {
    return this.inner.verify?.bind(this.inner);
  }
  get listUploads(): ((dir: string) => Promise<PendingUpload[]>) | undefined {
    const f = this.inner.listUploads?.bind(this.inner);
    return f && (async (dir) => (await this.read('list', dir), f(dir)));
  }
  get abortUpload(): ((u: Pick<PendingUpload, 'path' | 'uploadId'>) => Promise<void>) | undefined {
    const f = this.inner.abortUpload?.bind(this.inner);
    return f && (async (u) => (await this.mutate('delete', u.path), f(u)));
  }
  get pendingUploadMinBytes(): number | undefined {
    return this.inner.pendingUploadMinBytes;
  }
  get beginUpload(): ((p: string) => Promise<string>) | undefined {
    const f = this.inner.beginUpload?.bind(this.inner);
    return f && (async (p) => (await this.mutate('upload', p), f(p)));
  }
  get uploadParts(): Store['uploadParts'] {
    const f = this.inner.uploadParts?.bind(this.inner);
    return (
      f && (async (p, id, local, size, onBytes) => (await this.mutate('upload', p), f(p, id, local, size, onBytes)))
    );
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
  async copy(s: string, d: string): Promise<void> {
    await this.mutate('copy', s);
    return this.inner.copy(s, d);
  }
  async delete(p: string, r: boolean): Promise<boolean> {
    await this.mutate('delete', p);
    return this.inner.delete(p, r);
  }
  async put(d: string, src: PutSource): Promise<void> {
    await this.mutate('put', d);
    return this.inner.put(d, src);
  }
}

/**
 * A hook that throws at the k-th mutation: the operation and all after it never happen.
 * `tripped()` tells whether it fired (a step may swallow the fault, e.g. a lease release).
 */
export function failAt(k: number): MutationHook & { tripped(): boolean } {
  let tripped = false;
  const hook = (n: number, op: MutatingOp, path: string): void => {
    if (tripped || n >= k) {
      tripped = true;
      throw new InjectedFault(n, op, path);
    }
  };
  return Object.assign(hook, { tripped: () => tripped });
}

/**
 * Which calls a fault applies to: operations (any, when absent) and paths (any, when absent),
 * the path being the one a call names first (a rename's or a copy's source).
 */
export interface CallMatch {
  readonly op?: StoreOp | readonly StoreOp[];
  readonly path?: RegExp | ((path: string) => boolean);
  /** Operation and path judged together (a point reached by different calls on different stores). */
  readonly call?: (op: StoreOp, path: string) => boolean;
}

export function matches(m: CallMatch, op: StoreOp, path: string): boolean {
  const ops = m.op === undefined ? undefined : typeof m.op === 'string' ? [m.op] : m.op;
  if (ops && !ops.includes(op)) return false;
  if (m.call && !m.call(op, path)) return false;
  if (m.path === undefined) return true;
  return typeof m.path === 'function' ? m.path(path) : m.path.test(path);
}

export interface FaultRule extends CallMatch {
  /** How many matching calls fail before the rest go through (default: all of them). */
  readonly times?: number;
  /** The error a failing call throws (default: InjectedFault). */
  readonly error?: (op: StoreOp, path: string) => Error;
}

/**
 * An unreliable store: each call that a rule matches fails (reads too), up to the rule's
 * `times`, and the store goes on working otherwise. Returns the hooks and how many calls failed.
 */
export function unreliable(...rules: readonly FaultRule[]): StoreHooks & { failures(): number } {
  const left = rules.map((r) => r.times ?? Infinity);
  let failed = 0;
  const check = (n: number, op: StoreOp, path: string): void => {
    const i = rules.findIndex((r, j) => left[j]! > 0 && matches(r, op, path));
    if (i < 0) return;
    left[i]!--;
    failed++;
    throw rules[i]!.error?.(op, path) ?? new InjectedFault(n, op, path);
  };
  return { beforeMutation: check, beforeRead: (op, path) => check(0, op, path), failures: () => failed };
}

/**
 * A crash at a named mutation: the first mutation that `at` matches, and every mutation after
 * it, never happen (as failAt, with the point named rather than counted). With `after`, the
 * matching mutation happens and the crash comes at the next one. `tripped()` tells whether the
 * crash came, so a test can assert that it reached its point.
 */
export function crashAt(at: CallMatch, opts: { after?: boolean } = {}): MutationHook & { tripped(): boolean } {
  let state: 'armed' | 'next' | 'dead' = 'armed';
  const hook = (n: number, op: MutatingOp, path: string): void => {
    if (state === 'armed' && matches(at, op, path)) state = opts.after ? 'next' : 'dead';
    else if (state === 'next') state = 'dead';
    if (state === 'dead') throw new InjectedFault(n, op, path);
  };
  return Object.assign(hook, { tripped: () => state === 'dead' });
}
