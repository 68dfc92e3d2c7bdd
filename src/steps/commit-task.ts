// commit-task: decides the attempt (commit, unless an abort came first), claims the task for it
// (first claim wins), promotes its files and records them.

import { posix } from 'node:path';
import { CommitDeniedError, ConflictError, StoreError, UsageError } from '../errors.js';
import { AttemptFileList, claimFilesOfRecord, taskFilesOf, VersionDigest, type ClaimFiles } from '../job/claim-files.js';
import { decide, encodeClaimWith, readClaimRecord, readDecision, type ClaimHeader, type ClaimRecord } from '../job/claims.js';
import { staticPrefix, type JobManifest } from '../job/job.js';
import { SUCCESS_FILE, taskAttemptName, taskOfAttempt, type JobLayout } from '../job/layout.js';
import { checkStagedOnce, readAttemptUploads, settleAttemptUploads, type AttemptUploads } from '../job/pending-uploads.js';
import { checkAttempt, checkRelativePath, checkTaskId, partitionOfFile } from '../paths.js';
import { attemptFiles, eachAttemptFile } from '../job/tasks.js';
import { planV2, publishClaimedV2 } from '../plan/publish-v2.js';
import { promoteOutput } from '../store/operations.js';
import { processGone } from '../job/lease.js';
import { requireState, type OpenJob } from '../job/open.js';
import type { StepEnv } from './env.js';
import { runStep } from './runner.js';
import { checkKept, checkNotOverlooked } from './task-race.js';
import type { Entry } from '../store/types.js';
import { mapLimit } from '../util/pool.js';

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

/**
 * A task file's path, as commit-task checks it before the decision; `prefix` is the job's
 * staticPrefix. `pathsChecked`: the path was read from a claim, which checked it already (§5.11).
 */
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

/** Removes the writer's markers from the attempt dir, so no rename carries them along. */
async function dropWriterMarkers(env: StepEnv, markers: readonly Entry[]): Promise<void> {
  if (markers.length === 0) return;
  await Promise.all(markers.map((m) => env.store.delete(m.path, false)));
  const names = markers.map((m) => m.name).sort();
  env.emit({ type: 'phase', label: `left out ${names.length} marker file(s) the writer made, not data: ${names.slice(0, 10).join(', ')}${names.length > 10 ? ', …' : ''}` });
}

function abortedError(taskAttempt: string, decision: { atMs: number; by: string }): CommitDeniedError {
  return new CommitDeniedError(`commit denied for ${taskAttempt}: the attempt was aborted (${new Date(decision.atMs).toISOString()} by ${decision.by}) and can never commit; run the task as a new --attempt`);
}

function denied(claim: ClaimHeader, mine: string): CommitDeniedError {
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
  const result = (outcome: CommitTaskResult['outcome'], files: number, bytes: number): CommitTaskResult => ({ jobId: job.jobId, task, taskAttempt, outcome, files, bytes });

  const before = await readClaimRecord(store, layout, ctx);
  if (before && before.taskAttempt !== taskAttempt) throw denied(before, taskAttempt);
  if (before?.state === 'committed') {
    // Read through all the same: its paths are checked as every claim's are (§5.11).
    before.eachFile(() => {});
    return result('already', before.fileCount, before.bytes);
  }
  requireState(open, ['staged'], 'commit a task');
  // A v2 publication of this attempt still running here: a second run beside it could undo it.
  if (before && job.algorithm === 'v2' && before.host === env.host && before.pid !== env.pid && !processGone(before, env)) {
    throw new ConflictError(`${taskAttempt} is being committed by pid ${before.pid} on ${before.host}: wait for it (if it was killed, run commit-task again)`);
  }
  const attemptDir = layout.attemptDir(app, taskAttempt);
  // Checked before the decision: output refused here leaves the attempt free to abort or fix.
  const output = before ? null : await attemptOutput(env, layout, job, task, taskAttempt);
  // So is a v2 task whose files cannot go into the target (an append clash): planned again once claimed.
  if (output && job.algorithm === 'v2') await planV2(env, layout, job, attemptDir, taskFilesOf(output.files)).catch((e: unknown) => refusedV2(env, layout, job, taskAttempt, ctx, e));

  let claim: ClaimHeader;
  let files: ClaimFiles;
  try {
    ({ claim, files } = await decideAndClaim(env, layout, job, { task, attempt, taskAttempt }, before, output));
  } catch (e) {
    // A recover or abort that ran meanwhile removes the app attempt's dirs, and a store reports that
    // as it may (not found; an IOException from WebHDFS): say what it did, if it did anything. A
    // claim made whose answer was lost, which recover finished and carried, is this task's commit.
    if (!(e instanceof StoreError) || (await checkNotOverlooked(env, layout, job, task, taskAttempt)) === 'go') throw e;
    const made = output?.files ?? claimFilesOfRecord(before!);
    return result('committed', made.list.length, made.bytes);
  }
  // Recover finished this claim and carried it into its app attempt (S3: the files stay where they were staged).
  if ((await checkNotOverlooked(env, layout, job, task, taskAttempt)) === 'carried') return result('committed', files.list.length, files.bytes);
  let removedMeanwhile: StoreError | null = null;
  try {
    const root = await promote(env, layout, job, attemptDir, task, files, before === null);
    await store.writeFile(layout.claimFile(app, task), encodeClaimWith({ ...claim, state: 'committed', root }, files));
    await settleAttemptUploads(store, layout, job, taskAttempt, files.uploads, env.concurrency, output?.pending);
  } catch (e) {
    // A recover or abort that ran meanwhile removes the app attempt's dirs: what it did is told below.
    if (!(e instanceof StoreError)) throw e;
    removedMeanwhile = e;
  }
  const unchanged = await checkKept(env, layout, job, task, taskAttempt);
  // Nothing moved the job on: the store failed this step, which a re-run finishes.
  if (removedMeanwhile && unchanged) throw removedMeanwhile;
  return result('committed', files.list.length, files.bytes);
}

