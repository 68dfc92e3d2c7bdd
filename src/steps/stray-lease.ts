// What a handle whose job is gone may still hold: a lease file left by a step killed between
// trying the first lease and finding no job, or by a renewal landing after its job's staging dir
// went; and, in the default layout, the empty parents of a clean-up killed before it tidied them.
// Nothing else would ever remove them, so the next step that meets them there does.
// Keeps protocol.md §5.12 (a finished job leaves nothing at its handle).

import { holderKnownDead, readCurrentLease, type CurrentLease } from '../job/lease.js';
import type { JobLayout } from '../job/layout.js';
import type { TaskDebris } from '../job/finished.js';
import { tidyStagingParents } from '../job/staging-dir.js';
import { removeDirIfEmpty, removeEmptyDirs } from '../store/operations.js';
import type { StepEnv } from './env.js';

/** Removes `lease` if its holder is known dead (a step of this host, its pid gone); whether it went. */
async function removeStrayLease(env: StepEnv, lease: CurrentLease | null): Promise<boolean> {
  if (!lease || !holderKnownDead(lease, env)) return false;
  if (!(await env.store.delete(lease.path, false).catch(() => false))) return false;
  env.emit({
    type: 'warn',
    message: `removed ${env.store.toUri(lease.path)}, a lease file that a step ended before it left behind (no job is there)`,
  });
  return true;
}

/**
 * Removes the lease `listed` at a handle whose job is gone and, as each older generation left
 * beside it becomes the current one once the newer went, that one too, while their holders are
 * gone (a bounded number: a store that keeps answering with one is no loop). Whether any went.
 */
export async function removeStrayLeases(
  env: StepEnv,
  layout: JobLayout,
  listed: CurrentLease | null,
): Promise<boolean> {
  let removed = false;
  for (let lease = listed, n = 0; n < 16 && (await removeStrayLease(env, lease)); n++) {
    removed = true;
    lease = await readCurrentLease(env.store, layout).catch(() => null);
  }
  return removed;
}

/**
 * At a handle whose job is gone: what a task step killed after its job ended left there, the stray
 * leases `listed` there, the directory once empty (local, HDFS), then the default layout's empty parents.
 */
export async function tidyGoneHandle(
  env: StepEnv,
  layout: JobLayout,
  listed: CurrentLease | null,
  findDebris?: () => Promise<TaskDebris | null>,
): Promise<void> {
  const debris = await findDebris?.().catch(() => null);
  if (debris) await removeTaskDebris(env, layout, debris);
  await removeStrayLeases(env, layout, listed);
  // The dir itself, once nothing is left in it (a lease file's create, or the debris', made it again).
  await removeDirIfEmpty(env.store, layout.root);
  await tidyStagingParents(env.store, layout).catch(() => undefined);
}

/**
 * The records a commit-task or abort --task killed after its job ended left at the handle, and the
 * dirs their creates made again (protocol.md §5.12): each file by name, each dir only while empty.
 */
export async function removeTaskDebris(env: StepEnv, layout: JobLayout, debris: TaskDebris): Promise<void> {
  const { store } = env;
  await Promise.all(debris.files.map((f) => store.delete(f, false).catch(() => false)));
  await removeEmptyDirs(store, [...debris.dirs].reverse(), layout.root, true);
  env.emit({
    type: 'warn',
    message: `removed ${debris.files.length ? debris.files.map((f) => store.toUri(f)).join(', ') : 'the empty dirs'} under ${store.toUri(layout.root)}: a step killed or stopped after its job ended left them (no job is there)`,
  });
}
