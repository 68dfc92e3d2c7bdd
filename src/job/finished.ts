// What a handle that names no job can still tell: whether that job committed. A committed job
// leaves no staging dir, but in the default layout (`<parent>/.stagecommit/<table>/<jobId>`) the
// handle leads to the table's `_SUCCESS` and to the table log beside the staging dirs; either
// one naming the job, as committed, is the proof that makes a rerun of `commit-job` a success.
// (protocol.md §8: a rerun whose work is done exits 0.)

import { posix } from 'node:path';
import { CorruptManifestError } from '../errors.js';
import { mapLimit } from '../util/pool.js';
import { ADOPTED_DIR, OUTPUT_DIR, PROGRESS_FILE, SUCCESS_FILE, targetOfDefaultStaging, TRASH_DIR } from './layout.js';
import { UPLOADS_DIR } from './pending-uploads.js';
import { isOwnEntry, TableLog, type LogEntry, type LogListing } from './table-log.js';
import type { Entry, Store } from '../store/types.js';
import type { PlanRef } from './plan-names.js';

export interface FinishedJob {
  readonly jobId: string;
  /** The target's URI. */
  readonly target: string;
  /** The target's `_SUCCESS` URI (it may have been rewritten by a later job since). */
  readonly success: string;
  readonly committedAtMs: number;
  readonly committedAt: string;
  /** From `_SUCCESS` when it is still this job's; 0 and [] when only the table log remembers. */
  readonly files: number;
  readonly bytes: number;
  readonly partitionsWritten: readonly string[];
  readonly partitionsReplaced: readonly string[];
  /** Which record proved it. */
  readonly evidence: '_SUCCESS' | 'table-log';
}

/** A committed job's parameters, as its `_SUCCESS` records them. */
export interface RecordedParams {
  readonly mode?: string;
  readonly algorithm?: string;
  readonly partitionBy?: readonly string[];
  /** Static partition values, `col=value`. */
  readonly partition?: readonly string[];
  /** Declared tasks; null: none declared. */
  readonly tasks?: number | null;
}

/**
 * The parameters a committed job's `_SUCCESS` records (`diagnostics`), while it is still that job's;
 * each absent where it does not (a `_SUCCESS` written before it recorded them, or a later job's).
 */
export async function recordedParams(store: Store, targetPath: string, jobId: string): Promise<RecordedParams> {
  const s = await fromSuccess(store, posix.join(targetPath, SUCCESS_FILE), jobId);
  return recordedOf(s?.diagnostics);
}

function recordedOf(d: Record<string, unknown> | undefined): RecordedParams {
  if (!d || typeof d !== 'object') return {};
  const text = (k: string) => (typeof d[k] === 'string' ? (d[k] as string) : undefined);
  const list = (k: string) => {
    const v = text(k);
    return v === undefined ? undefined : v.split(',').filter((x) => x !== '');
  };
  const tasks = text('tasks');
  return {
    ...(text('mode') !== undefined ? { mode: text('mode') } : {}),
    ...(text('algorithm') !== undefined ? { algorithm: text('algorithm') } : {}),
    ...(list('partitionBy') !== undefined ? { partitionBy: list('partitionBy') } : {}),
    ...(list('partition') !== undefined ? { partition: list('partition') } : {}),
    ...(tasks !== undefined && /^\d*$/.test(tasks) ? { tasks: tasks === '' ? null : Number(tasks) } : {}),
  };
}

/** How far back the log is searched for the job: the log keeps about this many entries. */
const LOG_LOOKBACK = 1000;

interface SuccessDoc {
  jobId?: unknown;
  timestamp?: unknown;
  metrics?: { files?: unknown; bytes?: unknown };
  partitionsWritten?: unknown;
  partitionsReplaced?: unknown;
  diagnostics?: Record<string, unknown>;
}

async function fromSuccess(store: Store, successPath: string, jobId: string): Promise<SuccessDoc | null> {
  const data = await store.readFile(successPath).catch(() => null);
  if (!data) return null;
  try {
    const s = JSON.parse(data.toString('utf8')) as SuccessDoc;
    return s.jobId === jobId ? s : null;
  } catch {
    return null; // another writer's marker: not ours to judge
  }
}

/**
 * The time the table log says the job at this staging dir committed, or null. `listing`: the log's, when listed
 * already.
 */
