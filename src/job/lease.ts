// The job lease: one driver of commit-job / abort / recover at a time (DESIGN §5.6).
// Leases are generations `_lease.<n>.yaml` created exclusively, so taking over a dead
// holder's lease is itself arbitrated by create-if-absent.

import { posix } from 'node:path';
import { ConflictError } from '../errors.js';
import { decodeManifest, encodeManifest, Fields } from '../manifest/codec.js';
import type { StepEnv } from '../steps/env.js';
import type { Store } from '../store/types.js';
import { LEASE_PREFIX, type JobLayout } from './layout.js';

export interface LeaseRecord {
  readonly op: string;
  readonly owner: string;
  readonly host: string;
  readonly pid: number;
  readonly acquiredAtMs: number;
  readonly expiresAtMs: number;
}

const KIND = 'stagecommit/lease';

function encodeLease(r: LeaseRecord): string {
  return encodeManifest({ kind: KIND, version: 1, ...r, expiresAt: new Date(r.expiresAtMs).toISOString() });
}

function decodeLease(text: string, file: string): LeaseRecord {
  const f = new Fields(decodeManifest(text, file), file);
  f.kind(KIND, 1);
  return {
    op: f.string('op'),
    owner: f.string('owner'),
    host: f.string('host'),
    pid: f.number('pid'),
    acquiredAtMs: f.number('acquiredAtMs'),
    expiresAtMs: f.number('expiresAtMs'),
  };
}

function leaseName(gen: number): string {
  return `${LEASE_PREFIX}${gen}.yaml`;
}

/** The newest lease generation in a staging dir, if any. */
export async function readCurrentLease(store: Store, layout: JobLayout): Promise<{ gen: number; path: string; record: LeaseRecord | null } | null> {
  let best: { gen: number; path: string } | null = null;
  for (const e of await store.list(layout.root)) {
    const m = /^_lease\.(\d+)\.yaml$/.exec(e.name);
    if (m && (!best || Number(m[1]) > best.gen)) best = { gen: Number(m[1]), path: e.path };
  }
  if (!best) return null;
  const data = await store.readFile(best.path);
  if (data === null) return readCurrentLease(store, layout);
  // An empty lease is one being written (WebHDFS create): it counts as held.
  const record = data.length === 0 ? null : decodeLease(data.toString('utf8'), store.toUri(best.path));
  return { ...best, record };
}

export function isLeaseLive(r: LeaseRecord | null, env: Pick<StepEnv, 'now' | 'host' | 'isPidAlive'>): boolean {
  if (r === null) return true;
  if (r.expiresAtMs <= env.now()) return false;
  if (r.host === env.host && !env.isPidAlive(r.pid)) return false;
  return true;
}

export function describeHolder(r: LeaseRecord | null): string {
  if (!r) return 'another process (its lease is being written)';
  return `${r.op} by ${r.owner} on ${r.host} (pid ${r.pid}, lease until ${new Date(r.expiresAtMs).toISOString()})`;
}

export class Lease {
  private timer: NodeJS.Timeout | undefined;
  private released = false;

  private constructor(
    private readonly store: Store,
    private readonly layout: JobLayout,
    readonly path: string,
    private record: LeaseRecord,
    private readonly env: StepEnv,
  ) {}

  static async acquire(store: Store, layout: JobLayout, env: StepEnv, op: string): Promise<Lease> {
    const record: LeaseRecord = {
      op,
      owner: env.user,
      host: env.host,
      pid: env.pid,
      acquiredAtMs: env.now(),
      expiresAtMs: env.now() + env.leaseTtlMs,
    };
    const current = await readCurrentLease(store, layout);
    let gen = 0;
    if (current) {
      const mine = current.record?.host === env.host && current.record.pid === env.pid;
      if (!mine && isLeaseLive(current.record, env)) {
        throw new ConflictError(`job ${layout.root} is locked: ${describeHolder(current.record)}; wait for it to finish`);
      }
      gen = current.gen + 1;
    }
    const path = posix.join(layout.root, leaseName(gen));
    if (!(await store.createExclusive(path, encodeLease(record)))) {
      const winner = await readCurrentLease(store, layout);
      // A create retried after a lost response finds its own first attempt: that is a win.
      const ours = winner?.path === path && winner.record?.pid === record.pid && winner.record.host === record.host && winner.record.acquiredAtMs === record.acquiredAtMs;
      if (!ours) throw new ConflictError(`job ${layout.root} is locked: ${describeHolder(winner?.record ?? null)}; wait for it to finish`);
    }
    if (current) await store.delete(current.path, false);
    const lease = new Lease(store, layout, path, record, env);
    lease.startRenewal();
    return lease;
  }

  private startRenewal(): void {
    const every = Math.max(1000, Math.floor(this.env.leaseTtlMs / 3));
    this.timer = setInterval(() => {
      this.record = { ...this.record, expiresAtMs: this.env.now() + this.env.leaseTtlMs };
      this.store.writeFile(this.path, encodeLease(this.record)).catch((e) =>
        this.env.emit({ type: 'warn', message: `could not renew the job lease: ${(e as Error).message}` }),
      );
    }, every);
    this.timer.unref();
  }

  /**
   * Stops renewing and removes the lease file. It may be gone already (the step removed the
   * staging dir) or unreachable (a failing store): an expired lease is taken over anyway.
   */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    clearInterval(this.timer);
    await this.store.delete(this.path, false).catch(() => false);
  }
}
