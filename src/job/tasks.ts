// Which tasks a job has: the files of an attempt dir, the tasks attempted, the declared tasks
// not yet committed. The one home of each of these rules.

import type { Entry, Store } from '../store/types.js';
import { forEachFile, walkFiles, type WalkOptions } from '../store/walk.js';
import type { Claim } from './claims.js';
import type { JobManifest } from './job.js';
import { ATTEMPT_MARKER, taskOfAttempt, type JobLayout } from './layout.js';

const NOT_OUTPUT = new Set([ATTEMPT_MARKER]);

type AttemptWalk = Omit<WalkOptions, 'ignoreTop'>;

/** The output files of a task attempt dir, relative to it (never temps, never the attempt marker). */
export function attemptFiles(store: Store, attemptDir: string, opts: AttemptWalk = {}): Promise<Entry[]> {
  return walkFiles(store, attemptDir, { ...opts, ignoreTop: NOT_OUTPUT });
}

/** attemptFiles handed over one at a time as they are listed, unsorted (a million-file attempt). */
export function eachAttemptFile(
  store: Store,
  attemptDir: string,
  opts: AttemptWalk,
  fn: (e: Entry) => void,
): Promise<void> {
  return forEachFile(store, attemptDir, { ...opts, ignoreTop: NOT_OUTPUT }, fn);
}

/** Task → the attempt dirs it has in an app attempt. */
export async function attemptsByTask(
  store: Store,
  layout: JobLayout,
  jobId: string,
  app: number,
): Promise<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>();
  for (const e of await store.list(layout.attemptsDir(app))) {
    const task = taskOfAttempt(jobId, e.name);
    if (task) (out.get(task) ?? out.set(task, new Set()).get(task)!).add(e.name);
  }
  return out;
}

/** Declared tasks (--tasks N) without a committed claim, in order; [] when none were declared. */
export function declaredNotCommitted(job: JobManifest, claims: ReadonlyMap<string, Pick<Claim, 'state'>>): string[] {
  const missing: string[] = [];
  if (job.tasks !== undefined)
    for (let t = 0; t < job.tasks; t++) if (claims.get(String(t))?.state !== 'committed') missing.push(String(t));
  return missing;
}
