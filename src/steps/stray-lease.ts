// What a handle whose job is gone may still hold: a lease file left by a step killed between
// trying the first lease and finding no job, or by a renewal landing after its job's staging dir
// went; and, in the default layout, the empty parents of a clean-up killed before it tidied them.
// Nothing else would ever remove them, so the next step that meets them there does.

import { isLeaseLive, type CurrentLease } from '../job/lease.js';
import type { JobLayout } from '../job/layout.js';
import { tidyStagingParents } from '../job/staging-dir.js';
import type { StepEnv } from './env.js';

/** Removes `lease` unless its holder may be alive; whether it went. */
export async function removeStrayLease(env: StepEnv, lease: CurrentLease | null): Promise<boolean> {
  if (!lease || isLeaseLive(lease, env)) return false;
  if (!(await env.store.delete(lease.path, false).catch(() => false))) return false;
  env.emit({ type: 'warn', message: `removed ${env.store.toUri(lease.path)}, a lease file that a step ended before it left behind (no job is there)` });
  return true;
}

/** At a handle whose job is gone: the stray lease `listed` there and the directory it alone kept (local, HDFS), then the default layout's empty parents. */
export async function tidyGoneHandle(env: StepEnv, layout: JobLayout, listed: CurrentLease | null): Promise<void> {
  if ((await removeStrayLease(env, listed)) && env.store.caps.realDirectories) await env.store.delete(layout.root, false).catch(() => false);
  await tidyStagingParents(env.store, layout).catch(() => undefined);
}
