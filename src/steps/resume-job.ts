// stage --job-id again: a rerun finds the job its id names at the same staging dir and goes on
// with it (staged, committing) or answers that it committed; other parameters are refused. A job
// id names one staging dir, so only that job's own `_job.yaml` there is ever resumed.

import { isDeepStrictEqual } from 'node:util';
import { CommitDeniedError, ConflictError, UsageError } from '../errors.js';
import { abort } from './abort.js';
import { runLeasedStep } from './runner.js';
import { posix } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeManifest } from '../manifest/codec.js';
import { decidedBy } from '../job/decisions.js';
import { RESUMED_FILE } from '../job/layout.js';
import { jobAttempts } from './task-attempts.js';
import { readClaims } from '../job/claims.js';
import { committedViaLog, recordedParams, type FinishedJob, type RecordedParams } from '../job/finished.js';
import type { Algorithm, JobManifest, JobState, Mode } from '../job/job.js';
import { JobGoneError, openJob } from '../job/open.js';
import type { PartitionValue } from '../paths.js';
import type { StepEnv } from './env.js';

/** The parameters a rerun gives `stage --target`: they must be the job's own. */
export interface RerunParams {
  readonly targetPath: string;
  readonly stagingPath: string;
  readonly jobId: string;
  readonly mode: Mode;
  readonly algorithm: Algorithm;
  readonly partition: readonly PartitionValue[];
  readonly partitionBy: readonly string[];
  readonly tasks?: number;
}

/** A job found again: staged or committing (its manifest), or committed and gone (what proves it). */
export type FoundJob =
  | {
      readonly state: Exclude<JobState, 'committed'>;
      readonly job: JobManifest;
      readonly tasksCommitted: number;
      /** Attempts an earlier run left undecided, aborted by this resume (their files never commit). */
      readonly discarded?: readonly string[];
    }
  | { readonly state: 'committed'; readonly job?: JobManifest; readonly committed?: FinishedJob };

const show = (v: unknown) => (v === undefined ? 'none' : Array.isArray(v) ? v.join(',') || 'none' : String(v));

/** The first parameter of the rerun that is not the job's, as "--mode append (the job has overwrite)". */
function difference(job: JobManifest, p: RerunParams, uri: (path: string) => string): string | null {
  if (job.adopted) return `the job was made by 'stagecommit adopt' from ${job.adopted.leftover}`;
  if (job.targetPath !== p.targetPath) return `--target ${uri(p.targetPath)} (the job's is ${job.target})`;
  const statics = (ps: readonly PartitionValue[]) => ps.map((x) => `${x.column}=${x.value}`);
  const pairs: [string, unknown, unknown][] = [
    ['--mode', p.mode, job.mode],
    ['--algorithm', p.algorithm, job.algorithm],
    ['--partition-by', p.partitionBy, job.partitionBy],
    ['--partition', statics(p.partition), statics(job.staticPartition)],
    ['--tasks', p.tasks, job.tasks],
  ];
  for (const [flag, given, own] of pairs)
    if (!isDeepStrictEqual(given, own)) return `${flag} ${show(given)} (the job's is ${show(own)})`;
  return null;
}

function otherParameters(p: RerunParams, diff: string, uri: (path: string) => string): UsageError {
  return new UsageError({ reason: 'rerun-other-parameters', jobId: p.jobId, stagingDir: uri(p.stagingPath), diff });
}

/** The first parameter of a rerun that is not what the committed job's `_SUCCESS` records (only what it records). */
function recordedDifference(r: RecordedParams, p: RerunParams): string | null {
  const statics = p.partition.map((x) => `${x.column}=${x.value}`);
  const pairs: [string, unknown, unknown][] = [
    ['--mode', p.mode, r.mode],
    ['--algorithm', p.algorithm, r.algorithm],
    ['--partition-by', p.partitionBy, r.partitionBy],
    ['--partition', statics, r.partition],
    ['--tasks', p.tasks ?? null, r.tasks],
  ];
  for (const [flag, given, own] of pairs)
    if (own !== undefined && !isDeepStrictEqual(given, own))
      return `${flag} ${show(given ?? undefined)} (the job's was ${show(own ?? undefined)})`;
  return null;
}

