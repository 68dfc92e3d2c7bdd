// What every protocol step is given: the store, who is running, a clock, limits and an event sink.

import type { OpCounts } from '../store/instrumented.js';
import type { Store } from '../store/types.js';
import { processStartMs } from '../util/process-start.js';

export type StepEvent =
  | { readonly type: 'phase'; readonly label: string }
  | { readonly type: 'progress'; readonly label: string; readonly done: number; readonly total: number }
  | { readonly type: 'warn'; readonly message: string }
  /** commit-job has read its claims and is about to read their files: how many there are. */
  | { readonly type: 'output'; readonly files: number };

export interface StepEnv {
  readonly store: Store;
  readonly user: string;
  readonly host: string;
  readonly pid: number;
  readonly now: () => number;
  /** Bounded parallelism for store operations. */
  readonly concurrency: number;
  /** How long a lease lives without renewal. */
  readonly leaseTtlMs: number;
  /** Whether process `pid` of this host runs; with `sinceMs`, one that started by then (not a later process given the pid again). */
  readonly isPidAlive: (pid: number, sinceMs?: number) => boolean;
  readonly emit: (e: StepEvent) => void;
  /** Store operations counted so far in this process (DESIGN §9). */
  readonly metrics: () => OpCounts;
  /** Accept a hand-written `_job.yaml` without its check line (--allow-unsigned-job). */
  readonly allowUnsignedJob?: boolean;
  /** How long commit-job waits for an unfinished commit of the same partitions by a live job. */
  readonly commitWaitMs?: number;
}

/**
 * A process's start time is known to the second (btime), and a wall clock stepped forward moves
 * it later: a process counts as started after a record only a minute past it (a pid is given
 * again long after, on all but the busiest hosts).
 */
const START_MARGIN_MS = 60_000;

export function isPidAliveLocal(pid: number, sinceMs?: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (sinceMs === undefined) return true;
  // A process that started after the record was written is not the one that wrote it.
  const started = processStartMs(pid);
  return started === null || started <= sinceMs + START_MARGIN_MS;
}
