// The output of a task attempt as commit-task claims it: the files of its dir and its pending
// uploads, every path and name checked, the writer's own markers left out.

import { posix } from 'node:path';
import { CommitDeniedError, UsageError } from '../errors.js';
import { AttemptFileList, VersionDigest, type ClaimFiles } from '../job/claim-files.js';
import { readDecision } from '../job/decisions.js';
import { staticPrefix, type JobManifest } from '../job/job.js';
import { SUCCESS_FILE, taskOfAttempt, type JobLayout } from '../job/layout.js';
import { checkStagedOnce, readAttemptUploads, type AttemptUploads } from '../job/pending-uploads.js';
import { attemptFiles, eachAttemptFile } from '../job/tasks.js';
import { checkRelativePath, partitionOfFile } from '../paths.js';
import { removeEmptyDirs } from '../store/operations.js';
import type { Entry } from '../store/types.js';
import { mapLimit } from '../util/pool.js';
import { attemptDirOf, type AttemptContext } from './attempt-context.js';
import type { StepEnv } from './env.js';

/**
 * A task file's path, as commit-task checks it before the claim; `prefix` is the job's
 * staticPrefix. `pathsChecked`: the path was read from a claim, which checked it already (protocol.md §5.11).
 */
export function checkTaskFile(job: JobManifest, path: string, prefix: string, pathsChecked = false): void {
  if (!pathsChecked) checkRelativePath(path, 'task file');
  if (path === SUCCESS_FILE || path.startsWith(`${SUCCESS_FILE}/`))
    throw new UsageError({ reason: 'task-file-success-name', path, successFile: SUCCESS_FILE });
  partitionOfFile(path, job.partitionBy, prefix);
}

/**
 * What an engine writing into the attempt dir leaves for itself, not data: Hadoop's and Spark's
 * `_SUCCESS`, Databricks' `_started_<id>` / `_committed_<id>`, and their checksum files
 * (`._SUCCESS.crc`), at any depth.
 */
export function isWriterMarker(name: string): boolean {
  return (
    /^\.?(_SUCCESS|_started_[^/]+|_committed_[^/]+)(\.crc)?$/.test(name) &&
    name.startsWith('.') === name.endsWith('.crc')
  );
}

/**
 * Removes the writer's markers from the attempt dir, so no rename carries them along, and the
 * dirs that held nothing else (a partition whose only file was a writer's `_SUCCESS` would
 * otherwise appear in the target empty). A dir a file landed in meanwhile is not empty: it stays.
 */
async function dropWriterMarkers(env: StepEnv, attemptDir: string, markers: readonly Entry[]): Promise<void> {
  if (markers.length === 0) return;
  const { store } = env;
  await Promise.all(markers.map((m) => store.delete(m.path, false)));
  await removeEmptyDirs(
    store,
    markers.map((m) => posix.dirname(m.path)),
    attemptDir,
    true,
  );
  const names = markers.map((m) => m.name).sort();
  env.emit({
    type: 'phase',
    label: `left out ${names.length} marker file(s) the writer made, not data: ${names.slice(0, 10).join(', ')}${names.length > 10 ? ', …' : ''}`,
  });
}

export function abortedError(taskAttempt: string, decision: { atMs: number; by: string }): CommitDeniedError {
  return new CommitDeniedError({
    reason: 'attempt-aborted',
    taskAttempt,
    at: new Date(decision.atMs).toISOString(),
    by: decision.by,
  });
}

/** What one walk of an attempt dir found, read alongside the dir itself and its pending uploads. */
interface AttemptListing {
  readonly found: AttemptFileList;
  readonly versions: VersionDigest;
  /** Entries that are not regular files (a symbolic link, a pipe; on S3 a dir key holding bytes). */
  readonly others: Entry[];
  /** The writer's own markers, not data. */
  readonly markers: Entry[];
  /** Names read back with U+FFFD: maybe not valid UTF-8. */
  readonly replaced: string[];
  readonly uploads: AttemptUploads;
  readonly dir: Entry | null;
  readonly success: Entry | null;
}

/**
 * The attempt's output as its claim lists it: the files of its dir and its pending uploads, every
 * path checked. The walk streams into an AttemptFileList, so no object per file is kept. A killed
 * `stage` left its temp files here: they are not listed, and go before the dir moves.
 */
export async function attemptOutput(
  a: AttemptContext,
  removeTemps = true,
): Promise<{ files: ClaimFiles; pending: AttemptUploads; versionDigest: string | null }> {
  const { env, job, taskAttempt } = a;
  const attemptDir = attemptDirOf(a);
  const listing = await listAttempt(a, removeTemps);
  const { found, uploads } = listing;
  await checkOnlyFiles(a, listing);
  await dropWriterMarkers(env, attemptDir, listing.markers);
  checkStagedOnce(uploads, (path) => found.has(path), taskAttempt);
  if (found.length + uploads.files.length === 0 && listing.dir === null) throw await notStaged(a);
  const prefix = staticPrefix(job);
  return {
    files: found.encode(uploads.files, (path) => checkTaskFile(job, path, prefix)),
    pending: uploads,
    versionDigest: listing.versions.value(),
  };
}

