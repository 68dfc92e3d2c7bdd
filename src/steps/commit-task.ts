// commit-task: decides the attempt (commit, unless an abort came first), claims the task for it
// (first claim wins), promotes its files and records them.

import { posix } from 'node:path';
import { CommitDeniedError, ConflictError, UsageError } from '../errors.js';
import { decide, encodeClaim, readClaim, readDecision, type Claim, type TaskFile } from '../job/claims.js';
import { loadJob, staticPrefix, type JobManifest } from '../job/job.js';
import { JobLayout, SUCCESS_FILE, taskAttemptName, taskOfAttempt } from '../job/layout.js';
import { readAttemptUploads, settleAttemptUploads, withUploads, type AttemptUploads } from '../job/pending-uploads.js';
import { checkAttempt, checkRelativePath, checkTaskId, partitionOfFile } from '../paths.js';
import { attemptFiles } from '../job/tasks.js';
import { publishV2 } from '../plan/publish-v2.js';
import { promoteOutput } from '../store/operations.js';
import { requireState, type OpenJob } from '../job/open.js';
import type { StepEnv } from './env.js';
import { runStep } from './runner.js';
import type { Entry } from '../store/types.js';

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

/** `pathsChecked`: the paths were read from a claim, which checked them already (§5.11). */
export function checkTaskFiles(job: JobManifest, files: readonly TaskFile[], pathsChecked = false): void {
  const prefix = staticPrefix(job);
  for (const f of files) checkTaskFile(job, f.path, prefix, pathsChecked);
}

/** One file of checkTaskFiles; `prefix` is the job's staticPrefix. */
export function checkTaskFile(job: JobManifest, path: string, prefix: string, pathsChecked = false): void {
  if (!pathsChecked) checkRelativePath(path, 'task file');
  if (path === SUCCESS_FILE || path.startsWith(`${SUCCESS_FILE}/`)) throw new UsageError(`task file '${path}' would collide with the job's own marker '${SUCCESS_FILE}': rename it`);
  partitionOfFile(path, job.partitionBy, prefix);
}

/**
 * What an engine writing into the attempt dir leaves for itself, not data: Hadoop's and Spark's
 * `_SUCCESS`, Databricks' `_started_<id>` / `_committed_<id>`, and their checksum files
 * (`._SUCCESS.crc`), at any depth.
 */
export function isWriterMarker(name: string): boolean {
  return /^\.?(_SUCCESS|_started_[^/]+|_committed_[^/]+)(\.crc)?$/.test(name) && (name.startsWith('.') === name.endsWith('.crc'));
}

/** Removes the writer's markers from the attempt dir (so no rename carries them along); returns the data. */
async function dropWriterMarkers(env: StepEnv, listed: readonly Entry[]): Promise<Entry[]> {
  const markers = listed.filter((e) => isWriterMarker(posix.basename(e.name)));
  if (markers.length === 0) return [...listed];
  await Promise.all(markers.map((m) => env.store.delete(m.path, false)));
  const names = markers.map((m) => m.name);
  env.emit({ type: 'phase', label: `left out ${names.length} marker file(s) the writer made, not data: ${names.slice(0, 10).join(', ')}${names.length > 10 ? ', …' : ''}` });
  return listed.filter((e) => !isWriterMarker(posix.basename(e.name)));
}

function abortedError(taskAttempt: string, decision: { atMs: number; by: string }): CommitDeniedError {
  return new CommitDeniedError(`commit denied for ${taskAttempt}: the attempt was aborted (${new Date(decision.atMs).toISOString()} by ${decision.by}) and can never commit; run the task as a new --attempt`);
}

function denied(claim: Claim, mine: string): CommitDeniedError {
  return new CommitDeniedError(`commit denied for ${mine}: task ${claim.task} was claimed by ${claim.taskAttempt} (${claim.host}, pid ${claim.pid}); this attempt's files will never appear`);
}

/** A task id outside the declared tasks would commit output that commit-job never asks for. */
export function checkDeclared(job: JobManifest, task: string, what = 'committed'): void {
  if (job.tasks !== undefined && !(/^\d+$/.test(task) && Number(task) < job.tasks)) {
    throw new UsageError(`task ${task} is not one of the job's declared tasks 0…${job.tasks - 1} (--tasks ${job.tasks}): nothing was ${what}`);
  }
}

export async function commitTask(env: StepEnv, input: CommitTaskInput): Promise<CommitTaskResult> {
  const task = checkTaskId(input.task);
  const attempt = checkAttempt(input.attempt);
  return runStep(env, input.stagingPath, { name: 'commit-task' }, (open) => commitAttempt(env, open, task, attempt));
}

