// Files staged as uploads left pending at their final paths (S3's zero-copy commit, the way of
// Hadoop S3A's magic committer): `stage` records each upload in the staging dir before sending its
// bytes, `commit-task` moves the records into its claim, `commit-job` completes them, and every
// step that ends a job or an attempt aborts the recorded uploads nobody will complete. Only
// uploads recorded here are ever aborted: another writer's uploads to the same keys are not ours.
// Keeps protocol.md §5.17 (only a job's own uploads are aborted).

import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { posix } from 'node:path';
import { BlockedError, CorruptManifestError } from '../errors.js';
import { decodeManifest, encodeManifest, Fields, itemNumber, itemString } from '../manifest/codec.js';
import { checkRelativePath } from '../paths.js';
import { deleteFiles } from '../store/operations.js';
import { abortUploads, keepsPendingUploads, pendingUploadsUnder, pendingUploadWrites } from '../store/uploads.js';
import type { PendingUploadWrites, Store } from '../store/types.js';
import { forEachLimit, mapLimit } from '../util/pool.js';
import { claimedUploads, type TaskFile } from './claims.js';
import type { JobManifest } from './job.js';
import type { JobLayout } from './layout.js';
import { manifestNames, readManifestFile } from './manifest-io.js';

/** `<staging>/_uploads/<appAttempt>/<taskAttempt>/<time>-<nonce>.yaml`: one record per `stage` run. */
export const UPLOADS_DIR = '_uploads';
const KIND = 'stagecommit/uploads';

interface RecordedUpload {
  /** Table-relative path: the upload is for the target's key there. */
  readonly path: string;
  readonly uploadId: string;
  /** Set once every part is sent ('ready'). */
  readonly size?: number;
  readonly etags?: readonly string[];
}

interface UploadRecord {
  /** Its store path. */
  readonly file: string;
  readonly state: 'begun' | 'ready';
  readonly uploads: readonly RecordedUpload[];
}

export type LocalSource = {
  readonly localPath: string;
  readonly name: string;
  /** Hears how many of the file's bytes have gone up. */
  readonly onBytes?: (sent: number) => void;
};

export function uploadsDir(layout: JobLayout, app?: number, taskAttempt?: string): string {
  const base = posix.join(layout.root, UPLOADS_DIR);
  return app === undefined
    ? base
    : taskAttempt === undefined
      ? posix.join(base, String(app))
      : posix.join(base, String(app), taskAttempt);
}

function encodeRecord(taskAttempt: string, state: UploadRecord['state'], uploads: readonly RecordedUpload[]): string {
  return encodeManifest({ kind: KIND, version: 1, taskAttempt, state }, { uploads: uploads.map((u) => ({ ...u })) });
}

function decodeRecord(text: string | Buffer, file: string, taskAttempt: string): UploadRecord {
  const f = new Fields(decodeManifest(text, file), file);
  f.kind(KIND, 1);
  if (f.string('taskAttempt') !== taskAttempt)
    throw CorruptManifestError.badField(file, 'taskAttempt', `is not '${taskAttempt}', the attempt whose dir holds it`);
  const state = f.oneOf('state', ['begun', 'ready'] as const);
  const uploads = f.array('uploads', (x) => {
    const path = checkRelativePath(itemString(x, 'path'), 'upload path');
    const uploadId = itemString(x, 'uploadId');
    if (uploadId === '') throw new Error("'uploadId' is empty");
    if (state === 'begun') return { path, uploadId };
    return { path, uploadId, size: itemNumber(x, 'size'), etags: checkEtags((x as Record<string, unknown>).etags) };
  });
  return { file, state, uploads };
}

function checkEtags(v: unknown): string[] {
  if (!Array.isArray(v) || v.length === 0 || v.some((e) => typeof e !== 'string' || e === ''))
    throw new Error("'etags' is not a list of the parts' ETags");
  return v as string[];
}

