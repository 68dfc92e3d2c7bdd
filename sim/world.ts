// The simulated world: one in-memory store, processes on hosts with their own clocks, and a
// scheduler that decides, at every store call of every process, what happens next: which call
// lands, whether a process crashes for good, is paused (its call lands later), or gets a store
// fault. Nothing runs unless the scheduler lets it: a process's code runs from one store call to
// its next, alone, so a schedule (the list of choices) replays exactly.

import { StoreError } from '../src/errors.js';
import { MemoryStore, type MemoryStoreKind } from '../src/store/memory.js';
import type { Entry, ListOptions, RenameOptions, Store } from '../src/store/types.js';
import type { Readable } from 'node:stream';
import { current, turn, type TimerHost, type TimerOwner } from './clock.js';

/** The simulation's epoch: 2026-12-01T00:00:00Z. */
export const EPOCH_MS = Date.UTC(2026, 11, 1);

export interface Call {
  readonly seq: number;
  readonly proc: Proc;
  readonly op: string;
  readonly paths: readonly string[];
  readonly mutates: boolean;
  readonly exec: () => Promise<unknown>;
  readonly resolve: (v: unknown) => void;
  readonly reject: (e: unknown) => void;
}

export type Action =
  | { readonly kind: 'run'; readonly call: Call }
  | { readonly kind: 'crash'; readonly proc: Proc }
  /** The call fails before it reaches the store ('before') or after it landed, its answer lost ('after'). */
  | { readonly kind: 'fault'; readonly call: Call; readonly when: 'before' | 'after' }
  /** The process stops for `ms` (SIGSTOP, GC, a slow store): its pending call lands when it wakes. */
  | { readonly kind: 'pause'; readonly proc: Proc; readonly ms: number }
  /** Everyone waits `ms`: time passes with no call landing. */
  | { readonly kind: 'advance'; readonly ms: number };

export interface Chooser {
  /** Picks one of `options` (never empty): its index. */
  pick(options: readonly Action[], world: World): number;
}

export interface ProcClock {
  /** The host clock's offset from true time at the epoch (ms; + ahead, - behind). */
  readonly offsetMs: number;
  /** Its rate: 1 keeps time; 1.001 gains a millisecond a second. */
  readonly rate: number;
}

export type ProcState = 'running' | 'exited' | 'crashed';

export class Proc implements TimerOwner {
  state: ProcState = 'running';
  exitCode: number | undefined;
  error: unknown;
  result: unknown;
  readonly pending: Call[] = [];
  pausedUntil = 0;
  /** Store faults injected into this process's calls, and pauses it was given: an exit 1 may be honest then. */
  faulted = 0;
  paused = 0;
  /** The time its step returned or threw. */
  endedAt = 0;

  constructor(
    readonly world: World,
    readonly name: string,
    readonly host: string,
    readonly pid: number,
    readonly clock: ProcClock,
  ) {}

  get timers(): TimerHost {
    return this.world;
  }

  /** The process's own clock: true time, off by its host's offset and rate. */
  now(): number {
    return Math.round(EPOCH_MS + (this.world.time - EPOCH_MS) * this.clock.rate + this.clock.offsetMs);
  }

  get alive(): boolean {
    return this.state === 'running';
  }

  get label(): string {
    return `${this.name}@${this.host}:${this.pid}`;
  }
}

interface Timer {
  readonly id: number;
  readonly owner: Proc;
  due: number;
  readonly every: number | undefined;
  readonly fire: () => void;
}

