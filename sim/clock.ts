// The harness owns time: every timer a simulated process sets (its lease renewal, the lease's
// trip, a poll's sleep) is a virtual timer that fires when the simulation's time reaches it, and
// only then. Timers set outside a simulated process (the test runner's own) stay real. Random
// ids come from a counter while the simulation runs.

import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire, syncBuiltinESMExports } from 'node:module';

/** What a virtual timer belongs to: the process that set it, with the time it keeps. */
export interface TimerOwner {
  readonly timers: TimerHost;
}

export interface TimerHost {
  /** Registers a timer `ms` from now (on the simulation's time); returns its id. */
  add(owner: TimerOwner, ms: number, fire: () => void, every?: number): number;
  cancel(id: number): void;
}

/** The simulated process whose code is running now (carried through promises and timers). */
export const current = new AsyncLocalStorage<TimerOwner>();

class VirtualHandle {
  constructor(
    readonly id: number,
    private readonly host: TimerHost,
  ) {}
  unref(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  hasRef(): boolean {
    return false;
  }
  refresh(): this {
    return this;
  }
  close(): this {
    this.host.cancel(this.id);
    return this;
  }
  [Symbol.toPrimitive](): number {
    return this.id;
  }
}

const require = createRequire(import.meta.url);
const timersPromises = require('node:timers/promises') as typeof import('node:timers/promises');
const crypto = require('node:crypto') as typeof import('node:crypto');
const real = {
  randomUUID: crypto.randomUUID,
  randomBytes: crypto.randomBytes,
  setTimeout: globalThis.setTimeout,
  clearTimeout: globalThis.clearTimeout,
  setInterval: globalThis.setInterval,
  clearInterval: globalThis.clearInterval,
  sleep: timersPromises.setTimeout,
};

let installed = 0;
let idCounter = 0;

/** Ids and temp names the steps draw at random are drawn from a counter instead: a schedule replays. */
export function resetIds(to = 0): void {
  idCounter = to;
}

export function idsDrawn(): number {
  return idCounter;
}

function fakeUUID(): string {
  const h = (++idCounter).toString(16).padStart(12, '0');
  return `00000000-0000-4000-8000-${h}`;
}

function fakeBytes(n: number, cb?: (e: Error | null, b: Buffer) => void): Buffer | undefined {
  const b = Buffer.alloc(n);
  let v = ++idCounter;
  for (let i = n - 1; i >= 0 && v > 0; i--, v = Math.floor(v / 256)) b[i] = v % 256;
  if (cb) return void cb(null, b);
  return b;
}

type AnyFn = (...args: unknown[]) => void;

function virtualSet(every: boolean) {
  const realSet = every ? real.setInterval : real.setTimeout;
  return function (this: unknown, cb: AnyFn, ms?: number, ...args: unknown[]) {
    const owner = current.getStore();
    if (!owner) return (realSet as (...a: unknown[]) => unknown)(cb, ms, ...args);
    const delay = Math.max(1, Number(ms) || 0);
    const id = owner.timers.add(owner, delay, () => cb(...args), every ? delay : undefined);
    return new VirtualHandle(id, owner.timers);
  };
}

function virtualClear(realClear: (h: unknown) => void) {
  return (h: unknown) => {
    if (h instanceof VirtualHandle) h.close();
    else realClear(h as never);
  };
}

function virtualSleep<T>(ms?: number, value?: T, opts?: { signal?: AbortSignal }): Promise<T> {
  const owner = current.getStore();
  if (!owner) return real.sleep(ms, value, opts as never) as Promise<T>;
  return new Promise<T>((resolve, reject) => {
    const id = owner.timers.add(owner, Math.max(1, Number(ms) || 0), () => resolve(value as T));
    opts?.signal?.addEventListener('abort', () => (owner.timers.cancel(id), reject(opts.signal!.reason)), {
      once: true,
    });
  });
}

/** Routes the timers of simulated processes to the harness until `uninstallTimers` (nested calls count). */
export function installTimers(): void {
  if (installed++ > 0) return;
  Object.assign(globalThis, {
    setTimeout: virtualSet(false),
    setInterval: virtualSet(true),
    clearTimeout: virtualClear(real.clearTimeout as never),
    clearInterval: virtualClear(real.clearInterval as never),
  });
  (timersPromises as { setTimeout: unknown }).setTimeout = virtualSleep;
  Object.assign(crypto, { randomUUID: fakeUUID, randomBytes: fakeBytes });
  syncBuiltinESMExports();
}

export function uninstallTimers(): void {
  if (--installed > 0) return;
  Object.assign(globalThis, {
    setTimeout: real.setTimeout,
    setInterval: real.setInterval,
    clearTimeout: real.clearTimeout,
    clearInterval: real.clearInterval,
  });
  (timersPromises as { setTimeout: unknown }).setTimeout = real.sleep;
  Object.assign(crypto, { randomUUID: real.randomUUID, randomBytes: real.randomBytes });
  syncBuiltinESMExports();
}

/** The real setImmediate, for the harness's own waiting (never virtual). */
export const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