/** Whether `stage` sends a file as a pending upload: v1 jobs on stores that have them, large files. */
export function usesPendingUploads(store: Store, job: JobManifest): boolean {
  return job.algorithm === 'v1' && pendingUploadWrites(store) !== null;
}

/** What stageAsUploads sent: the names, the uploads (store paths) and the record naming them. */
export interface StagedUploads {
  readonly names: ReadonlySet<string>;
  readonly uploads: readonly { readonly path: string; readonly uploadId: string }[];
  readonly record: string | null;
}

/** The task attempt whose uploads these are, in its job's staging dir. */
export interface UploadsOf {
  readonly layout: JobLayout;
  readonly job: JobManifest;
  readonly taskAttempt: string;
}

/**
 * Stages the large local files as pending uploads to their final keys; returns the names it
 * staged (the rest go into the attempt dir as before), with the uploads and their record. The
 * record is written before any byte is sent, so a kill after it leaves uploads that the job's
 * abort or recover knows to abort.
 */
export async function stageAsUploads(
  store: Store,
  of: UploadsOf,
  part: string,
  files: readonly LocalSource[],
  run: { readonly concurrency: number; readonly nowMs: number },
): Promise<StagedUploads> {
  const { layout, job, taskAttempt } = of;
  const none: StagedUploads = { names: new Set(), uploads: [], record: null };
  const writes = pendingUploadWrites(store);
  if (!writes || job.algorithm !== 'v1') return none;
  const big = await largeFiles(writes, files, run.concurrency);
  if (big.length === 0) return none;
  const rel = (name: string) => (part ? `${part}/${name}` : name);
  const sends: UploadSends = {
    store,
    writes,
    taskAttempt,
    concurrency: run.concurrency,
    files: big.map((f) => ({ ...f, path: rel(f.name), key: posix.join(job.targetPath, rel(f.name)) })),
    record: posix.join(
      uploadsDir(layout, job.appAttempt, taskAttempt),
      `${String(run.nowMs).padStart(15, '0')}-${randomUUID().slice(0, 8)}.yaml`,
    ),
  };
  const ids = await beginUploads(sends);
  const etags = await mapLimit(sends.files, run.concurrency, (f, i) =>
    writes.uploadParts(f.key, ids[i]!, f.localPath, f.size, f.onBytes),
  );
  await store.writeFile(
    sends.record,
    encodeRecord(
      taskAttempt,
      'ready',
      sends.files.map((f, i) => ({ path: f.path, uploadId: ids[i]!, size: f.size, etags: etags[i]! })),
    ),
  );
  return {
    names: new Set(big.map((f) => f.name)),
    uploads: sends.files.map((f, i) => ({ path: f.key, uploadId: ids[i]! })),
    record: sends.record,
  };
}

/** The uploads one stageAsUploads sends: its files with their table paths and keys, and their record. */
interface UploadSends {
  readonly store: Store;
  readonly writes: PendingUploadWrites;
  readonly taskAttempt: string;
  readonly concurrency: number;
  readonly files: readonly (LocalSource & { size: number; path: string; key: string })[];
  readonly record: string;
}

/**
 * Begins an upload per file and writes the record naming them all, before any byte is sent;
 * returns the upload ids. On failure the uploads begun go at once (as far as the store lets):
 * no record names them, so no later step could find them.
 */
async function beginUploads(s: UploadSends): Promise<string[]> {
  const ids: string[] = new Array(s.files.length);
  try {
    await forEachLimit(s.files, s.concurrency, async (f, i) => void (ids[i] = await s.writes.beginUpload(f.key)));
    await s.store.writeFile(
      s.record,
      encodeRecord(
        s.taskAttempt,
        'begun',
        s.files.map((f, i) => ({ path: f.path, uploadId: ids[i]! })),
      ),
    );
  } catch (e) {
    const begun = s.files.flatMap((f, i) => (ids[i] ? [{ path: f.key, uploadId: ids[i] }] : []));
    await abortUploads(s.store, begun, s.concurrency).catch(() => undefined);
    throw e;
  }
  return ids;
}

