// The store's clock, for ages that decide a deletion: a store's modification times are compared
// only with another time of the same store, never with this machine's clock, which may be far off.

import { posix } from 'node:path';
import { StoreError } from '../errors.js';
import { processGone } from '../job/lease.js';
import { isTempName, tempPathFor } from '../store/temp-names.js';
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
    // The probe names its writer: the next reading on this host removes it once that process is gone.
    await store.writeFile(posix.join(probeDir, 'probe'), JSON.stringify({ host: env.host, pid: env.pid }));
    mtimeMs = (await store.list(probeDir, { details: true })).find((e) => e.name === 'probe')?.mtimeMs;
  } catch (e) {
    throw cannotTell(env, probeDir, (e as Error).message);
  } finally {
    await store.delete(probeDir, true).catch(() => false);
  }
  if (mtimeMs === undefined || !(mtimeMs > 0))
    throw cannotTell(env, probeDir, 'the store kept no modification time for it');
  const at = elapsed();
  await removeStaleProbes(env, dir, mtimeMs);
  return () => mtimeMs + (elapsed() - at);
}

/** A probe older than this, by the store's clock, was left by a run killed while it read the clock. */
const STALE_PROBE_MS = 3_600_000;

/**
 * The probe dirs a killed run left in `dir` go with the next reading of the clock there
 * (protocol.md §5.12: the next step removes a killed step's temps): at once when their writer ran
 * on this host and is gone, else once an hour old (a running one's is seconds old).
 */
async function removeStaleProbes(env: StepEnv, dir: string, nowMs: number): Promise<void> {
  const { store } = env;
  const probes = (await store.list(dir)).filter((e) => isTempName(e.name) && e.name.endsWith('-clock-probe'));
  for (const p of probes) {
    const inside = await store.list(p.path, { details: true });
    const newest = inside.reduce((a, e) => Math.max(a, e.mtimeMs), 0);
    if (nowMs - newest > STALE_PROBE_MS || (await writerGone(env, posix.join(p.path, 'probe'))))
      await store.delete(p.path, true).catch(() => false);
  }
}

/** Whether the probe at `file` names a process of this host that is gone (a probe without a writer: no). */
async function writerGone(env: StepEnv, file: string): Promise<boolean> {
  const data = await env.store.readFile(file).catch(() => null);
  try {
    const who = data ? (JSON.parse(data.toString()) as { host?: unknown; pid?: unknown }) : null;
    return (
      typeof who?.host === 'string' && typeof who.pid === 'number' && processGone({ host: who.host, pid: who.pid }, env)
    );
  } catch {
    return false;
  }
}

function cannotTell(env: StepEnv, probe: string, why: string): StoreError {
  return new StoreError(
    'io',
    'writeFile',
    [env.store.toUri(probe)],
    `cannot read the store's clock, which dates a leftover's age for --older-than (a probe file, removed at once: ${why}): nothing was deleted; run again once the root takes a write`,
  );
}
