// A lease file where no job is: left by a step killed between trying the first lease and finding
// no job, or by a renewal landing after its job's staging dir went. Nothing else would ever remove
// it, so the next step that meets it there removes it once its holder is gone.

import { isLeaseLive, type CurrentLease } from '../job/lease.js';
import type { StepEnv } from './env.js';

/** Removes `lease` unless its holder may be alive; whether it went. */
export async function removeStrayLease(env: StepEnv, lease: CurrentLease | null): Promise<boolean> {
  if (!lease || isLeaseLive(lease, env)) return false;
  if (!(await env.store.delete(lease.path, false).catch(() => false))) return false;
  env.emit({ type: 'warn', message: `removed ${env.store.toUri(lease.path)}, a lease file that a step ended before it left behind (no job is there)` });
  return true;
}
