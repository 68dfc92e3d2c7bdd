// The store's clock, for ages that decide a deletion: a store's modification times are compared
// only with another time of the same store, never with this machine's clock, which may be far off.

import { posix } from 'node:path';
import { StoreError } from '../errors.js';
import { tempPathFor } from '../store/temp-names.js';
import type { StepEnv } from './env.js';

/**
 * The store's "now", read once from a probe file written in `dir` and removed at once (a temp
 * name: no step takes it for anything), then carried forward by this process's elapsed time. Its
 * modification time is the store's (S3: the server's, in whole seconds, so it reads up to a second
 * early: ages come out short, never long).
 */
export async function storeClock(env: StepEnv, dir: string): Promise<() => number> {
  const { store } = env;
  const probe = tempPathFor(posix.join(dir, 'clock-probe'));
  const elapsed = env.monotonicNow ?? env.now;
  let mtimeMs: number | undefined;
  try {
    await store.writeFile(probe, '');
    mtimeMs = (await store.stat(probe))?.mtimeMs;
  } catch (e) {
    throw cannotTell(env, probe, (e as Error).message);
  } finally {
    await store.delete(probe, false).catch(() => false);
  }
  if (mtimeMs === undefined || !(mtimeMs > 0))
    throw cannotTell(env, probe, 'the store kept no modification time for it');
  const at = elapsed();
  return () => mtimeMs + (elapsed() - at);
}

function cannotTell(env: StepEnv, probe: string, why: string): StoreError {
  return new StoreError(
    'io',
    'writeFile',
    [env.store.toUri(probe)],
    `cannot read the store's clock, which dates a leftover's age for --older-than (a probe file, removed at once: ${why}): nothing was deleted; run again once the root takes a write`,
  );
}
