// The job lease: one driver of commit-job / abort / recover at a time (protocol.md §5.6, §10).
// Leases are generations `_lease.<n>.yaml` created exclusively, so taking over a dead
// holder's lease is itself arbitrated by create-if-absent.
//
// The clock rule: no decision compares two hosts' clocks. A holder renews its file (a new
// `renewal` count) every third of its TTL and stops changing the job once a quarter of the TTL,
// on its own clock since its last renewal was sent, is all that is surely left. An observer
// judges the lease expired only by its own elapsed time: it notes the file's bytes when it first
// sees them and takes the lease over once they have not changed for the holder's TTL (LeaseWatch),
// as HDFS's NameNode and ZooKeeper's leader time leases on their own clocks. The times in the
// file are for people to read. Only a holder on this host whose pid is gone is known dead at once.
// A holder reads its file before each renewal: a successor's generation means it lost the job,
// and it stops (the renewal is not sent: it would write a file the successor replaced).

import { setMaxListeners } from 'node:events';
import { posix } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConflictError, CorruptManifestError, StoreError } from '../errors.js';
import { decodeManifest, encodeManifest, Fields } from '../manifest/codec.js';
import { withFence, type StoreFence } from '../store/fence.js';
import type { Store } from '../store/types.js';
import { LEASE_PREFIX, type JobLayout } from './layout.js';
import { readManifestFile } from './manifest-io.js';

export interface LeaseRecord {
  readonly op: string;
  readonly owner: string;
  readonly host: string;
  readonly pid: number;
  readonly acquiredAtMs: number;
  /** The holder's own clock: for people to read, never compared with another clock. */
  readonly expiresAtMs: number;
  /** How long the holder lets go without a renewal (absent: written before leases said). */
  readonly ttlMs?: number;
  /** Renewals written so far: each one changes the file, whatever the holder's clock says. */
  readonly renewal?: number;
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
  /** This process's elapsed time (monotonic), which judges leases; `now` when not given. */
  readonly monotonicNow?: () => number;
  readonly leaseTtlMs: number;
  readonly isPidAlive: (pid: number) => boolean;
  readonly emit: (e: { type: 'warn'; message: string }) => void;
}

export interface CurrentLease {
  readonly gen: number;
  readonly path: string;
  /** null: the file is still empty (a create whose bytes have not arrived). */
  readonly record: LeaseRecord | null;
  /** The file as read (its generation and bytes): a renewal, or a new holder, changes it. */
  readonly stamp: string;
}

const KIND = 'stagecommit/lease';

export function encodeLease(r: LeaseRecord): string {
  return encodeManifest({ kind: KIND, version: 1, ...r, expiresAt: new Date(r.expiresAtMs).toISOString() });
}

function decodeLease(text: string | Buffer, file: string): LeaseRecord {
  const f = new Fields(decodeManifest(text, file), file);
  f.kind(KIND, 1);
  // Leases written before the clock rule lack the last two: the observer's own TTL stands in.
  const since = (field: string) => (Object.hasOwn(f.doc, field) ? { [field]: f.count(field) } : {});
  return {
    op: f.string('op'),
    owner: f.string('owner'),
    host: f.string('host'),
    pid: f.count('pid'),
    acquiredAtMs: f.time('acquiredAtMs'),
    expiresAtMs: (f.string('expiresAt'), f.time('expiresAtMs')),
    ...since('ttlMs'),
    ...since('renewal'),
  };
}

function newRecord(env: LeaseClock, op: string): LeaseRecord {
  const now = env.now();
  const ttlMs = env.leaseTtlMs;
  return {
    op,
    owner: env.user,
    host: env.host,
    pid: env.pid,
    acquiredAtMs: now,
    expiresAtMs: now + ttlMs,
    ttlMs,
    renewal: 0,
  };
}