/** A process's view of the store: every call waits for the scheduler, as a request waits for the network. */
class ProcStore implements Store {
  constructor(
    private readonly world: World,
    private readonly proc: Proc,
    private readonly inner: MemoryStore,
  ) {}
  get caps() {
    return this.inner.caps;
  }
  toUri(p: string): string {
    return this.inner.toUri(p);
  }
  private call<T>(op: string, paths: string[], mutates: boolean, exec: () => Promise<T>): Promise<T> {
    return this.world.enqueue(this.proc, op, paths, mutates, exec) as Promise<T>;
  }
  stat(p: string): Promise<Entry | null> {
    return this.call('stat', [p], false, () => this.inner.stat(p));
  }
  list(d: string, o?: ListOptions): Promise<Entry[]> {
    return this.call('list', [d], false, () => this.inner.list(d, o));
  }
  readFile(p: string): Promise<Buffer | null> {
    return this.call('readFile', [p], false, () => this.inner.readFile(p));
  }
  writeFile(p: string, data: Buffer | string): Promise<void> {
    return this.call('writeFile', [p], true, () => this.inner.writeFile(p, data));
  }
  createExclusive(p: string, data: Buffer | string): Promise<boolean> {
    return this.call('createExclusive', [p], true, () => this.inner.createExclusive(p, data));
  }
  mkdirs(p: string): Promise<void> {
    return this.call('mkdirs', [p], true, () => this.inner.mkdirs(p));
  }
  rename(s: string, d: string, o?: RenameOptions): Promise<void> {
    return this.call('rename', [s, d], true, () => this.inner.rename(s, d, o));
  }
  copy(s: string, d: string): Promise<void> {
    return this.call('copy', [s, d], true, () => this.inner.copy(s, d));
  }
  delete(p: string, r: boolean): Promise<boolean> {
    return this.call(r ? 'delete-tree' : 'delete', [p], true, () => this.inner.delete(p, r));
  }
  deleteMany(paths: readonly string[]): Promise<void> {
    return this.call('deleteMany', [...paths], true, () => this.inner.deleteMany(paths));
  }
  async put(d: string, source: { localPath: string } | { stream: Readable }): Promise<void> {
    // The bytes are read here (not a store call); the put is the call.
    if ('localPath' in source) throw new Error('the simulation stages streams, not local files');
    const data = Buffer.concat(await source.stream.toArray());
    return this.call('put', [d], true, () => this.inner.writeFile(d, data));
  }
}

export interface WorldOptions {
  readonly kind: MemoryStoreKind;
  /** Time each landed call takes (ms of true time). */
  readonly callMs?: number;
  /** Actions before the run is taken for a livelock. */
  readonly maxActions?: number;
}

interface MemoryInside {
  files: Map<string, unknown>;
  dirs: Map<string, number>;
}

export interface WorldSnapshot {
  readonly time: number;
  readonly files: ReadonlyMap<string, unknown>;
  readonly dirs: ReadonlyMap<string, number>;
}

/** What happened, one line per action: the readable trace of a schedule. */
export interface TraceLine {
  readonly t: number;
  readonly text: string;
}

export class World implements TimerHost {
  time = EPOCH_MS;
  readonly store: MemoryStore;
  readonly procs: Proc[] = [];
  readonly trace: TraceLine[] = [];
  private readonly timers = new Map<number, Timer>();
  private nextTimer = 1;
  private seq = 0;
  private activity = 0;
  private actions = 0;
  /** Time jumps (the random part's 'advance'): any lease may have run out meanwhile. */
  advanced = 0;
  readonly callMs: number;
  readonly maxActions: number;
  /** Checks run the moment a process ends (its promise is judged against the store as it is then). */
  onExit: ((p: Proc) => void) | undefined;

  constructor(readonly opts: WorldOptions) {
    this.store = new MemoryStore(opts.kind, () => this.time);
    this.callMs = opts.callMs ?? 1;
    this.maxActions = opts.maxActions ?? 20_000;
  }

  log(text: string): void {
    this.trace.push({ t: this.time - EPOCH_MS, text });
  }

  spawn(name: string, host: string, pid: number, clock: ProcClock = { offsetMs: 0, rate: 1 }): Proc {
    const p = new Proc(this, name, host, pid, clock);
    this.procs.push(p);
    return p;
  }

  storeOf(p: Proc): Store {
    return new ProcStore(this, p, this.store);
  }

