// The store's clock, for ages that decide a deletion: a store's modification times are compared
// only with another time of the same store, never with this machine's clock, which may be far off.

import { posix } from 'node:path';
import { StoreError } from '../errors.js';
import { tempPathFor } from '../store/temp-names.js';
import type { StepEnv } from './env.js';

/**
 * The store's "now", read once from a probe file written in a temp dir of `dir` and removed at
 * once (a temp name: no step takes it for anything), then carried forward by this process's
 * elapsed time. Its modification time is the store's, as a listing gives it: the precision of the
 * times it is compared with (an S3 HEAD gives whole seconds, a listing milliseconds).
 */
export async function storeClock(env: StepEnv, dir: string): Promise<() => number> {
  const { store } = env;
  const probeDir = tempPathFor(posix.join(dir, 'clock-probe'));
  const elapsed = env.monotonicNow ?? env.now;
  let mtimeMs: number | undefined;
  try {
    await store.writeFile(posix.join(probeDir, 'probe'), '');
    mtimeMs = (await store.list(probeDir, { details: true })).find((e) => e.name === 'probe')?.mtimeMs;
  } catch (e) {
    throw cannotTell(env, probeDir, (e as Error).message);
  } finally {
    await store.delete(probeDir, true).catch(() => false);
  }
  if (mtimeMs === undefined || !(mtimeMs > 0))
    throw cannotTell(env, probeDir, 'the store kept no modification time for it');
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
