// clean-orphans' walk: which directories are leftovers, found by name or by `_job.yaml`, never
// entering one once found and never reading a data file or following a link.
// Keeps protocol.md §5.16: a dir holding a job's files without its manifest is never a leftover.

import { UsageError } from '../errors.js';
import { posix } from 'node:path';
import { findCommitted, jobFilesLeft, plansUndecided, unfinishedEntryOf } from '../job/finished.js';
import { JobLayout, JOB_FILE, LEASE_PREFIX, PLAN_DIR, PROGRESS_FILE, STAGING_PARENT } from '../job/layout.js';
import { listPlans } from '../plan/plan-file.js';
import type { Entry, Store } from '../store/types.js';
import { dirsVanishWhenEmpty } from '../store/operations.js';
import { pendingUploadsUnder } from '../store/uploads.js';
import { mapLimit } from '../util/pool.js';
import type { StepEnv } from './env.js';
import { recoverCommand } from '../messages/advice.js';

export const LEFTOVER_KINDS = [
  'spark-staging',
  'hadoop-temporary',
  'hive-staging',
  's3a-magic',
  'stagecommit',
  'multipart-upload',
] as const;
export type LeftoverKind = (typeof LEFTOVER_KINDS)[number];
export interface ScanProblem {
  readonly path: string;
  readonly message: string;
}

const SPARK_STAGING = /^\.spark-staging-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HIVE_STAGING = /^\.hive-staging/;
const MAGIC = /^__magic(_job-.+)?$/;

/** A job's lease file (`_lease.N.yaml`). */
export function isLeaseFile(e: Entry): boolean {
  return e.kind === 'file' && e.name.startsWith(LEASE_PREFIX) && /^\d+\.yaml$/.test(e.name.slice(LEASE_PREFIX.length));
}

/**
 * A dir that holds nothing but lease files, where the default layout puts a job's staging dir
 * (`<parent>/.stagecommit/<table>/<id>`): a handle whose job is gone. Anywhere else such a dir may
 * be anyone's (a partition holding a file of that name): never taken for a leftover.
 */
function isStrayHandle(path: string, entries: readonly Entry[]): boolean {
  return (
    entries.length > 0 &&
    entries.every(isLeaseFile) &&
    posix.basename(posix.dirname(posix.dirname(path))) === STAGING_PARENT
  );
}

/** The kind a directory is by its name alone (stagecommit staging dirs are known by `_job.yaml`). */
export function kindByName(name: string): LeftoverKind | null {
  if (SPARK_STAGING.test(name)) return 'spark-staging';
  if (name === '_temporary') return 'hadoop-temporary';
  if (HIVE_STAGING.test(name)) return 'hive-staging';
  if (MAGIC.test(name)) return 's3a-magic';
  return null;
}

/**
 * Every root is checked before any is scanned: a mistyped root is bad input (exit 2), never a
 * quiet "no leftovers", and one bad root in a list changes nothing under the others.
 */
export async function checkRoots(store: Store, roots: readonly string[], concurrency: number): Promise<void> {
  type Bad = { readonly root: string; readonly problem: 'missing' | 'symlink' | 'file' | 'not-dir' };
  const bad = await mapLimit(roots, concurrency, async (root): Promise<Bad | null> => {
    const st = await store.stat(root);
    const uri = store.toUri(root);
    if (st?.kind === 'dir') return null;
    // On a store without directories a prefix "exists" only through its objects; uploads never completed count too.
    if (!st && dirsVanishWhenEmpty(store) && (await pendingUploadsUnder(store, root)).length) return null;
    if (!st) return { root: uri, problem: 'missing' };
    if (st.kind === 'symlink') return { root: uri, problem: 'symlink' };
    return { root: uri, problem: st.kind === 'file' ? 'file' : 'not-dir' };
  });
  const problems = bad.filter((b): b is Bad => b !== null);
  if (problems.length) throw new UsageError({ reason: 'roots-invalid', roots: problems });
}

/** Every leftover directory under the roots, by name or by `_job.yaml`; never into a leftover once found. */
export async function scan(
  env: StepEnv,
  roots: readonly string[],
  maxDepth: number,
  problems: ScanProblem[],
): Promise<{ found: { path: string; kind: LeftoverKind }[]; scanned: number; emptyParents: string[] }> {
  const run: ScanRun = { env, maxDepth, problems, found: [], emptyParents: [], scanned: 0 };
  for (const root of roots) {
    let level: DirToScan[] = [{ path: root, depth: 0 }];
    while (level.length) level = (await mapLimit(level, env.concurrency, (dir) => scanDir(run, dir))).flat();
  }
  return { found: run.found, scanned: run.scanned, emptyParents: run.emptyParents };
}

interface DirToScan {
  readonly path: string;
  readonly depth: number;
}

/** One scan's bounds and what it found so far. */
interface ScanRun {
  readonly env: StepEnv;
  readonly maxDepth: number;
  readonly problems: ScanProblem[];
  readonly found: { path: string; kind: LeftoverKind }[];
  readonly emptyParents: string[];
  scanned: number;
}

