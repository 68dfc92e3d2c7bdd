// commit-task: claims the task for this attempt (first claim wins), promotes its files, records them.

import { posix } from 'node:path';
import { CommitDeniedError, UsageError } from '../errors.js';
import { encodeClaim, readClaim, type Claim, type TaskFile } from '../job/claims.js';
import { staticPrefix, type JobManifest } from '../job/job.js';
import { JobLayout, SUCCESS_FILE, taskAttemptName } from '../job/layout.js';
import { checkAttempt, checkRelativePath, checkTaskId, partitionOfFile } from '../paths.js';
import { removeTempFiles } from '../store/temp-names.js';
import { openJob, requireState, walkFiles } from './common.js';
import type { StepEnv } from './env.js';
import { publishV2 } from './publish.js';

export interface CommitTaskInput {
  readonly stagingPath: string;
  readonly task: string;
  readonly attempt?: number;
}

export interface CommitTaskResult {
  readonly jobId: string;
  readonly task: string;
  readonly taskAttempt: string;
  /** 'committed' now, or 'already' when this attempt had committed before (idempotent re-run). */
  readonly outcome: 'committed' | 'already';
  readonly files: number;
  readonly bytes: number;
}

export function checkTaskFiles(job: JobManifest, files: readonly TaskFile[]): void {
  const prefix = staticPrefix(job);
  for (const f of files) {
    checkRelativePath(f.path, 'task file');
    if (f.path === SUCCESS_FILE) throw new UsageError(`task file '${SUCCESS_FILE}' would collide with the job's own marker: rename it`);
    partitionOfFile(f.path, job.partitionBy, prefix);
  }
}

function denied(claim: Claim, mine: string): CommitDeniedError {
  return new CommitDeniedError(`commit denied for ${mine}: task ${claim.task} was claimed by ${claim.taskAttempt} (${claim.host}, pid ${claim.pid}); this attempt's files will never appear`);
}

export async function commitTask(env: StepEnv, input: CommitTaskInput): Promise<CommitTaskResult> {
  const { store } = env;
  const task = checkTaskId(input.task);
  const attempt = checkAttempt(input.attempt);
  const open = await openJob(store, input.stagingPath);
  const { job, layout } = open;
  const app = job.appAttempt;
  const taskAttempt = taskAttemptName(job.jobId, task, attempt);
  const claimPath = layout.claimFile(app, task);
  const result = (outcome: CommitTaskResult['outcome'], files: readonly TaskFile[]): CommitTaskResult => ({
    jobId: job.jobId,
    task,
    taskAttempt,
    outcome,
    files: files.length,
    bytes: files.reduce((a, f) => a + f.size, 0),
  });

  let claim = await readClaim(store, claimPath);
  if (claim && claim.taskAttempt !== taskAttempt) throw denied(claim, taskAttempt);
  if (claim?.state === 'committed') return result('already', claim.files);
  requireState(open, ['staged'], 'commit a task');
  const abortedMarker = layout.abortedMarker(app, taskAttempt);
  if (await store.stat(abortedMarker)) {
    throw new CommitDeniedError(`commit denied for ${taskAttempt}: the attempt was aborted and can never commit; run the task as a new --attempt`);
  }

  const attemptDir = layout.attemptDir(app, taskAttempt);
  // A killed `stage` left its temp files here: they must not be listed, nor moved along with the dir.
  await removeTempFiles(store, attemptDir);
  if (!claim) {
    const files = (await walkFiles(store, attemptDir, true)).map((e) => ({ path: e.name, size: e.size }));
    checkTaskFiles(job, files);
    const fresh: Claim = { task, attempt, taskAttempt, appAttempt: app, state: 'claimed', claimedAtMs: env.now(), host: env.host, pid: env.pid, files };
    if (await store.createExclusive(claimPath, encodeClaim(fresh))) {
      claim = fresh;
    } else {
      claim = await readClaim(store, claimPath);
      if (!claim) throw new CommitDeniedError(`commit denied for ${taskAttempt}: the claim of task ${task} was released while this attempt claimed it; run commit-task again`);
      if (claim.taskAttempt !== taskAttempt) throw denied(claim, taskAttempt);
    }
  }

  const root = await promote(env, layout, job, attemptDir, task, claim.files);
  if (await store.stat(abortedMarker)) {
    throw new CommitDeniedError(`commit denied for ${taskAttempt}: the attempt was aborted while it committed`);
  }
  await store.writeFile(claimPath, encodeClaim({ ...claim, state: 'committed', root }));
  return result('committed', claim.files);
}

/** Moves the attempt's output where commit-job expects it; returns its staging-relative root. */
async function promote(env: StepEnv, layout: JobLayout, job: JobManifest, attemptDir: string, task: string, files: readonly TaskFile[]): Promise<string> {
  const { store } = env;
  if (job.algorithm === 'v2') {
    await publishV2(env, layout, job, attemptDir, files);
    return '';
  }
  if (!store.caps.directoryRename) return layout.relative(attemptDir);
  const taskDir = layout.committedTaskDir(job.appAttempt, task);
  if (await store.stat(attemptDir)) {
    await store.mkdirs(posix.dirname(taskDir));
    await store.rename(attemptDir, taskDir);
  } else if (files.length > 0 && !(await store.stat(taskDir))) {
    throw new UsageError(`the output of ${posix.basename(attemptDir)} vanished from ${store.toUri(attemptDir)} before it was committed: run the task again as a new attempt`);
  }
  return layout.relative(taskDir);
}
