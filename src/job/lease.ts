// The job lease: one driver of commit-job / abort / recover at a time (protocol.md §5.6, §10).
// Leases are generations `_lease.<n>.yaml` created exclusively, so taking over a dead
// holder's lease is itself arbitrated by create-if-absent.

import { setMaxListeners } from 'node:events';
import { posix } from 'node:path';
import { ConflictError, CorruptManifestError, StoreError } from '../errors.js';
import { decodeManifest, encodeManifest, Fields } from '../manifest/codec.js';
import type { StoreFence } from '../store/fence.js';
import type { Store } from '../store/types.js';
import { LEASE_PREFIX, type JobLayout } from './layout.js';
import { readManifestFile } from './manifest-io.js';

export interface LeaseRecord {
  readonly op: string;
  readonly owner: string;
  readonly host: string;
  readonly pid: number;
  readonly acquiredAtMs: number;
  readonly expiresAtMs: number;
}

/**
 * What Lease.firstLook found: the current lease file, the first lease if it is this step's, and what acquire starts
 * from.
 */
export type FirstLook = {
  readonly listed: CurrentLease | null;
  readonly held: Lease | null;
  readonly from: CurrentLease | null | undefined;
};

/** Who is asking, and how they judge a holder: what the lease needs of a step's environment. */
export interface LeaseClock {
  readonly user: string;
  readonly host: string;
  readonly pid: number;
  readonly now: () => number;
  readonly leaseTtlMs: number;
  readonly isPidAlive: (pid: number) => boolean;
  readonly emit: (e: { type: 'warn'; message: string }) => void;
}

export interface CurrentLease {
  readonly gen: number;
  readonly path: string;
  /** null: the file is still empty (a create whose bytes have not arrived). */
  readonly record: LeaseRecord | null;
  /** When an empty lease file was made: empty past the TTL is dead (protocol.md §5.13). */
  readonly emptySinceMs?: number;
}

const KIND = 'stagecommit/lease';

export function encodeLease(r: LeaseRecord): string {
  return encodeManifest({ kind: KIND, version: 1, ...r, expiresAt: new Date(r.expiresAtMs).toISOString() });
}

function decodeLease(text: string | Buffer, file: string): LeaseRecord {
  const f = new Fields(decodeManifest(text, file), file);
  f.kind(KIND, 1);
  return {
    op: f.string('op'),
    owner: f.string('owner'),
    host: f.string('host'),
    pid: f.count('pid'),
    acquiredAtMs: f.count('acquiredAtMs'),
    expiresAtMs: (f.string('expiresAt'), f.count('expiresAtMs')),
  };
}

function newRecord(env: LeaseClock, op: string): LeaseRecord {
  const now = env.now();
  return { op, owner: env.user, host: env.host, pid: env.pid, acquiredAtMs: now, expiresAtMs: now + env.leaseTtlMs };
}

/** Whether a listed lease is the file `path` with `record` as this process wrote it. */
function isWrittenBy(c: CurrentLease | null, path: string, record: LeaseRecord): boolean {
  const r = c?.record;
  return (
    c?.path === path && !!r && r.pid === record.pid && r.host === record.host && r.acquiredAtMs === record.acquiredAtMs
  );
}

const leaseName = (gen: number): string => `${LEASE_PREFIX}${gen}.yaml`;

/** The newest lease generation in a staging dir, if any. */
export async function readCurrentLease(store: Store, layout: JobLayout): Promise<CurrentLease | null> {
  for (;;) {
    let best: { gen: number; path: string } | null = null;
    for (const e of await store.list(layout.root)) {
      const m = /^_lease\.(\d+)\.yaml$/.exec(e.name);
      if (m && (!best || Number(m[1]) > best.gen)) best = { gen: Number(m[1]), path: e.path };
    }
    if (!best) return null;
    const found = best;
    const file = store.toUri(found.path);
    const lease = await readManifestFile<CurrentLease>(
      store,
      found.path,
      (text) => ({ ...found, record: decodeLease(text, file) }),
      {
        onEmpty: async () => ({ ...found, record: null, emptySinceMs: (await store.stat(found.path))?.mtimeMs ?? 0 }),
      },
    ).catch((e: unknown) => {
      throw holderUnreadable(e, file);
    });
    if (lease) return lease; // null: released meanwhile, look again
  }
}

/** A damaged lease wedges its job until someone looks: say what to do. */
function holderUnreadable(e: unknown, file: string): Error {
  if (!(e instanceof CorruptManifestError)) return e as Error;
  const what = e.field ? `field '${e.field}' ${e.problem}` : e.problem;
  return new CorruptManifestError(
    file,
    '',
    `${what}; if no stagecommit process works on this job, delete the file and run the step again`,
    true,
  );
}