  /** Whether `pid` runs on `host` (what a process there can tell; another host's pids it cannot). */
  pidAlive(host: string, pid: number): boolean {
    return this.procs.some((p) => p.host === host && p.pid === pid && p.alive);
  }

  /** Starts `body` as process `p`'s code; it runs only when the scheduler lets it. */
  start(p: Proc, body: () => Promise<unknown>): void {
    this.activity++;
    current.run(p, () => {
      void Promise.resolve()
        .then(body)
        .then(
          (r) => this.ended(p, 0, undefined, r),
          (e: unknown) => this.ended(p, exitCodeOf(e), e, undefined),
        );
    });
  }

  private ended(p: Proc, code: number, error: unknown, result: unknown): void {
    if (!p.alive) return;
    p.state = 'exited';
    p.exitCode = code;
    p.error = error;
    p.result = result;
    p.endedAt = this.time;
    this.activity++;
    this.dropTimers(p);
    this.log(`${p.label} exits ${code}${error ? `: ${describeError(error)}` : ''}`);
    this.onExit?.(p);
  }

  enqueue(proc: Proc, op: string, paths: string[], mutates: boolean, exec: () => Promise<unknown>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (!proc.alive) return; // a crashed process sends nothing
      proc.pending.push({ seq: ++this.seq, proc, op, paths, mutates, exec, resolve, reject });
      this.activity++;
    });
  }

  add(owner: TimerOwner, ms: number, fire: () => void, every?: number): number {
    const p = owner as Proc;
    const id = this.nextTimer++;
    // A timer measures the process's own elapsed time: a fast clock fires it early in true time.
    const trueMs = Math.max(1, Math.round(ms / p.clock.rate));
    this.timers.set(id, { id, owner: p, due: this.time + trueMs, every, fire });
    this.activity++;
    return id;
  }

  cancel(id: number): void {
    if (this.timers.delete(id)) this.activity++;
  }

  private dropTimers(p: Proc): void {
    for (const [id, t] of this.timers) if (t.owner === p) this.timers.delete(id);
  }

  /** Waits until every process is blocked on a store call or a timer, or has ended. */
  async settle(): Promise<void> {
    // A process's code between two calls is promise callbacks, all run before the next turn.
    let seen = -1;
    while (seen !== this.activity) {
      seen = this.activity;
      await turn();
    }
  }

  /** The store's contents and the time, to start other schedules from (the setup is the same in each). */
  snapshot(): WorldSnapshot {
    const m = this.store as unknown as MemoryInside;
    return { time: this.time, files: new Map(m.files), dirs: new Map(m.dirs) };
  }

  restore(s: WorldSnapshot): void {
    const m = this.store as unknown as MemoryInside;
    for (const [k, v] of s.files) m.files.set(k, v);
    for (const [k, v] of s.dirs) m.dirs.set(k, v);
    this.time = s.time;
  }

  /** Live processes whose calls may land now (not paused). */
  runnable(): Proc[] {
    return this.procs.filter((p) => p.alive && p.pausedUntil <= this.time && p.pending.length > 0);
  }

  /** Fires the timers due now, earliest first; true if any fired. */
  private fireDue(): boolean {
    const due = [...this.timers.values()]
      .filter((t) => t.due <= this.time && t.owner.alive && t.owner.pausedUntil <= this.time)
      .sort((a, b) => a.due - b.due || a.id - b.id);
    if (!due.length) return false;
    const t = due[0]!;
    if (t.every === undefined) this.timers.delete(t.id);
    else t.due = this.time + Math.max(1, Math.round(t.every / t.owner.clock.rate));
    this.activity++;
    current.run(t.owner, t.fire);
    return true;
  }

  /** When something next becomes possible without a call landing: a timer, or a paused process waking. */
  private nextWake(): number | undefined {
    let next: number | undefined;
    const consider = (at: number) => (next = next === undefined ? at : Math.min(next, at));
    for (const t of this.timers.values()) if (t.owner.alive) consider(Math.max(t.due, t.owner.pausedUntil));
    for (const p of this.procs) if (p.alive && p.pending.length && p.pausedUntil > this.time) consider(p.pausedUntil);
    return next;
  }

  /**
   * Runs every started process to its end (or crash) under `chooser`, asking `options` what may
   * happen at each point. Returns when nothing can happen any more.
   */
  async run(chooser: Chooser, options: (w: World) => Action[]): Promise<void> {
    for (;;) {
      await this.settle();
      if (this.fireDue()) continue;
      const opts = options(this);
      if (!opts.length) {
        const next = this.nextWake();
        if (next === undefined) break;
        this.time = Math.max(this.time, next);
        continue;
      }
      if (++this.actions > this.maxActions) throw new Error(`livelock: more than ${this.maxActions} actions`);
      await this.apply(opts[chooser.pick(opts, this)]!);
    }
    const stuck = this.procs.filter((p) => p.alive);
    if (stuck.length) throw new Error(`deadlock: ${stuck.map((p) => p.label).join(', ')} wait for nothing`);
  }

  async apply(a: Action): Promise<void> {
    switch (a.kind) {
      case 'run':
      case 'fault':
        return this.land(a.call, a.kind === 'fault' ? a.when : undefined);
      case 'crash':
        a.proc.state = 'crashed';
        a.proc.endedAt = this.time;
        a.proc.pending.length = 0;
        this.dropTimers(a.proc);
        this.activity++;
        this.log(`${a.proc.label} CRASHES`);
        this.onExit?.(a.proc);
        return;
      case 'pause':
        a.proc.pausedUntil = this.time + a.ms;
        a.proc.paused++;
        this.log(`${a.proc.label} paused ${a.ms} ms`);
        return;
      case 'advance':
        this.time += a.ms;
        this.advanced++;
        this.log(`time passes ${a.ms} ms`);
        return;
    }
  }

  private async land(c: Call, fault: 'before' | 'after' | undefined): Promise<void> {
    const i = c.proc.pending.indexOf(c);
    c.proc.pending.splice(i, 1);
    this.time += this.callMs;
    const what = `${c.op} ${c.paths.map(short).join(' -> ')}`;
    if (fault === 'before') {
      c.proc.faulted++;
      this.log(`${c.proc.label} ${what} FAILS (never sent)`);
      c.reject(
        new StoreError(
          'io',
          c.op,
          c.paths.map((p) => this.store.toUri(p)),
          'injected store fault',
        ),
      );
      return;
    }
    let out: { ok: true; v: unknown } | { ok: false; e: unknown };
    try {
      out = { ok: true, v: await c.exec() };
    } catch (e) {
      out = { ok: false, e };
    }
    if (fault === 'after') {
      c.proc.faulted++;
      this.log(`${c.proc.label} ${what} lands, its answer LOST`);
      c.reject(
        new StoreError(
          'io',
          c.op,
          c.paths.map((p) => this.store.toUri(p)),
          'injected fault: answer lost',
        ),
      );
      return;
    }
    this.log(`${c.proc.label} ${what}${out.ok ? answer(c.op, out.v) : ` -> ${(out.e as Error).message}`}`);
    if (out.ok) c.resolve(out.v);
    else c.reject(out.e);
  }
}

function answer(op: string, v: unknown): string {
  if (op === 'createExclusive') return v ? ' (made)' : ' (exists)';
  if (op === 'stat' || op === 'readFile') return v ? '' : ' (none)';
  if (op === 'list') return ` [${(v as Entry[]).map((e) => e.name).join(' ')}]`;
  return '';
}

/** Paths in a trace: the table's root is left out. */
function short(p: string): string {
  return p.replace(/^\/w\//, '');
}

export function exitCodeOf(e: unknown): number {
  const code = (e as { exitCode?: unknown })?.exitCode;
  return typeof code === 'number' ? code : 1;
}

export function describeError(e: unknown): string {
  const name = (e as Error)?.constructor?.name ?? 'Error';
  return `${name}: ${String((e as Error)?.message ?? e).split('\n')[0]}`;
}