/**
 * The job a rerun's `--job-id` names at its staging dir, or null when there is none (never
 * staged, or aborted: the id may be staged again). A job staged with other parameters is exit 2
 * naming the first difference; a damaged one is the error openJob gives (exit 1), never a new job.
 */
export async function findRerunJob(env: StepEnv, p: RerunParams): Promise<FoundJob | null> {
  const { store } = env;
  try {
    const open = await openJob(env, p.stagingPath);
    const { job } = open;
    const diff = job.jobId === p.jobId ? difference(job, p, (x) => store.toUri(x)) : `another job (${job.jobId})`;
    if (diff !== null) throw otherParameters(p, diff, (x) => store.toUri(x));
    if (open.state === 'committed') return { state: 'committed', job };
    const claims = await readClaims(store, open.layout, { jobId: job.jobId, appAttempt: job.appAttempt });
    const tasksCommitted = [...claims.values()].filter((c) => c.state === 'committed').length;
    return { state: open.state, job, tasksCommitted };
  } catch (e) {
    if (!(e instanceof JobGoneError)) throw e;
    if (e.committed) {
      const diff = recordedDifference(await recordedParams(store, p.targetPath, p.jobId), p);
      if (diff !== null) throw otherParameters(p, diff, (x) => store.toUri(x));
      return { state: 'committed', committed: e.committed };
    }
  }
  // Outside the default layout a finished job's handle tells nothing: the table log still knows it.
  const committed = await committedViaLog(store, p.targetPath, p.stagingPath, p.jobId, env.concurrency);
  return committed ? { state: 'committed', committed } : null;
}

/**
 * A resumed staged job's attempts that an earlier run left undecided are aborted, each by the
 * exclusive create of its decision (protocol.md §5.9): their files go and never join the rerun's,
 * which stages into the task's next attempt. An attempt whose commit-task decided first is left
 * to it (a killed one's task is finished by commit-task's next run, or by the next attempt's claim).
 */
export async function discardUndecided(env: StepEnv, stagingPath: string): Promise<string[]> {
  const open = await openJob(env, stagingPath);
  if (open.state !== 'staged') return [];
  const { job, layout } = open;
  const discarded: string[] = [];
  for (const [task, attempts] of await jobAttempts(env.store, layout, job)) {
    for (const [n, decision] of attempts) {
      if (decision !== null) continue;
      try {
        const r = await abort(env, { stagingPath, task, attempt: n });
        if (r.outcome === 'aborted' && r.taskAttempt) discarded.push(r.taskAttempt);
      } catch (e) {
        // A commit-task that decided first keeps its attempt; the job ending meanwhile ends this too.
        if (!(e instanceof ConflictError || e instanceof CommitDeniedError)) throw e;
      }
    }
  }
  return discarded.sort();
}

/**
 * A resumed job is young again: `_resumed.yaml` is rewritten under the job's lease, so its time is
 * the newest in the staging dir (what clean-orphans judges ages by, on the store's clock). A
 * clean-orphans abort takes the same lease and looks at that file under it (protocol.md §6.1): the
 * lease's exclusive create orders the two, and the abort that comes second leaves the job alone.
 * A lease held meanwhile (another run resuming it) is waited for a few seconds, then exit 4.
 */
export async function markResumed(env: StepEnv, stagingPath: string): Promise<void> {
  for (let round = 1; ; round++) {
    try {
      await runLeasedStep(
        env,
        stagingPath,
        { name: 'stage', states: { allowed: ['staged'], doing: 'resume the job' } },
        async (run) => {
          const at = run.env.now();
          const body = encodeManifest({
            kind: 'stagecommit/resumed',
            version: 1,
            atMs: at,
            at: new Date(at).toISOString(),
            by: decidedBy(run.env),
          });
          await run.env.store.writeFile(posix.join(stagingPath, RESUMED_FILE), body);
        },
      );
      return;
    } catch (e) {
      const held = e instanceof ConflictError && (e.reason === 'lease-held' || e.reason === 'lease-vanished');
      if (!held || round >= 20) throw e;
      await sleep(250);
    }
  }
}
