// jobs: the stagecommit jobs of a table (its default staging root), under a staging root, or of
// the tables in a directory (a warehouse, a bucket): what is stuck, and who owns it. Reads only.

import { posix } from 'node:path';
import { CorruptManifestError, UsageError } from '../errors.js';
import { readClaims } from '../job/claims.js';
import { canHoldTable, defaultStagingRoot, JOB_FILE, STAGING_PARENT } from '../job/layout.js';
import { describeHolder, holderKnownDead, readCurrentLease } from '../job/lease.js';
import { mapLimit } from '../util/pool.js';
import { JobGoneError, openJob } from '../job/open.js';
import { halfMadeAdoption } from '../job/adoption.js';
import type { Owner } from '../job/job.js';
import type { StepEnv } from './env.js';

export interface JobRow {
  readonly jobId: string;
  /** staged, committing, committed, aborted; 'unreadable' when its manifests are damaged. */
  readonly state: string;
  readonly mode: string | null;
  readonly target: string | null;
  readonly ageSeconds: number | null;
  /** The process that staged (or adopted) it. */
  readonly owner: Owner | null;
  /** The driver holding its lease now, if any, and whether that driver is alive. */
  readonly lease: { readonly holder: string; readonly alive: boolean } | null;
  readonly tasksCommitted: number | null;
  readonly tasksDeclared: number | null;
  readonly handle: string;
  /**
   * An adopted job whose adoption did not finish (adopt killed, or another adopt took the leftover): what is missing.
   */
  readonly halfMade?: string;
  /** Why the row is 'unreadable'. */
  readonly problem?: string;
}

export interface JobsResult {
  readonly roots: readonly string[];
  readonly jobs: readonly JobRow[];
}

/** The job dirs of a staging root, damaged ones included (`_log`, the table log, is not one). */
async function jobDirsIn(env: StepEnv, dir: string): Promise<string[]> {
  return (await env.store.list(dir)).filter((c) => c.kind === 'dir' && c.name !== '_log').map((c) => c.path);
}

/** `dir`'s job dirs when it is a staging root (a child holds a job), else none. */
async function asStagingRoot(env: StepEnv, dir: string): Promise<string[]> {
  const dirs = await jobDirsIn(env, dir);
  const hasJob = await mapLimit(
    dirs,
    env.concurrency,
    async (d) => (await env.store.stat(posix.join(d, JOB_FILE))) !== null,
  );
  return hasJob.some(Boolean) ? dirs : [];
}

/** The jobs in a `.stagecommit` directory: one default staging root per table in it. */
async function jobDirsOfTables(env: StepEnv, stagingParent: string): Promise<string[]> {
  const tables = (await env.store.list(stagingParent)).filter((c) => c.kind === 'dir');
  return (await mapLimit(tables, env.concurrency, (t) => jobDirsIn(env, t.path))).flat();
}

/**
 * The job dirs to list for a URI: itself when it is a job; its children when it is a staging
 * root; for a table, its default staging root; for a directory of tables (a warehouse, a
 * bucket), the default staging roots of its tables (its `.stagecommit`); for a `.stagecommit`
 * directory, those of every table in it.
 */
async function stagingRootOf(env: StepEnv, path: string): Promise<string[]> {
  const { store } = env;
  const [jobFile, self] = await Promise.all([store.stat(posix.join(path, JOB_FILE)), store.stat(path)]);
  if (jobFile) return [path];
  if (self && self.kind !== 'dir')
    throw new UsageError({ reason: 'jobs-root-invalid', root: store.toUri(path), problem: 'not-dir' });
  if (posix.basename(path) === STAGING_PARENT) return jobDirsOfTables(env, path);
  const [own, beside, ofTables] = await Promise.all([
    asStagingRoot(env, path),
    // A table a job creates does not exist until it commits: its default staging root may.
    canHoldTable(path, store.namespaceDepth) ? jobDirsIn(env, defaultStagingRoot(path)) : [],
    jobDirsOfTables(env, posix.join(path, STAGING_PARENT)),
  ]);
  if (own.length) return own;
  const found = [...beside, ...ofTables];
  if (found.length === 0 && !self)
    throw new UsageError({ reason: 'jobs-root-invalid', root: store.toUri(path), problem: 'missing' });
  return found;
}

async function rowOf(env: StepEnv, stagingPath: string): Promise<JobRow | null> {
  const { store } = env;
  const handle = store.toUri(stagingPath);
  try {
    const open = await openJob(env, stagingPath);
    const { job, layout } = open;
    const [claims, lease] = await Promise.all([
      readClaims(store, layout, { jobId: job.jobId, appAttempt: job.appAttempt }),
      readCurrentLease(store, layout),
    ]);
    const halfMade = open.state === 'staged' ? await halfMadeAdoption(store, layout, job, claims) : null;
    return {
      jobId: job.jobId,
      state: open.state,
      mode: job.mode,
      target: job.target,
      ageSeconds: Math.max(0, Math.round((env.now() - job.stagedAtMs) / 1000)),
      owner: { ...job.owner },
      lease: lease ? { holder: describeHolder(lease.record), alive: !holderKnownDead(lease, env) } : null,
      tasksCommitted: [...claims.values()].filter((c) => c.state === 'committed').length,
      tasksDeclared: job.tasks ?? null,
      handle,
      ...(halfMade !== null ? { halfMade } : {}),
    };
  } catch (e) {
    // Not a job (gone meanwhile, a lease file left behind). A job that lost `_job.yaml` while it
    // may be past its commit point is one, unreadable: every step at it is exit 1 (protocol.md §5.16).
    if (
      e instanceof JobGoneError ||
      (!(e instanceof CorruptManifestError) && (await store.stat(posix.join(stagingPath, JOB_FILE))) === null)
    )
      return null;
    return {
      jobId: posix.basename(stagingPath),
      state: 'unreadable',
      mode: null,
      target: null,
      ageSeconds: null,
      owner: null,
      lease: null,
      tasksCommitted: null,
      tasksDeclared: null,
      handle,
      problem: (e as Error).message,
    };
  }
}

export async function listJobs(env: StepEnv, input: { paths: readonly string[] }): Promise<JobsResult> {
  const dirs = (
    await mapLimit(input.paths, env.concurrency, (p) => stagingRootOf(env, p.replace(/\/+$/, '') || '/'))
  ).flat();
  const rows = (await mapLimit(dirs, env.concurrency, (d) => rowOf(env, d))).filter((r): r is JobRow => r !== null);
  // Two URIs naming one location (a table and a link to it) list its jobs once.
  const seen = new Set<string>();
  rows.splice(0, rows.length, ...rows.filter((r) => !seen.has(r.handle) && seen.add(r.handle)));
  rows.sort((a, b) => (b.ageSeconds ?? 0) - (a.ageSeconds ?? 0) || (a.jobId < b.jobId ? -1 : 1));
  return { roots: input.paths.map((p) => env.store.toUri(p)), jobs: rows };
}
