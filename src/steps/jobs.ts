// jobs: the stagecommit jobs of a table (its default staging root) or under a staging root —
// what is stuck on this table, and who owns it. Reads only.

import { posix } from 'node:path';
import { UsageError } from '../errors.js';
import { readClaims } from '../job/claims.js';
import { canHoldTable, defaultStagingRoot, JOB_FILE } from '../job/layout.js';
import { describeHolder, isLeaseLive, readCurrentLease } from '../job/lease.js';
import { mapLimit } from '../util/pool.js';
import { openJob } from '../job/open.js';
import { halfMadeAdoption } from '../job/adoption.js';
import type { StepEnv } from './env.js';

export interface JobRow {
  readonly jobId: string;
  /** staged, committing, committed, aborted; 'unreadable' when its manifests are damaged. */
  readonly state: string;
  readonly mode: string | null;
  readonly target: string | null;
  readonly ageSeconds: number | null;
  /** user@host pid of the process that staged (or adopted) it. */
  readonly owner: string | null;
  /** The driver holding its lease now, if any, and whether that driver is alive. */
  readonly lease: { readonly holder: string; readonly alive: boolean } | null;
  readonly tasksCommitted: number | null;
  readonly tasksDeclared: number | null;
  readonly handle: string;
  /** An adopted job whose adoption did not finish (adopt killed, or another adopt took the leftover): what is missing. */
  readonly halfMade?: string;
  /** Why the row is 'unreadable'. */
  readonly problem?: string;
}

export interface JobsResult {
  readonly roots: readonly string[];
  readonly jobs: readonly JobRow[];
}

/** The staging root to list for a URI: itself when it holds jobs, else the table's default one. */
async function stagingRootOf(env: StepEnv, path: string): Promise<string[]> {
  const { store } = env;
  if (await store.stat(posix.join(path, JOB_FILE))) return [path];
  const self = await store.stat(path);
  if (self && self.kind !== 'dir') throw new UsageError(`${store.toUri(path)} is not a directory: give a table or a staging root`);
  const children = await store.list(path);
  const hasJobs = await Promise.all(children.filter((c) => c.kind === 'dir').map(async (c) => (await store.stat(posix.join(c.path, JOB_FILE))) !== null));
  if (hasJobs.some(Boolean)) return children.filter((c) => c.kind === 'dir').map((c) => c.path);
  // A table a job creates does not exist until it commits: its default staging root may.
  const beside = canHoldTable(path, store.namespaceDepth) ? await store.list(defaultStagingRoot(path)) : [];
  const jobsOfTable = beside.filter((c) => c.kind === 'dir' && c.name !== '_log').map((c) => c.path);
  if (jobsOfTable.length === 0 && !children.length && !(await store.stat(path))) throw new UsageError(`${store.toUri(path)} does not exist: give a table or a staging root`);
  return jobsOfTable;
}

async function rowOf(env: StepEnv, stagingPath: string): Promise<JobRow | null> {
  const { store } = env;
  const handle = store.toUri(stagingPath);
  try {
    const open = await openJob(env, stagingPath);
    const { job, layout } = open;
    const [claims, lease] = await Promise.all([readClaims(store, layout, job.jobId, job.appAttempt), readCurrentLease(store, layout)]);
    const halfMade = open.state === 'staged' ? await halfMadeAdoption(store, layout, job, claims) : null;
    return {
      jobId: job.jobId,
      state: open.state,
      mode: job.mode,
      target: job.target,
      ageSeconds: Math.max(0, Math.round((env.now() - job.stagedAtMs) / 1000)),
      owner: `${job.owner.user}@${job.owner.host} pid ${job.owner.pid}`,
      lease: lease ? { holder: describeHolder(lease.record), alive: isLeaseLive(lease, env) } : null,
      tasksCommitted: [...claims.values()].filter((c) => c.state === 'committed').length,
      tasksDeclared: job.tasks ?? null,
      handle,
      ...(halfMade !== null ? { halfMade } : {}),
    };
  } catch (e) {
    if ((await store.stat(posix.join(stagingPath, JOB_FILE))) === null) return null; // not a job (or gone meanwhile)
    return { jobId: posix.basename(stagingPath), state: 'unreadable', mode: null, target: null, ageSeconds: null, owner: null, lease: null, tasksCommitted: null, tasksDeclared: null, handle, problem: (e as Error).message };
  }
}

export async function listJobs(env: StepEnv, input: { paths: readonly string[] }): Promise<JobsResult> {
  const dirs = (await mapLimit(input.paths, env.concurrency, (p) => stagingRootOf(env, p.replace(/\/+$/, '') || '/'))).flat();
  const rows = (await mapLimit(dirs, env.concurrency, (d) => rowOf(env, d))).filter((r): r is JobRow => r !== null);
  rows.sort((a, b) => (b.ageSeconds ?? 0) - (a.ageSeconds ?? 0) || (a.jobId < b.jobId ? -1 : 1));
  return { roots: input.paths.map((p) => env.store.toUri(p)), jobs: rows };
}