/** A process known to be gone: it ran on this host, and no process has its pid now. */
export function processGone(
  who: { readonly host: string; readonly pid: number },
  env: Pick<LeaseClock, 'host' | 'isPidAlive'>,
): boolean {
  return who.host === env.host && !env.isPidAlive(who.pid);
}

export function isLeaseLive(
  lease: Pick<CurrentLease, 'record' | 'emptySinceMs'>,
  env: Pick<LeaseClock, 'now' | 'host' | 'isPidAlive' | 'leaseTtlMs'>,
): boolean {
  const r = lease.record;
  if (r === null) return env.now() - (lease.emptySinceMs ?? 0) < env.leaseTtlMs;
  if (r.expiresAtMs <= env.now()) return false;
  return !processGone(r, env);
}

export function describeHolder(r: LeaseRecord | null): string {
  if (!r) return 'another process (its lease is being written)';
  return `${r.op} by ${r.owner} on ${r.host} (pid ${r.pid}, lease until ${new Date(r.expiresAtMs).toISOString()})`;
}

export class Lease implements StoreFence {
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private released = false;
  /** Until when the lease is surely ours: the expiry of the last record the store took. */
  private confirmedUntilMs: number;
  private lastFailure: string | undefined;
  /** Set for good once the lease may have lapsed: no renewal landing later brings it back. */
  private lost = false;
  /** Aborted when the lease is lost: the requests in flight are cut off (admit). */
  private readonly cut = new AbortController();
  /** Fires when the lease would be lost if no renewal lands before. */
  private tripTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly store: Store,
    readonly path: string,
    private record: LeaseRecord,
    private readonly env: LeaseClock,
  ) {
    this.confirmedUntilMs = record.expiresAtMs;
    setMaxListeners(0, this.cut.signal); // every request in flight listens to it
  }

  /**
   * StoreFence, asked before every request that changes something: throws once a quarter of the
   * lease's time is all that is surely left (its renewals stopped landing: a store that holds
   * requests without answering), so that the driver stops changing the job before another may take
   * it over (protocol.md §5.6), and for good: a renewal that lands after that point (or a process
   * stopped and continued past it) proves nothing, as another driver may hold the job by then.
   * From then on no request goes, the lease file's own (a renewal landing after a successor took
   * the job would write over its lease) and temp files' included. The signal it returns cuts off,
   * at that point, the requests still unanswered; what a server took in before cannot be called
   * back: the quarter gives it time to land.
   */
  admit(_path: string): AbortSignal | undefined {
    if (this.released) return undefined;
    if (this.mayLapse()) throw this.lapse();
    return this.cut.signal;
  }

  private lapse(): StoreError {
    const left = this.confirmedUntilMs - this.env.now();
    const seconds = (ms: number) => (ms >= 10_000 ? String(Math.round(ms / 1000)) : (ms / 1000).toFixed(1));
    // A process stopped (SIGSTOP, a paused VM) wakes up past the point: it says so, not "0 s before".
    const when =
      left > 0
        ? `${seconds(left)} s before its lease runs out, when another process may take the job over`
        : `now: its lease ran out ${seconds(-left)} s ago, and another process may have taken the job over`;
    return new StoreError(
      'io',
      'renew lease',
      [this.store.toUri(this.path)],
      `${this.lastFailure ?? 'no renewal of it has landed in time (the store has not answered, or this process was stopped)'}: this step stops changing the job ${when}`,
    );
  }

  /**
   * The job's lease files listed, and on an object store (`tryCreate`) its first lease created
   * (generation 0) at the same time: one round trip, not two. That lease is `held` only if the
   * listing shows no lease but it: the judgement acquire makes from a listing read just before.
   * Otherwise it is released, and acquire starts `from` the listing (undefined: it may predate
   * what happened since, so acquire lists afresh).
   */
  static async firstLook(
    store: Store,
    layout: JobLayout,
    env: LeaseClock,
    op: string,
    tryCreate: boolean,
  ): Promise<FirstLook> {
    const record = newRecord(env, op);
    const path = posix.join(layout.root, leaseName(0));
    const [listing, made] = await Promise.allSettled([
      readCurrentLease(store, layout),
      tryCreate && store.createExclusive(path, encodeLease(record)),
    ]);
    const mine = made.status === 'fulfilled' && made.value ? new Lease(store, path, record, env) : null;
    if (listing.status === 'rejected') {
      await mine?.release();
      throw listing.reason;
    }
    const listed = listing.value;
    if (mine && (listed === null || isWrittenBy(listed, path, record)))
      return { listed, held: mine.start(), from: undefined };
    await mine?.release();
    const stale = tryCreate && (mine !== null || made.status === 'rejected' || listed === null);
    return { listed, held: null, from: stale ? undefined : listed };
  }

  private start(): this {
    this.startRenewal();
    this.armTrip();
    return this;
  }

  /** `current`: the lease file as read just before (runStep reads it alongside the job: one round trip). */
  static async acquire(
    store: Store,
    layout: JobLayout,
    env: LeaseClock,
    op: string,
    current?: CurrentLease | null,
  ): Promise<Lease> {
    const record = newRecord(env, op);
    if (current === undefined) current = await readCurrentLease(store, layout);
    let gen = 0;
    if (current) {
      const mine = current.record?.host === env.host && current.record.pid === env.pid;
      if (!mine && isLeaseLive(current, env)) {
        throw new ConflictError(
          `job ${store.toUri(layout.root)} is locked: ${describeHolder(current.record)}; wait for it to finish`,
        );
      }
      gen = current.gen + 1;
    }
    const path = posix.join(layout.root, leaseName(gen));
    if (!(await store.createExclusive(path, encodeLease(record)))) {
      const winner = await readCurrentLease(store, layout);
      // A create retried after a lost response finds its own first attempt: that is a win.
      if (!isWrittenBy(winner, path, record))
        throw new ConflictError(
          `job ${store.toUri(layout.root)} is locked: ${describeHolder(winner?.record ?? null)}; wait for it to finish`,
        );
    }
    if (current) await store.delete(current.path, false);
    return new Lease(store, path, record, env).start();
  }

  private startRenewal(): void {
    // A third of the TTL: a renewal lands well before the quarter that check() keeps back.
    const every = Math.max(100, Math.floor(this.env.leaseTtlMs / 3));
    this.timer = setInterval(() => {
      if (this.renewing) return;
      // A lease that may have lapsed is never written again: that could bring back a taken-over file.
      if (this.mayLapse()) return void clearInterval(this.timer);
      const next = { ...this.record, expiresAtMs: this.env.now() + this.env.leaseTtlMs };
      this.record = next;
      this.renewing = this.store
        .writeFile(this.path, encodeLease(next))
        .then(
          () => {
            if (this.mayLapse()) return;
            this.confirmedUntilMs = next.expiresAtMs;
            this.armTrip();
          },
          (e: unknown) => {
            if (this.lost) return; // cut off at the trip: the step's own error says so
            this.lastFailure = `could not renew the job lease: ${(e as Error).message}`;
            this.env.emit({ type: 'warn', message: this.lastFailure });
          },
        )
        .finally(() => (this.renewing = undefined));
    }, every);
    this.timer.unref();
  }

  private mayLapse(): boolean {
    if (this.lost || this.confirmedUntilMs - this.env.now() > this.env.leaseTtlMs / 4) return this.lost;
    this.lost = true;
    clearTimeout(this.tripTimer);
    this.cut.abort(this.lapse());
    return true;
  }

  /** The lease is lost when only a quarter of its confirmed time is left: then, not at the next look. */
  private armTrip(): void {
    clearTimeout(this.tripTimer);
    const wait = this.confirmedUntilMs - this.env.leaseTtlMs / 4 - this.env.now();
    this.tripTimer = setTimeout(() => void (this.mayLapse() || this.armTrip()), Math.max(0, wait) + 1);
    this.tripTimer.unref();
  }

  /** The staging dir went with the lease file in it: release has nothing left to delete. */
  gone(): void {
    this.released = true;
    clearTimeout(this.tripTimer);
  }

  /** Stops renewing (and waits for a renewal in flight): before the staging dir goes away. */
  async stopRenewal(): Promise<void> {
    clearInterval(this.timer);
    clearTimeout(this.tripTimer);
    this.timer = undefined;
    await this.renewing;
  }

  /**
   * Stops renewing and removes the lease file. It may be gone already (the step removed the
   * staging dir) or unreachable (a failing store): an expired lease is taken over anyway.
   */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    if (this.mayLapse()) {
      // Its renewal hangs with the store (cut off, not waited for). The file stays and expires: a
      // successor then takes the next generation, never this one, which a renewal landing late
      // could write over.
      clearInterval(this.timer);
      clearTimeout(this.tripTimer);
      return;
    }
    await this.stopRenewal();
    await this.store.delete(this.path, false).catch(() => false);
  }
}
