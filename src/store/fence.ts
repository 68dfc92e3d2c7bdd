// What may stop a store's changes: the job lease (protocol.md §5.6). A step's calls carry their fence
// with them (AsyncLocalStorage), so two steps that share one store object in a process — two
// jobs committed at once through the library — each answer to their own lease.

import { AsyncLocalStorage } from 'node:async_hooks';

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