/** This process's elapsed time, which alone judges a lease. */
const elapsed = (env: Pick<LeaseClock, 'now' | 'monotonicNow'>): number => (env.monotonicNow ?? env.now)();

/** When a request was sent, on both of this process's clocks (Lease.surelyLeftMs). */
interface Sent {
  readonly elapsed: number;
  readonly wall: number;
}

const sentNow = (env: Pick<LeaseClock, 'now' | 'monotonicNow'>): Sent => ({ elapsed: elapsed(env), wall: env.now() });

/** Whether a listed lease is the file `path` with `record` as this process wrote it. */
function isWrittenBy(c: CurrentLease | null, path: string, record: LeaseRecord): boolean {
  const r = c?.record;
  return (
    c?.path === path && !!r && r.pid === record.pid && r.host === record.host && r.acquiredAtMs === record.acquiredAtMs
  );
}

const leaseName = (gen: number): string => `${LEASE_PREFIX}${gen}.yaml`;

/** The newest lease generation in a staging dir, if any. */
export async function readCurrentLease(store: Store, layout: Pick<JobLayout, 'root'>): Promise<CurrentLease | null> {
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
      (text) => ({ ...found, record: decodeLease(text, file), stamp: `${found.path}\n${text.toString('utf8')}` }),
      { onEmpty: async () => ({ ...found, record: null, stamp: `${found.path}\n` }) },
    ).catch((e: unknown) => {
      throw holderUnreadable(e, file);
    });
    if (lease) return lease; // null: released meanwhile, look again
  }
}

/** A damaged lease wedges its job until someone looks: say what to do. */
function holderUnreadable(e: unknown, file: string): Error {
  if (!(e instanceof CorruptManifestError)) return e as Error;
  const { file: _, ...damage } = e.detail;
  return new CorruptManifestError(file, { reason: 'lease-unreadable', damage }, { cause: e });
}

/** A process known to be gone: it ran on this host, and no process has its pid now. */
export function processGone(
  who: { readonly host: string; readonly pid: number },
  env: Pick<LeaseClock, 'host' | 'isPidAlive'>,
): boolean {
  return who.host === env.host && !env.isPidAlive(who.pid);
}

/**
 * What one look at a lease tells: its holder is known dead only when it ran on this host and its
 * pid is gone. Anything else may be live: only watching it unchanged for its TTL tells (LeaseWatch).
 */
export function holderKnownDead(
  lease: Pick<CurrentLease, 'record'>,
  env: Pick<LeaseClock, 'host' | 'isPidAlive'>,
): boolean {
  return lease.record !== null && processGone(lease.record, env);
}

/** How long a lease may go unchanged while its holder lives: the holder's own TTL, as it wrote it. */
export function leaseTtl(lease: Pick<CurrentLease, 'record'>, env: Pick<LeaseClock, 'leaseTtlMs'>): number {
  return lease.record?.ttlMs ?? env.leaseTtlMs;
}

/**
 * An observer's view of one job's lease over time, on its own elapsed time only: when it first
 * saw the lease as it is now. A lease seen unchanged for its TTL is expired: its holder has sent
 * no renewal that landed for that long, and stopped changing the job a quarter of it before.
 */
export class LeaseWatch {
  private seen: { stamp: string; atMs: number } | null = null;
  constructor(private readonly env: Pick<LeaseClock, 'now' | 'monotonicNow' | 'host' | 'isPidAlive' | 'leaseTtlMs'>) {}

  /** Notes `lease` as just read; whether its holder is dead: known dead, or unchanged for its TTL. */
  expired(lease: CurrentLease): boolean {
    if (holderKnownDead(lease, this.env)) return true;
    const now = elapsed(this.env);
    if (this.seen?.stamp !== lease.stamp) {
      this.seen = { stamp: lease.stamp, atMs: now };
      return false;
    }
    return now - this.seen.atMs >= leaseTtl(lease, this.env);
  }