/** One walk of the attempt dir, its files sorted from the writer's markers and what is not a file. */
async function listAttempt(a: AttemptContext, removeTemps: boolean): Promise<AttemptListing> {
  const { store } = a.env;
  const attemptDir = attemptDirOf(a);
  const found = new AttemptFileList();
  const versions = new VersionDigest();
  const others: Entry[] = [];
  const markers: Entry[] = [];
  const replaced: string[] = [];
  const walked = eachAttemptFile(store, attemptDir, { details: true, removeTemps, others }, (e) => {
    if (isWriterMarker(posix.basename(e.name))) markers.push(e);
    else {
      if (e.name.includes('\uFFFD')) replaced.push(e.name);
      found.add(e.name, e.size);
      versions.add(e.name, e.version);
    }
  });
  // The dir itself, read alongside: a writer that wrote its output at the path --print-path gave
  // left a file there, which the walk does not see (S3: a key beside the attempt's prefix).
  // And `_SUCCESS` at its top: a directory there, empty or holding only markers, no file check
  // meets, and moved into the target it would stop the job's own marker past the commit point.
  const [, uploads, dir, success] = await Promise.all([
    walked,
    readAttemptUploads(store, a, a.env.concurrency),
    store.stat(attemptDir),
    store.stat(posix.join(attemptDir, SUCCESS_FILE)),
  ]);
  return { found, versions, others, markers, replaced, uploads, dir, success };
}

/** A task's output is regular files under its attempt dir, with names that read back as written. */
async function checkOnlyFiles(a: AttemptContext, listing: AttemptListing): Promise<void> {
  const { taskAttempt } = a;
  const { store } = a.env;
  const attemptDir = attemptDirOf(a);
  const { dir, success, others } = listing;
  if (success?.kind === 'dir') {
    throw new UsageError({ reason: 'attempt-success-dir', taskAttempt, successFile: SUCCESS_FILE });
  }
  if (dir !== null && dir.kind !== 'dir') {
    throw new UsageError({ reason: 'attempt-dir-is-file', taskAttempt, dir: store.toUri(attemptDir) });
  }
  await checkNamesRoundTrip(store, attemptDir, listing.replaced, taskAttempt);
  if (others.length) {
    throw new UsageError({
      reason: 'attempt-not-regular-file',
      taskAttempt,
      name: others[0]!.name,
      symlink: others[0]!.kind === 'symlink',
    });
  }
}

/**
 * A local name (a file's or a directory's) that is not valid UTF-8 reads back with U+FFFD in it:
 * a name no file has, or one a second file has too. Refused here, not at commit-job. (A name
 * that truly holds U+FFFD is found again, once.)
 */
async function checkNamesRoundTrip(
  store: StepEnv['store'],
  attemptDir: string,
  names: readonly string[],
  taskAttempt: string,
): Promise<void> {
  const seen = new Set<string>();
  const twice = names.find((n) => (seen.has(n) ? true : (seen.add(n), false)));
  const missing =
    twice ??
    (await mapLimit(names, 8, async (n) => ((await store.stat(posix.join(attemptDir, n))) === null ? n : null))).find(
      (n) => n !== null,
    );
  if (missing) throw new UsageError({ reason: 'attempt-name-not-utf8', taskAttempt, name: missing });
}

/** Why an attempt has no dir: aborted (its decision says so), or never staged in this app attempt. */
async function notStaged({ env, layout, job, task, taskAttempt }: AttemptContext): Promise<Error> {
  const { store } = env;
  const app = job.appAttempt;
  const aborted = await readDecision(store, layout, app, taskAttempt, job);
  if (aborted?.outcome === 'abort') return abortedError(taskAttempt, aborted);
  const older = await olderOutput(store, layout, job.jobId, task, app);
  return new UsageError({
    reason: 'attempt-not-staged',
    taskAttempt,
    appAttempt: app,
    olderOutput: older ? store.toUri(older) : null,
  });
}

/**
 * The newest attempt dir of the task, from an app attempt before `app`, that holds files (a writer recover left
 * behind).
 */
async function olderOutput(
  store: StepEnv['store'],
  layout: JobLayout,
  jobId: string,
  task: string,
  app: number,
): Promise<string | null> {
  for (let a = app - 1; a >= 0; a--) {
    const dirs = (await store.list(layout.attemptsDir(a))).filter((e) => taskOfAttempt(jobId, e.name) === task);
    for (const d of dirs) if ((await attemptFiles(store, d.path)).length > 0) return d.path;
  }
  return null;
}
