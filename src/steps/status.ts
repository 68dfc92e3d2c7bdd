// status: what a job is doing — state, tasks, files, bytes, age, owner, lease.

import { readClaims } from '../job/claims.js';
import { readDecisions } from '../job/decisions.js';
import { describeHolder, holderKnownDead, readCurrentLease } from '../job/lease.js';
import type { JobManifest } from '../job/job.js';
import { taskOfAttempt } from '../job/layout.js';
import { attemptsByTask, declaredNotCommitted } from '../job/tasks.js';
import { compareTasks } from '../paths.js';
import { JobGoneError, type OpenJob } from '../job/open.js';
import type { FinishedJob } from '../job/finished.js';
import { halfMadeAdoption } from '../job/adoption.js';
import type { StepEnv } from './env.js';
import { runStep } from './runner.js';

export interface TaskStatus {
  readonly task: string;
  readonly state: 'committed' | 'committing' | 'attempted' | 'aborted';
  readonly attempts: readonly string[];
  readonly winner?: string;
  readonly files: number;
  readonly bytes: number;
}

export interface StatusResult {
  readonly jobId: string;
  readonly state: string;
  readonly job: JobManifest;
  readonly ageSeconds: number;
  readonly tasks: readonly TaskStatus[];
  /**
   * The tasks a rerun still has to run, in order: a staged job's declared tasks not committed (all
   * its tasks not committed when none were declared); none once the job is past its commit point
   * or aborted. The list recover prints, read without starting an app attempt. While tasks were
   * declared, commit-job refuses (exit 5) as long as any is listed.
   */
  readonly tasksToRun: readonly string[];
  readonly files: number;
  readonly bytes: number;
  readonly lease: { readonly holder: string; readonly alive: boolean } | null;
  /** An adopted job whose adoption did not finish: what is missing (commit-job refuses it). */
  readonly halfMade?: string;
}

/** A job that committed and left no staging dir: what its `_SUCCESS` or table-log entry tells. */
export interface FinishedStatusResult extends FinishedJob {
  readonly state: 'committed';
  readonly finished: true;
  /** Always empty: a committed job has nothing left to run. */
  readonly tasksToRun: readonly string[];
}

export async function status(
  env: StepEnv,
  input: { stagingPath: string },
): Promise<StatusResult | FinishedStatusResult> {
  try {
    return await runStep(env, input.stagingPath, { name: 'status' }, (open) => statusOf(env, open));
  } catch (e) {
    if (e instanceof JobGoneError && e.committed)
      return { ...e.committed, state: 'committed', finished: true, tasksToRun: [] };
    throw e;
  }
}

function tasksToRun(open: OpenJob, tasks: readonly TaskStatus[], declaredMissing: readonly string[]): string[] {
  if (open.state !== 'staged') return [];
  if (open.job.tasks !== undefined) return [...declaredMissing];
  return tasks.filter((t) => t.state !== 'committed').map((t) => t.task);
}

/** A task's state: its claim's, else `committing` once an attempt is decided to commit (no claim made yet). */
function taskState(
  claim: 'claimed' | 'committed' | undefined,
  e: { attempts: ReadonlySet<string>; deciding: boolean },
): TaskStatus['state'] {
  if (claim) return claim === 'committed' ? 'committed' : 'committing';
  return e.deciding ? 'committing' : e.attempts.size ? 'attempted' : 'aborted';
}

async function statusOf(env: StepEnv, open: OpenJob): Promise<StatusResult> {
  const { store } = env;
  const { job, layout } = open;
  const app = job.appAttempt;
  const [claims, decisions] = await Promise.all([
    readClaims(store, layout, { jobId: job.jobId, appAttempt: app }),
    readDecisions(store, layout, app),
  ]);
  const byTask = new Map<string, { attempts: Set<string>; aborted: Set<string>; deciding: boolean }>();
  const entry = (t: string) => {
    let e = byTask.get(t);
    if (!e) byTask.set(t, (e = { attempts: new Set(), aborted: new Set(), deciding: false }));
    return e;
  };
  for (const [t, names] of await attemptsByTask(store, layout, job.jobId, app))
    for (const n of names) entry(t).attempts.add(n);
  for (const d of decisions.values()) {
    const t = taskOfAttempt(job.jobId, d.taskAttempt);
    if (t && d.outcome === 'abort') entry(t).aborted.add(d.taskAttempt);
    // Decided to commit, its claim not made yet: a commit-task is (or was, if killed) committing it.
    if (t && d.outcome === 'commit') entry(t).deciding = true;
  }
  for (const t of claims.keys()) entry(t);
  const tasks: TaskStatus[] = [...byTask.entries()].map(([task, e]) => {
    const c = claims.get(task);
    const files = c?.files ?? [];
    const state = taskState(c?.state, e);
    const attempts = [...new Set([...e.attempts, ...e.aborted, ...(c ? [c.taskAttempt] : [])])].sort();
    return {
      task,
      state,
      attempts,
      winner: c?.taskAttempt,
      files: c ? files.length : 0,
      bytes: c ? files.reduce((a, f) => a + f.size, 0) : 0,
    };
  });
  tasks.sort((a, b) => compareTasks(a.task, b.task));
  const declaredMissing = declaredNotCommitted(job, claims);
  const lease = await readCurrentLease(store, layout);
  const halfMade = open.state === 'staged' ? await halfMadeAdoption(store, layout, job, claims) : null;
  const committed = tasks.filter((t) => t.state === 'committed');
  return {
    jobId: job.jobId,
    state: open.state,
    job,
    ageSeconds: Math.max(0, Math.round((env.now() - job.stagedAtMs) / 1000)),
    tasks,
    tasksToRun: tasksToRun(open, tasks, declaredMissing),
    files: committed.reduce((a, t) => a + t.files, 0),
    bytes: committed.reduce((a, t) => a + t.bytes, 0),
    // One look tells only a holder known dead (lease.ts): any other may be live.
    lease: lease ? { holder: describeHolder(lease.record), alive: !holderKnownDead(lease, env) } : null,
    ...(halfMade !== null ? { halfMade } : {}),
  };
}
