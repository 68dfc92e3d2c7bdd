// What every protocol step is given: the store, who is running, a clock, limits and an event sink.

import { createHash } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import os from 'node:os';
import type { LogRetention } from '../job/table-log.js';
import type { OpCounts } from '../store/instrumented.js';
import type { FencedStore } from '../store/fence.js';
import type { Store } from '../store/types.js';

export type StepEvent =
  | { readonly type: 'phase'; readonly label: string }
  /**
   * `done` of `total` items; where data moves, `bytes` moved so far and `bytesTotal` when known
   * (a stream's size is not).
   */
  | {
      readonly type: 'progress';
      readonly label: string;
      readonly done: number;
      readonly total: number;
      readonly bytes?: number;
      readonly bytesTotal?: number;
    }
  | { readonly type: 'warn'; readonly message: string }
  /** commit-job has read its claims and is about to read their files: how many there are. */
  | { readonly type: 'output'; readonly files: number };

export interface StepEnv {
  readonly store: Store;
  readonly user: string;
  readonly host: string;
  readonly pid: number;
  /** Wall-clock time: written into files for people, never compared with another host's. */
  readonly now: () => number;
  /** This process's elapsed time (monotonic), which alone judges leases and waits; `now` when not given. */
  readonly monotonicNow?: () => number;
  /** Bounded parallelism for store operations. */
  readonly concurrency: number;
  /** How long a lease lives without renewal. */
  readonly leaseTtlMs: number;
  readonly isPidAlive: (pid: number) => boolean;
  readonly emit: (e: StepEvent) => void;
  /** Store operations counted so far in this process (protocol.md §9.3). */
  readonly metrics: () => OpCounts;
  /** Accept a hand-written `_job.yaml` without its check line (--allow-unsigned-job). */
  readonly allowUnsignedJob?: boolean;
  /** How long commit-job waits for an unfinished commit of the same partitions by a live job. */
  readonly commitWaitMs?: number;
  /** How many table-log entries pruning keeps (protocol.md §3.4); the defaults unless given. */
  readonly logRetention?: LogRetention;
}

/**
 * The environment of a step that holds the job lease: its store is fenced by the lease (runner.ts).
 * What must not change a job without the lease takes this, and cannot be handed a bare store.
 */
export type FencedEnv = StepEnv & { readonly store: FencedStore };

let thisHost: string | undefined;

/**
 * This process's host as leases, claims and probes record it: the host name, tagged where Linux
 * tells with its boot and its pid namespace. A pid names a process only within one namespace of one
 * boot, so a container that shares the host's name (host network) or a second machine of the same
 * name is another host, whose processes are never judged dead by their pid (protocol.md §10).
 */
export function localHost(): string {
  if (thisHost !== undefined) return thisHost;
  let tag = '';
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim();
    const pidNamespace = readlinkSync('/proc/self/ns/pid');
    tag = '#' + createHash('sha256').update(`${boot} ${pidNamespace}`).digest('hex').slice(0, 8);
  } catch {
    // No /proc (not Linux): the host name alone, as the platform's pids are host-wide.
  }
  return (thisHost = os.hostname() + tag);
}

export function isPidAliveLocal(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return !isZombie(pid);
}

/**
 * A process killed and not yet reaped by its parent (state Z in /proc/<pid>/stat, the field after
 * the command's closing parenthesis) has ended: nothing of it runs (a container whose init
 * reaps late would keep a killed step's lease "held" for its whole term). Where /proc is not,
 * not known: not a zombie.
 */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return /^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

/** Another process on this host that is still running (not this one): its work must not be done beside it. */
export function otherLiveProcessHere(
  who: { readonly host: string; readonly pid: number },
  env: Pick<StepEnv, 'host' | 'pid' | 'isPidAlive'>,
): boolean {
  return who.host === env.host && who.pid !== env.pid && env.isPidAlive(who.pid);
}