/** The local files large enough to go as pending uploads, with their sizes. */
async function largeFiles(
  writes: PendingUploadWrites,
  files: readonly LocalSource[],
  concurrency: number,
): Promise<(LocalSource & { size: number })[]> {
  const sizes = await mapLimit(files, concurrency, async (f) => (await stat(f.localPath)).size);
  return files
    .map((f, i) => ({ ...f, size: sizes[i]! }))
    .filter((f) => f.size > 0 && f.size >= writes.pendingUploadMinBytes);
}

async function readRecords(
  store: Store,
  dir: string,
  taskAttempt: string,
  concurrency: number,
): Promise<UploadRecord[]> {
  const names = (await manifestNames(store, dir)).sort();
  const read = await mapLimit(names, concurrency, async (n) => {
    const path = posix.join(dir, n);
    const r = await readManifestFile(store, path, (text, file) => decodeRecord(text, file, taskAttempt));
    return r && { ...r, file: path };
  });
  return read.filter((r): r is UploadRecord => r !== null);
}

export interface AttemptUploads {
  /** The task's files that are pending uploads: the latest ready upload of each path. */
  readonly files: readonly TaskFile[];
  /** Uploads that will never be completed: of a `stage` killed mid-way, or staged again since. */
  readonly stale: readonly { path: string; uploadId: string }[];
  readonly recordFiles: readonly string[];
}

export async function readAttemptUploads(store: Store, of: UploadsOf, concurrency: number): Promise<AttemptUploads> {
  const { layout, job, taskAttempt } = of;
  if (!usesPendingUploads(store, job)) return { files: [], stale: [], recordFiles: [] };
  const dir = uploadsDir(layout, job.appAttempt, taskAttempt);
  const records = await readRecords(store, dir, taskAttempt, concurrency);
  const latest = new Map<string, RecordedUpload>();
  const stale: { path: string; uploadId: string }[] = [];
  for (const r of records) {
    for (const u of r.uploads) {
      const before = latest.get(u.path);
      if (r.state !== 'ready') stale.push(u);
      else if (before) stale.push(before);
      if (r.state === 'ready') latest.set(u.path, u);
    }
  }
  const files = [...latest.values()].map((u) => ({
    path: u.path,
    size: u.size!,
    upload: { id: u.uploadId, etags: u.etags! },
  }));
  return {
    files,
    stale: stale.map((u) => ({ path: posix.join(job.targetPath, u.path), uploadId: u.uploadId })),
    recordFiles: records.map((r) => r.file),
  };
}

/** A path staged both as a file in the attempt dir and as a pending upload is an error. */
export function checkStagedOnce(
  uploads: AttemptUploads,
  inAttemptDir: (path: string) => boolean,
  taskAttempt: string,
): void {
  const both = uploads.files.find((f) => inAttemptDir(f.path));
  if (both) throw new BlockedError({ reason: 'staged-twice', taskAttempt, path: both.path });
}

/**
 * Once the claim holds the attempt's uploads (or it will never commit: none kept), abort the rest and drop the records.
 */
export async function settleAttemptUploads(
  store: Store,
  of: UploadsOf,
  claimed: readonly TaskFile[],
  concurrency: number,
  known?: AttemptUploads,
): Promise<void> {
  const { job } = of;
  if (!usesPendingUploads(store, job)) return;
  const mine = known ?? (await readAttemptUploads(store, of, concurrency));
  const keep = new Set(claimed.filter((f) => f.upload).map((f) => f.upload!.id));
  const all = [
    ...mine.stale,
    ...mine.files.map((f) => ({ path: posix.join(job.targetPath, f.path), uploadId: f.upload!.id })),
  ];
  await abortUploads(
    store,
    all.filter((u) => !keep.has(u.uploadId)),
    concurrency,
  );
  await deleteFiles(store, mine.recordFiles, concurrency);
}