  /** How long, of this process's time, the lease has been seen unchanged. */
  unchangedForMs(): number {
    return this.seen ? elapsed(this.env) - this.seen.atMs : 0;
  }
}

/** What watching a lease until it expires or changes found. */
export type Watched =
  | { readonly outcome: 'expired'; readonly lease: CurrentLease }
  | { readonly outcome: 'changed'; readonly lease: CurrentLease }
  | { readonly outcome: 'gone' };

/**
 * Watches the lease `first` until it changes (renewed, or taken by another: its holder lives), goes
 * (released), or stays unchanged for its TTL of this process's own time (expired). A holder that
 * renews is seen renewing within a third of its TTL.
 */
export async function watchLease(
  store: Store,
  layout: Pick<JobLayout, 'root'>,
  env: LeaseClock,
  first: CurrentLease,
): Promise<Watched> {
  const watch = new LeaseWatch(env);
  watch.expired(first);
  const ttl = leaseTtl(first, env);
  env.emit({
    type: 'warn',
    message: `waiting for the lease of ${describeHolder(first.record)}: it is taken over if it is not renewed within ${Math.round(ttl / 1000)} s`,
  });
  for (;;) {
    await sleep(Math.max(20, Math.min(2000, Math.floor(ttl / 12))));
    const now = await readCurrentLease(store, layout);
    if (now === null) return { outcome: 'gone' };
    if (now.stamp !== first.stamp && !holderKnownDead(now, env)) return { outcome: 'changed', lease: now };
    if (watch.expired(now)) return { outcome: 'expired', lease: now };
  }
}

export function describeHolder(r: LeaseRecord | null): string {
  if (!r) return 'another process (its lease is being written)';
  return `${r.op} by ${r.owner} on ${r.host} (pid ${r.pid}, lease until ${new Date(r.expiresAtMs).toISOString()})`;
}