/**
 * The attempt's decision (commit, unless an abort of it came first: §5.9), then its claim: the
 * first attempt to create it wins, the same attempt again finds its own. A re-run after a killed
 * commit-task takes the claim it made (`before`).
 */
async function decideAndClaim(
  env: StepEnv,
  layout: JobLayout,
  job: JobManifest,
  a: { task: string; attempt: number; taskAttempt: string },
  before: ClaimRecord | null,
  output: { files: ClaimFiles; versionDigest: string | null } | null,
): Promise<{ claim: ClaimHeader; files: ClaimFiles }> {
  const { store } = env;
  const app = job.appAttempt;
  const { task, taskAttempt } = a;
  const decision = await decide(store, layout, app, { taskAttempt, outcome: 'commit', atMs: env.now(), by: `${env.user}@${env.host} pid ${env.pid}` });
  if (decision.outcome === 'abort') throw abortedError(taskAttempt, decision);
  if (!output) {
    // A re-run after a killed commit: temps must not move into the committed dir with the rest.
    await eachAttemptFile(store, layout.attemptDir(app, taskAttempt), { removeTemps: true }, () => {});
    return { claim: headerOf(before!), files: claimFilesOfRecord(before!) };
  }
  const fresh: ClaimHeader = { ...a, appAttempt: app, state: 'claimed', claimedAtMs: env.now(), host: env.host, pid: env.pid, versionDigest: output.versionDigest };
  if (await store.createExclusive(layout.claimFile(app, task), encodeClaimWith(fresh, output.files))) return { claim: fresh, files: output.files };
  const standing = await readClaimRecord(store, layout, { jobId: job.jobId, task, appAttempt: app });
  if (!standing) throw new ConflictError(`the claim of task ${task} vanished while ${taskAttempt} claimed it (recover ran meanwhile?): run commit-task again`);
  if (standing.taskAttempt !== taskAttempt) throw denied(standing, taskAttempt);
  return { claim: headerOf(standing), files: claimFilesOfRecord(standing) };
}

function headerOf(record: ClaimRecord): ClaimHeader {
  const { fileCount, bytes, eachFile, ...header } = record;
  return header;
}

/**
 * The attempt's output as its claim lists it: the files of its dir and its pending uploads, every
 * path checked. The walk streams into an AttemptFileList, so no object per file is kept. A killed
 * `stage` left its temp files here: they are not listed, and go before the dir moves.
 */