async function fromLog(
  store: Store,
  job: { readonly targetPath: string; readonly stagingPath: string; readonly jobId: string },
  concurrency: number,
  listing?: Promise<LogListing | null>,
): Promise<number | null> {
  const { targetPath, stagingPath, jobId } = job;
  const log = new TableLog(store, targetPath);
  const listed = await (listing ?? log.list().catch(() => null));
  if (!listed) return null;
  const recent = listed.numbers
    .filter((n) => listed.done.has(n))
    .slice(-LOG_LOOKBACK)
    .reverse();
  for (let i = 0; i < recent.length; i += concurrency) {
    const entries = await log.readMany(recent.slice(i, i + concurrency), concurrency).catch(() => []);
    const own = entries.find((e) => e.jobId === jobId && e.staging === stagingPath);
    if (own) return (await log.readDone(own.number, own.jobId).catch(() => null)) === 'committed' ? own.atMs : null;
  }
  return null;
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** The committed job a finished handle names, or null when nothing the handle leads to says so. */
export async function findCommitted(
  store: Store,
  stagingPath: string,
  concurrency = 16,
  listing?: Promise<LogListing | null>,
): Promise<FinishedJob | null> {
  const where = targetOfDefaultStaging(stagingPath);
  if (where === null) return null;
  const { targetPath, jobId } = where;
  const successPath = posix.join(targetPath, SUCCESS_FILE);
  const base = { jobId, target: store.toUri(targetPath), success: store.toUri(successPath) };
  const s = await fromSuccess(store, successPath, jobId);
  if (s) {
    const at = count(s.timestamp);
    return {
      ...base,
      committedAtMs: at,
      committedAt: new Date(at).toISOString(),
      files: count(s.metrics?.files),
      bytes: count(s.metrics?.bytes),
      partitionsWritten: strings(s.partitionsWritten),
      partitionsReplaced: strings(s.partitionsReplaced),
      evidence: '_SUCCESS',
    };
  }
  const at = await fromLog(store, { targetPath, stagingPath, jobId }, concurrency, listing);
  return at === null ? null : loggedCommit(base, at);
}

/** A commit the table log alone proves: when it was, and nothing of what it wrote. */
function loggedCommit(base: Pick<FinishedJob, 'jobId' | 'target' | 'success'>, at: number): FinishedJob {
  return {
    ...base,
    committedAtMs: at,
    committedAt: new Date(at).toISOString(),
    files: 0,
    bytes: 0,
    partitionsWritten: [],
    partitionsReplaced: [],
    evidence: 'table-log',
  };
}

/**
 * The committed job the table log records for this job id and staging dir, in any staging layout
 * (a finished job's handle outside the default layout leads to no table): only the log knows it.
 */
export async function committedViaLog(
  store: Store,
  targetPath: string,
  stagingPath: string,
  jobId: string,
  concurrency = 16,
): Promise<FinishedJob | null> {
  const at = await fromLog(store, { targetPath, stagingPath, jobId }, concurrency);
  if (at === null) return null;
  const target = store.toUri(targetPath);
  return loggedCommit({ jobId, target, success: store.toUri(posix.join(targetPath, SUCCESS_FILE)) }, at);
}

/** What a handle without `_job.yaml` or a plan still tells (openJob weighs it in this order). */
export interface NoJobEvidence {
  readonly done: FinishedJob | null;
  readonly held: LogEntry | null;
  /** An unfinished table-log entry that cannot be read: it may be the job's. */
  readonly unreadable: Error | null;
  readonly left: string[];
}

/**
 * findCommitted, unfinishedEntryOf and jobFilesLeft at once, the table log listed once for both
 * that read it: the answer for a handle whose job ended (a rerun of a step, `status` of an aborted
 * job) takes the longest of them, not their sum. A failed read counts as "nothing found" in each,
 * as it does alone, but for an unfinished entry that cannot be read (`unreadable`).
 */
export async function noJobEvidence(store: Store, stagingPath: string, concurrency = 16): Promise<NoJobEvidence> {
  const where = targetOfDefaultStaging(stagingPath);
  const listing = where ? new TableLog(store, where.targetPath).list().catch(() => null) : Promise.resolve(null);
  const [done, open, left] = await Promise.all([
    findCommitted(store, stagingPath, concurrency, listing),
    unfinishedEntryOf(store, stagingPath, concurrency, listing),
    jobFilesLeft(store, stagingPath),
  ]);
  return { done, held: open.entry, unreadable: open.unreadable, left };
}

/**
 * The unfinished table-log entry of the job a handle without `_job.yaml` names (default staging
 * layout only, where the table is): a job that lost its manifest (a plan in it too) while it held
 * the log, or null. Read only where nothing else names the job. Each entry is read on its own: one
 * that cannot be read hides no other, and is `unreadable` (it may be this job's).
 */
export async function unfinishedEntryOf(
  store: Store,
  stagingPath: string,
  concurrency = 16,
  listed?: Promise<LogListing | null>,
): Promise<{ entry: LogEntry | null; unreadable: Error | null }> {
  const where = targetOfDefaultStaging(stagingPath);
  if (!where) return { entry: null, unreadable: null };
  const log = new TableLog(store, where.targetPath);
  const listing = await (listed ?? log.list().catch(() => null));
  if (!listing) return { entry: null, unreadable: null };
  const open = listing.numbers.filter((n) => !listing.done.has(n)).slice(-LOG_LOOKBACK);
  // Each read is its entry or its damage; any other failure (an entry gone meanwhile) is neither.
  const read = await mapLimit(open, concurrency, (n) =>
    log.read(n).then(
      (entry) => ({ entry, damaged: null }),
      (e: unknown) => ({ entry: null, damaged: e instanceof CorruptManifestError ? e : null }),
    ),
  );
  const own = read.find((r) => r.entry !== null && isOwnEntry(r.entry, { jobId: where.jobId, staging: stagingPath }));
  return { entry: own?.entry ?? null, unreadable: read.find((r) => r.damaged !== null)?.damaged ?? null };
}

/**
 * Whether the plans found without their `_job.yaml` are all garbage: each names a table-log entry
 * that does not name it back (protocol.md §4.1), so none was ever applied; writes a store held that
 * landed after the job ended. Known in the default staging layout only, where the table is; a plan
 * that names no entry, or whose entry cannot be read, is not judged.
 */
export async function plansUndecided(store: Store, stagingPath: string, plans: readonly PlanRef[]): Promise<boolean> {
  const where = targetOfDefaultStaging(stagingPath);
  if (!where) return false;
  const log = new TableLog(store, where.targetPath);
  const owner = { jobId: where.jobId, staging: stagingPath };
  for (const p of plans) {
    if (p.appAttempt === null) continue;
    if (p.entry === null) return false;
    const named = await log.entryNaming(p.entry, owner, p.name).catch(() => null);
    if (!named || named.names) return false;
  }
  return true;
}

/**
 * What of a stagecommit job a dir without `_job.yaml` still holds: its claims or decisions (under
 * `_temporary/<app>/`, where Hadoop never writes those names), what only a commit past its commit
 * point makes (`_commit.progress`, `_trash`, `_output`), its upload records or an adopted leftover.
 * A job that ended leaves none of these (its clean-up removes `_job.yaml` last), so they mean the
 * manifest was lost, or a step killed after its job ended left them. Empty: nothing of a job.
 * `entries`: the dir's listing, when made already.
 */
export async function jobFilesLeft(store: Store, dir: string, entries?: readonly Entry[]): Promise<string[]> {
  const top = entries ?? (await store.list(dir).catch(() => []));
  const marks = top.filter((e) => JOB_MARKS.has(e.name)).map((e) => e.name);
  if (top.some((e) => e.name === '_temporary' && e.kind === 'dir')) {
    const apps = (await store.list(posix.join(dir, '_temporary')).catch(() => []))
      .filter((e) => e.kind === 'dir' && /^\d+$/.test(e.name))
      .slice(0, 4);
    // The app attempts are listed at once, not one after another.
    const insides = await Promise.all(apps.map((app) => store.list(app.path).catch(() => [])));
    apps.forEach((app, i) =>
      marks.push(
        ...insides[i]!.filter((e) => e.name === '_claims' || e.name === '_decisions').map(
          (e) => `_temporary/${app.name}/${e.name}`,
        ),
      ),
    );
  }
  return marks.sort();
}

/** The records of task steps a handle holds, and the dirs they are in (deepest last). */
export interface TaskDebris {
  readonly files: readonly string[];
  readonly dirs: readonly string[];
}

/**
 * A dir without `_job.yaml` that holds task steps' records alone (claims and decisions under
 * `_temporary/<app>/`, lease files beside them) and nothing else of a job: no task output, plan,
 * progress, upload record or adopted leftover. A commit-task or abort --task whose job ended while
 * it ran, killed before it took back what its creates made again, leaves that (protocol.md §5.12);
 * no data is in it. `committed`: the job is known committed, and a progress record beside them is
 * a late write of its stopped driver (protocol.md §5.15). Null when the dir holds anything else.
 */
export async function taskDebrisOnly(store: Store, dir: string, committed = false): Promise<TaskDebris | null> {
  const files: string[] = [];
  const dirs: string[] = [];
  const top = await store.list(dir).catch(() => null);
  // A committed job's progress record, or its `_trash`/`_output` dir made again (empty), written by a
  // driver stopped past its lease, may land after the clean-up.
  const late = (e: Entry) => committed && e.name === PROGRESS_FILE && e.kind === 'file';
  const lateDir = (e: Entry) => committed && (e.name === TRASH_DIR || e.name === OUTPUT_DIR) && e.kind === 'dir';
  const fits = (e: Entry) =>
    (e.name === '_temporary' && e.kind === 'dir') || /^_lease\.\d+\.yaml$/.test(e.name) || late(e) || lateDir(e);
  if (!top?.every(fits)) return null;
  for (const d of top.filter(lateDir)) {
    if ((await store.list(d.path)).length) return null;
    dirs.push(d.path);
  }
  files.push(...top.filter(late).map((e) => e.path));
  const tmp = top.find((e) => e.name === '_temporary');
  if (!tmp) return files.length || dirs.length ? { files, dirs } : null;
  dirs.push(tmp.path);
  for (const app of await store.list(tmp.path)) {
    if (app.kind !== 'dir' || !/^\d+$/.test(app.name)) return null;
    dirs.push(app.path);
    for (const e of await store.list(app.path)) {
      if (e.kind !== 'dir' || (e.name !== '_claims' && e.name !== '_decisions')) return null;
      dirs.push(e.path);
      for (const f of await store.list(e.path)) {
        if (f.kind !== 'file') return null;
        files.push(f.path);
      }
    }
  }
  return { files, dirs };
}

const JOB_MARKS = new Set([PROGRESS_FILE, TRASH_DIR, OUTPUT_DIR, UPLOADS_DIR, ADOPTED_DIR]);