interface RecordedUploads {
  /** The app attempts' record dirs. */
  readonly apps: readonly string[];
  readonly uploads: readonly { readonly path: string; readonly uploadId: string }[];
}

/** Every upload the job's `stage` calls recorded, app attempt by app attempt (`beforeApp`: only earlier ones). */
export async function recordedUploads(
  store: Store,
  layout: JobLayout,
  concurrency: number,
  beforeApp?: number,
): Promise<RecordedUploads> {
  const apps = (await store.list(uploadsDir(layout))).filter(
    (e) => e.kind === 'dir' && (beforeApp === undefined || Number(e.name) < beforeApp),
  );
  const uploads: { path: string; uploadId: string }[] = [];
  for (const app of apps) {
    for (const attempt of await store.list(app.path)) {
      if (attempt.kind !== 'dir') continue;
      for (const r of await readRecords(store, attempt.path, attempt.name, concurrency))
        for (const u of r.uploads) uploads.push(u);
    }
  }
  return { apps: apps.map((a) => a.path), uploads };
}

/**
 * Aborts every upload recorded in the staging dir (and the `extra` ones, from claims) except the
 * kept ones. With `beforeApp`, only the records of earlier app attempts count, and they go once
 * done with. Safe to run again: an upload that is gone is success. `recorded`: the records,
 * already being read (recordedUploads without `beforeApp`).
 */
export async function abortRecordedUploads(
  store: Store,
  layout: JobLayout,
  keep: ReadonlySet<string>,
  concurrency: number,
  opts: {
    /** The job's target: the records name paths relative to it. */
    targetPath: string;
    extra?: readonly TaskFile[] | Promise<readonly TaskFile[]>;
    beforeApp?: number;
    recorded?: Promise<RecordedUploads>;
  },
): Promise<number> {
  const { targetPath } = opts;
  if (!keepsPendingUploads(store)) return 0;
  // The extra files may still be being read: both reads go at once.
  const [{ apps, uploads }, extra] = await Promise.all([
    opts.recorded ?? recordedUploads(store, layout, concurrency, opts.beforeApp),
    opts.extra ?? [],
  ]);
  const doomed = uploads.map((u) => ({ path: posix.join(targetPath, u.path), uploadId: u.uploadId }));
  for (const f of extra) if (f.upload) doomed.push({ path: posix.join(targetPath, f.path), uploadId: f.upload.id });
  const go = doomed.filter((u) => !keep.has(u.uploadId));
  await abortUploads(store, go, concurrency);
  if (opts.beforeApp !== undefined) for (const app of apps) await store.delete(app, true);
  return go.length;
}

/**
 * Every upload a job owns: the ones its `stage` calls recorded (any app attempt) and the ones its
 * claims hold. clean-orphans leaves these to the job (abort or roll-forward), never to the age rule.
 */
export async function ownedUploadIds(
  store: Store,
  layout: JobLayout,
  job: JobManifest,
  concurrency: number,
): Promise<Set<string>> {
  const ids = new Set((await claimedUploads(store, layout, job, concurrency)).map((f) => f.upload!.id));
  for (const u of (await recordedUploads(store, layout, concurrency)).uploads) ids.add(u.uploadId);
  return ids;
}

/**
 * Before the commit point: every upload the claims name must still be pending (a lifecycle rule
 * or another tool may have aborted it), or the task's output is gone (protocol.md §5.9).
 */
export async function checkUploadsPending(
  store: Store,
  targetPath: string,
  files: readonly TaskFile[],
): Promise<string | null> {
  const ours = files.filter((f) => f.upload);
  if (ours.length === 0 || !keepsPendingUploads(store)) return null;
  const pending = new Set((await pendingUploadsUnder(store, targetPath)).map((u) => u.uploadId));
  const lost = ours.find((f) => !pending.has(f.upload!.id));
  return lost ? lost.path : null;
}