/** Lists one directory: records it if it is a leftover or a problem, else returns its subdirs to scan. */
async function scanDir(run: ScanRun, { path, depth }: DirToScan): Promise<DirToScan[]> {
  const { env } = run;
  const { store } = env;
  let entries: Entry[];
  try {
    entries = await store.list(path);
  } catch (e) {
    run.problems.push({ path: store.toUri(path), message: (e as Error).message });
    return [];
  }
  run.scanned++;
  if (!entries.length && isStagingParent(path)) run.emptyParents.push(path);
  if (run.scanned % 1000 === 0)
    env.emit({ type: 'progress', label: 'scanning directories', done: run.scanned, total: run.scanned });
  // A job's dir, or a handle that holds nothing but lease files: a step killed between trying
  // the lease and finding no job there (S3), or a renewal that landed after its job went.
  if (entries.some((e) => e.name === JOB_FILE && e.kind === 'file') || isStrayHandle(path, entries)) {
    run.found.push({ path, kind: 'stagecommit' });
    return [];
  }
  const problem = await jobWithoutManifest(store, path, entries);
  if (problem) {
    run.problems.push({ path: store.toUri(path), message: problem });
    return [];
  }
  const down: DirToScan[] = [];
  for (const e of entries) {
    if (e.kind !== 'dir') continue; // files are never read; links never followed
    const kind = kindByName(e.name);
    if (kind) run.found.push({ path: e.path, kind });
    else if (depth + 1 <= run.maxDepth) down.push({ path: e.path, depth: depth + 1 });
  }
  return down;
}

/**
 * What is wrong with a dir that holds a stagecommit job's files without its `_job.yaml` (nothing
 * under it is touched), or null: it is no such dir.
 */
async function jobWithoutManifest(store: Store, path: string, entries: readonly Entry[]): Promise<string | null> {
  // A plan without its job: a stagecommit job past its commit point that lost `_job.yaml`.
  // Its `_temporary` holds committed output, not a leftover: nothing under it is touched.
  const plans = entries.some((e) => e.name === PLAN_DIR && e.kind === 'dir')
    ? await listPlans(store, new JobLayout(path))
    : [];
  if (plans.length) {
    // Or the plan landed after its job committed (a write its store held): then it is a leftover to delete.
    // Or no entry names it (protocol.md §4.1): never applied, a leftover too.
    const done = await findCommitted(store, path);
    const late = done
      ? `job ${done.jobId} committed (${done.committedAt})`
      : (await plansUndecided(store, path, plans))
        ? 'no table-log entry names it (it was never applied)'
        : null;
    return late
      ? `${PLAN_DIR}/ without ${JOB_FILE}: ${late} and this plan of it landed later; nothing was touched: delete the directory`
      : `${PLAN_DIR}/ without ${JOB_FILE}: a stagecommit job past its commit point lost its manifest; nothing under it was touched: restore ${JOB_FILE}, then run ${recoverCommand()}`;
  }
  // A default staging dir whose job lost `_job.yaml` (and the plan it carried) while holding the
  // table log: its `_temporary` is a job's output, not a Hadoop leftover.
  const held = entries.some((e) => e.name === '_temporary') ? (await unfinishedEntryOf(store, path)).entry : null;
  if (held) {
    return `${JOB_FILE} is missing, but the table log holds job ${held.jobId}'s unfinished entry ${held.number} for this staging dir (it may be past its commit point); nothing under it was touched: restore ${JOB_FILE}, then run ${recoverCommand()}`;
  }
  // Any dir holding a stagecommit job's claims, decisions or commit progress without its
  // `_job.yaml` (a --staging-dir of one's own, which the log does not lead to): the job may
  // be past its commit point, and its `_temporary` is its output (protocol.md §5.16).
  const left = entries.some((e) => e.name === '_temporary' || e.name === PROGRESS_FILE)
    ? (await jobFilesLeft(store, path, entries)).filter((m) => m === PROGRESS_FILE || m.startsWith('_temporary/'))
    : [];
  if (left.length) {
    return `${JOB_FILE} is missing, but the dir holds a stagecommit job's files (${left.join(', ')}): its job may be past its commit point; nothing under it was touched: restore ${JOB_FILE}, then run ${recoverCommand()}; if its job has ended, check the target by hand and delete the directory`;
  }
  return null;
}

/** The default layout's `.stagecommit` dir, or a table's dir in it. */
function isStagingParent(path: string): boolean {
  return posix.basename(path) === STAGING_PARENT || posix.basename(posix.dirname(path)) === STAGING_PARENT;
}

/**
 * Removes the default layout's empty parents the scan found (a clean-up killed before it tidied
 * them leaves them so: protocol.md §5.12), and a `.stagecommit` dir that is empty once they went.
 */
export async function removeEmptyStagingParents(store: Store, found: readonly string[]): Promise<void> {
  if (dirsVanishWhenEmpty(store)) return;
  for (const dir of [...found].sort((a, b) => b.length - a.length)) {
    for (const d of posix.basename(dir) === STAGING_PARENT ? [dir] : [dir, posix.dirname(dir)]) {
      if ((await store.list(d).catch(() => [null])).length > 0) break;
      if (!(await store.delete(d, false).catch(() => false))) break;
    }
  }
}
