// A v2 job's tasks that had claimed their output: what an abort leaves in the target.

import { compareTasks } from '../paths.js';
import type { Store } from '../store/types.js';
import { claimEntries, claimTaskOf } from './claims.js';
import type { JobLayout } from './layout.js';

/**
 * The tasks of a v2 job that claimed their output in its current app attempt, in task order: the
 * ones whose files were (or were being) published into the target, which an abort leaves there.
 * Names only, leniently read: an abort must not stop at a damaged claim. Empty for a v1 job.
 */
export async function publishedV2Tasks(
  store: Store,
  layout: JobLayout,
  job: { readonly algorithm: string; readonly appAttempt: number; readonly publishedTasks?: readonly string[] },
): Promise<string[]> {
  if (job.algorithm !== 'v2') return [];
  // An abort that marked the job recorded them: its claims may be gone since.
  if (job.publishedTasks) return [...job.publishedTasks];
  const tasks = (await claimEntries(store, layout, job.appAttempt))
    .map(claimTaskOf)
    .filter((t): t is string => t !== null);
  return tasks.sort(compareTasks);
}