export class Lease implements StoreFence {
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private released = false;
  /**
   * When the last renewal the store took was sent: the lease is surely ours for its TTL from then
   * (an observer saw it no earlier, and waits a TTL from then).
   */
  private confirmed: Sent;
  private lastFailure: string | undefined;
  /** Who took the job over, as a renewal found (its lease file is a successor's generation, or gone). */
  private takenBy: string | undefined;
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
    sent: Sent,
  ) {
    this.confirmed = sent;
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
    if (this.takenBy !== undefined)
      return new StoreError(
        'io',
        'renew lease',
        [this.store.toUri(this.path)],
        `${this.takenBy}: this process lost the job's lease (no renewal of it landed for its TTL: the process was stopped, or the store held its requests) and stops changing the job now`,
      );
    const left = this.surelyLeftMs();
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
    const sentAt = sentNow(env);
    const path = posix.join(layout.root, leaseName(0));
    const [listing, made] = await Promise.allSettled([
      readCurrentLease(store, layout),
      tryCreate && store.createExclusive(path, encodeLease(record)),
    ]);
    const mine = made.status === 'fulfilled' && made.value ? new Lease(store, path, record, env, sentAt) : null;
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
    if (current === undefined) current = await readCurrentLease(store, layout);
    const mine = current?.record?.host === env.host && current.record.pid === env.pid;
    if (current && !mine && !holderKnownDead(current, env)) {
      // Only this process's own time tells a holder that stopped renewing from one that lives.
      const seen = await watchLease(store, layout, env, current);
      if (seen.outcome === 'changed')
        throw new ConflictError({
          reason: 'lease-held',
          job: store.toUri(layout.root),
          holder: describeHolder(seen.lease.record),
          takeoverSeconds: null,
        });
      current = seen.outcome === 'gone' ? null : seen.lease;
    }
    const gen = current ? current.gen + 1 : 0;
    const record = newRecord(env, op);
    const sentAt = sentNow(env);
    const path = posix.join(layout.root, leaseName(gen));
    if (!(await store.createExclusive(path, encodeLease(record)))) {
      const winner = await readCurrentLease(store, layout);
      // A create retried after a lost response finds its own first attempt: that is a win.
      if (!isWrittenBy(winner, path, record))
        throw new ConflictError({
          reason: 'lease-held',
          job: store.toUri(layout.root),
          holder: describeHolder(winner?.record ?? null),
          takeoverSeconds: null,
        });
    }
    if (current) await store.delete(current.path, false);
    return new Lease(store, path, record, env, sentAt).start();
  }

  private startRenewal(): void {
    // A third of the TTL: a renewal lands well before the quarter that check() keeps back.
    const every = Math.max(100, Math.floor(this.env.leaseTtlMs / 3));
    this.timer = setInterval(() => {
      if (this.renewing) return;
      // A lease that may have lapsed is never written again: that could bring back a taken-over file.
      if (this.mayLapse()) return void clearInterval(this.timer);
      this.renewing = this.renew()
        .then(
          () => undefined,
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

  /**
   * One renewal: the lease file read first, since a successor may have taken the job over while
   * this process was stopped (its lease unchanged for its TTL): then the job is lost, and nothing
   * more is written, the renewal included (it would bring back a file the successor replaced).
   */
  private async renew(): Promise<void> {
    const found = await readCurrentLease(this.store, { root: posix.dirname(this.path) });
    // Released, or its staging dir going (stopRenewal): what the read found is the step's own doing.
    if (this.lost || this.released || this.timer === undefined) return;
    if (!isWrittenBy(found, this.path, this.record)) {
      this.takenBy = found
        ? `${describeHolder(found.record)} took the job over`
        : `its lease file ${this.store.toUri(this.path)} is gone (another process took the job over)`;
      this.loseNow();
      return;
    }
    if (this.mayLapse()) return;
    const next = {
      ...this.record,
      expiresAtMs: this.env.now() + this.env.leaseTtlMs,
      renewal: (this.record.renewal ?? 0) + 1,
    };
    const sentAt = sentNow(this.env);
    this.record = next;
    // Fenced by itself: a renewal sent once the lease may lapse is cut off (admit).
    await withFence(this, () => this.store.writeFile(this.path, encodeLease(next)));
    if (this.mayLapse()) return;
    this.confirmed = sentAt;
    this.armTrip();
  }

  private loseNow(): void {
    this.lost = true;
    clearInterval(this.timer);
    clearTimeout(this.tripTimer);
    this.cut.abort(this.lapse());
  }

  /**
   * How long the lease is surely still ours: its TTL less the time since the last renewal that
   * landed was sent, by whichever of this process's clocks counted more. The monotonic clock does
   * not count a host's suspend, the wall clock does (and may step either way): by the larger, a
   * holder whose wall clock jumps ahead stops early, and one whose host slept stops at once.
   */
  private surelyLeftMs(): number {
    const passed = Math.max(elapsed(this.env) - this.confirmed.elapsed, this.env.now() - this.confirmed.wall);
    return this.env.leaseTtlMs - passed;
  }

  private mayLapse(): boolean {
    if (this.lost || this.surelyLeftMs() > this.env.leaseTtlMs / 4) return this.lost;
    this.lost = true;
    clearTimeout(this.tripTimer);
    this.cut.abort(this.lapse());
    return true;
  }

  /** The lease is lost when only a quarter of its confirmed time is left: then, not at the next look. */
  private armTrip(): void {
    clearTimeout(this.tripTimer);
    const wait = this.surelyLeftMs() - this.env.leaseTtlMs / 4;
    this.tripTimer = setTimeout(() => void (this.mayLapse() || this.armTrip()), Math.max(0, wait) + 1);
    this.tripTimer.unref();
  }

  /** Whether this process lost the lease (it stopped changing the job); who took it over, when a renewal saw. */
  lossOf(): { readonly takenBy: string | null } | null {
    return this.lost ? { takenBy: this.takenBy ?? null } : null;
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