async function attemptOutput(env: StepEnv, layout: JobLayout, job: JobManifest, task: string, taskAttempt: string): Promise<{ files: ClaimFiles; pending: AttemptUploads; versionDigest: string | null }> {
  const { store } = env;
  const attemptDir = layout.attemptDir(job.appAttempt, taskAttempt);
  const found = new AttemptFileList();
  const versions = new VersionDigest();
  const others: Entry[] = [];
  const markers: Entry[] = [];
  const replaced: string[] = [];
  const walked = eachAttemptFile(store, attemptDir, { details: true, removeTemps: true, others }, (e) => {
    if (isWriterMarker(posix.basename(e.name))) markers.push(e);
    else {
      if (e.name.includes('\uFFFD')) replaced.push(e.name);
      found.add(e.name, e.size);
      versions.add(e.name, e.version);
    }
  });
  // The dir itself, read alongside: a writer that wrote its output at the path --print-path gave
  // left a file there, which the walk does not see (S3: a key beside the attempt's prefix).
  const [, uploads, dir] = await Promise.all([walked, readAttemptUploads(store, layout, job, taskAttempt, env.concurrency), store.stat(attemptDir)]);
  if (dir !== null && dir.kind !== 'dir') {
    throw new UsageError(`${taskAttempt}'s dir ${store.toUri(attemptDir)} is a file: the writer wrote its output at the path --print-path gave, not under it; move it under that path (e.g. ${store.toUri(attemptDir)}/part-00000) and run commit-task again (nothing was committed)`);
  }
  await checkNamesRoundTrip(store, attemptDir, replaced, taskAttempt);
  if (others.length) {
    const what = others[0]!.kind === 'symlink' ? 'a symbolic link' : "a pipe, socket or device; on S3, a key ending in '/' that holds bytes";
    throw new UsageError(`${taskAttempt} holds '${others[0]!.name}', which is not a regular file (${what}): a task's output is files only; remove it and run commit-task again (nothing was committed)`);
  }
  await dropWriterMarkers(env, markers);
  checkStagedOnce(uploads, (path) => found.has(path), taskAttempt);
  if (found.length + uploads.files.length === 0 && dir === null) throw await notStaged(store, layout, job, task, taskAttempt);
  const prefix = staticPrefix(job);
  return { files: found.encode(uploads.files, (path) => checkTaskFile(job, path, prefix)), pending: uploads, versionDigest: versions.value() };
}

/**
 * A local name (a file's or a directory's) that is not valid UTF-8 reads back with U+FFFD in it:
 * a name no file has, or one a second file has too. Refused here, not at commit-job. (A name
 * that truly holds U+FFFD is found again, once.)
 */
async function checkNamesRoundTrip(store: StepEnv['store'], attemptDir: string, names: readonly string[], taskAttempt: string): Promise<void> {
  const seen = new Set<string>();
  const twice = names.find((n) => (seen.has(n) ? true : (seen.add(n), false)));
  const missing = twice ?? (await mapLimit(names, 8, async (n) => ((await store.stat(posix.join(attemptDir, n))) === null ? n : null))).find((n) => n !== null);
  if (missing) throw new UsageError(`${taskAttempt} holds a name that is not valid UTF-8 (read as '${missing}'): rename it in UTF-8 and run commit-task again (nothing was committed)`);
}

/** Why an attempt has no dir: aborted (its decision says so), or never staged in this app attempt. */
async function notStaged(store: StepEnv['store'], layout: JobLayout, job: JobManifest, task: string, taskAttempt: string): Promise<Error> {
  const app = job.appAttempt;
  const aborted = await readDecision(store, layout, app, taskAttempt);
  if (aborted?.outcome === 'abort') return abortedError(taskAttempt, aborted);
  const older = await olderOutput(store, layout, job.jobId, task, app);
  const where = older ? `; its files are in ${store.toUri(older)}, left from an earlier app attempt: stage them again` : '; stage its files, or --print-path for a writer, first';
  return new UsageError(`${taskAttempt} was never staged in app attempt ${app}${app > 0 ? ' (recover started it)' : ''}: nothing was committed${where}`);
}

/** A v2 task refused by a clash before its claim: the clash may be its own winning attempt's output, or it was aborted. */
async function refusedV2(env: StepEnv, layout: JobLayout, job: JobManifest, taskAttempt: string, ctx: { jobId: string; task: string; appAttempt: number }, e: unknown): Promise<never> {
  if (!(e instanceof ConflictError)) throw e;
  const [claim, decision] = await Promise.all([readClaimRecord(env.store, layout, ctx), readDecision(env.store, layout, job.appAttempt, taskAttempt)]);
  if (claim && claim.taskAttempt !== taskAttempt) throw denied(claim, taskAttempt);
  if (decision?.outcome === 'abort') throw abortedError(taskAttempt, decision);
  throw e;
}

/**
 * Moves the attempt's output where commit-job expects it; returns its staging-relative root. A v2
 * task that this run claimed (`fresh`), met by a clash with nothing of it published, lets its
 * claim go: free for another attempt.
 */
async function promote(env: StepEnv, layout: JobLayout, job: JobManifest, attemptDir: string, task: string, files: ClaimFiles, fresh: boolean): Promise<string> {
  const { store } = env;
  if (job.algorithm === 'v2') {
    const clash = await publishClaimedV2(env, layout, job, attemptDir, taskFilesOf(files), fresh);
    if (clash) {
      await store.delete(layout.claimFile(job.appAttempt, task), false);
      throw clash;
    }
    return '';
  }
  const root = await promoteOutput(store, attemptDir, layout.committedTaskDir(job.appAttempt, task), files.list.length > 0);
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