async function commitAttempt(env: StepEnv, open: OpenJob, task: string, attempt: number): Promise<CommitTaskResult> {
  const { store } = env;
  const { job, layout } = open;
  checkDeclared(job, task);
  const app = job.appAttempt;
  const taskAttempt = taskAttemptName(job.jobId, task, attempt);
  const ctx = { jobId: job.jobId, task, appAttempt: app };
  const result = (outcome: CommitTaskResult['outcome'], files: readonly TaskFile[]): CommitTaskResult => ({
    jobId: job.jobId,
    task,
    taskAttempt,
    outcome,
    files: files.length,
    bytes: files.reduce((a, f) => a + f.size, 0),
  });

  let claim = await readClaim(store, layout, ctx);
  if (claim && claim.taskAttempt !== taskAttempt) throw denied(claim, taskAttempt);
  if (claim?.state === 'committed') return result('already', claim.files);
  requireState(open, ['staged'], 'commit a task');

  const attemptDir = layout.attemptDir(app, taskAttempt);
  let pending: AttemptUploads | undefined;
  let files: TaskFile[] = [];
  if (!claim) {
    // Checked before the decision: output refused here leaves the attempt free to abort or fix.
    // A killed `stage` left its temp files here: they are not listed, and go before the dir moves.
    const others: Entry[] = [];
    const [walked, uploads] = await Promise.all([attemptFiles(store, attemptDir, { details: true, removeTemps: true, others }), readAttemptUploads(store, layout, job, taskAttempt, env.concurrency)]);
    if (others.length) {
      throw new UsageError(`${taskAttempt} holds '${others[0]!.name}', which is not a regular file (a ${others[0]!.kind}): a task's output is files only; remove it and run commit-task again (nothing was committed)`);
    }
    pending = uploads;
    files = withUploads((await dropWriterMarkers(env, walked)).map((e) => ({ path: e.name, size: e.size })), uploads, taskAttempt);
    if (files.length === 0 && !(await store.stat(attemptDir))) {
      // An aborted attempt's dir is gone: its decision says why.
      const aborted = await readDecision(store, layout, app, taskAttempt);
      if (aborted?.outcome === 'abort') throw abortedError(taskAttempt, aborted);
      const older = await olderOutput(store, layout, job.jobId, task, app);
      const where = older ? `; its files are in ${store.toUri(older)}, left from an earlier app attempt: stage them again` : '; stage its files, or --print-path for a writer, first';
      throw new UsageError(`${taskAttempt} was never staged in app attempt ${app}${app > 0 ? ' (recover started it)' : ''}: nothing was committed${where}`);
    }
    checkTaskFiles(job, files);
  }

  // One decision per attempt (§5.9): commit, unless an abort of this attempt came first.
  const decision = await decide(store, layout, app, { taskAttempt, outcome: 'commit', atMs: env.now(), by: `${env.user}@${env.host} pid ${env.pid}` });
  if (decision.outcome === 'abort') throw abortedError(taskAttempt, decision);

  if (!claim) {
    const fresh: Claim = { task, attempt, taskAttempt, appAttempt: app, state: 'claimed', claimedAtMs: env.now(), host: env.host, pid: env.pid, files };
    if (await store.createExclusive(layout.claimFile(app, task), encodeClaim(fresh))) {
      claim = fresh;
    } else {
      claim = await readClaim(store, layout, ctx);
      if (!claim) throw new ConflictError(`the claim of task ${task} vanished while ${taskAttempt} claimed it (recover ran meanwhile?): run commit-task again`);
      if (claim.taskAttempt !== taskAttempt) throw denied(claim, taskAttempt);
    }
  } else {
    // A re-run after a killed commit: temps must not move into the committed dir with the rest.
    await attemptFiles(store, attemptDir, { removeTemps: true });
  }

  const root = await promote(env, layout, job, attemptDir, task, claim.files);
  await store.writeFile(layout.claimFile(app, task), encodeClaim({ ...claim, state: 'committed', root }));
  await settleAttemptUploads(store, layout, job, taskAttempt, claim.files, env.concurrency, pending);
  // recover may have started the next app attempt meanwhile, without this claim: say so.
  const now = await loadJob(store, layout);
  if (now && now.appAttempt !== app) {
    throw new ConflictError(`recover started app attempt ${now.appAttempt} while ${taskAttempt} committed in app attempt ${app}: its output may not have been kept; check 'stagecommit status' and run the task again if it is listed`);
  }
  return result('committed', claim.files);
}

/** Moves the attempt's output where commit-job expects it; returns its staging-relative root. */
async function promote(env: StepEnv, layout: JobLayout, job: JobManifest, attemptDir: string, task: string, files: readonly TaskFile[]): Promise<string> {
  const { store } = env;
  if (job.algorithm === 'v2') {
    await publishV2(env, layout, job, attemptDir, files);
    return '';
  }
  const root = await promoteOutput(store, attemptDir, layout.committedTaskDir(job.appAttempt, task), files.length > 0);
  if (root === null) {
    throw new ConflictError(`the output of ${posix.basename(attemptDir)} vanished from ${store.toUri(attemptDir)} before it was committed: run the task again as a new attempt`);
  }
  return layout.relative(root);
}

/** The newest attempt dir of the task, from an app attempt before `app`, that holds files (a writer recover left behind). */
async function olderOutput(store: StepEnv['store'], layout: JobLayout, jobId: string, task: string, app: number): Promise<string | null> {
  for (let a = app - 1; a >= 0; a--) {
    const dirs = (await store.list(layout.attemptsDir(a))).filter((e) => taskOfAttempt(jobId, e.name) === task);
    for (const d of dirs) if ((await attemptFiles(store, d.path)).length > 0) return d.path;
  }
  return null;
}
