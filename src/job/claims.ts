// Task coordination: per task, the commit claim (first attempt to create it wins; once committed,
// the record of the task's files). Created exclusively and checked on every read. (The decision
// per attempt is in decisions.ts.)
// Keeps protocol.md §5.9 (first claim wins), §5.11 (paths read back) and §5.14 (a job is its instance).

import { CorruptManifestError, StoreError } from '../errors.js';
import { encodeManifestBytes, decodeManifestLazy, Fields } from '../manifest/codec.js';
import { posix } from 'node:path';
import { checkRelativePath, checkTaskId, isDataName } from '../paths.js';
import type { Entry, Store } from '../store/types.js';
import { mapLimit } from '../util/pool.js';
import { ADOPTED_DIR, taskAttemptName, type JobLayout } from './layout.js';
import { checkOfInstance } from './instance.js';
import { readManifestFile } from './manifest-io.js';
import { claimFilesOf, fileOf, type ClaimFiles, type TaskFile } from './claim-files.js';

export type { TaskFile } from './claim-files.js';

/** A claim without its files. */
export interface ClaimHeader {
  readonly task: string;
  readonly attempt: number;
  readonly taskAttempt: string;
  readonly appAttempt: number;
  readonly state: 'claimed' | 'committed';
  readonly claimedAtMs: number;
  readonly host: string;
  readonly pid: number;
  /**
   * Once committed: where the files are, relative to the staging root ('' for v2: in the target);
   * for an adopted leftover, under `_adopted/`, or on a store without rename `t:REL`, the
   * leftover's output where the engine left it inside the target.
   */
  readonly root?: string;
  /**
   * The VersionDigest of the files commit-task found in the attempt dir; null where the store has no versions (claims
   * before version 2 have none).
   */
  readonly versionDigest?: string | null;
  /**
   * The stagedAtMs of the job it was made for (absent in claims of earlier versions): a job id staged again is another
   * job.
   */
  readonly jobStagedAtMs?: number;
}

export interface Claim extends ClaimHeader {
  /** The attempt's files, recorded when it claims (so an interrupted commit knows them). */
  readonly files: readonly TaskFile[];
}

/** What the reader knows the claim must say: the job's id, the task its name gives, the app attempt. */
export interface ClaimContext {
  readonly jobId: string;
  readonly task: string;
  readonly appAttempt: number;
  /** The job's stagedAtMs, where a claim made for an earlier job of the same id must be refused (exit 4). */
  readonly jobStagedAtMs?: number;
}

const KIND = 'stagecommit/claim';
/** 3: the job's stagedAtMs (jobStagedAtMs); 2: the version digest. */
const VERSION = 3;

export function encodeClaim(c: Claim): Buffer {
  const { files, ...header } = c;
  return encodeClaimWith(header, claimFilesOf(files));
}

/** A claim whose file list is written already (ClaimFiles): only its header is encoded here. */
export function encodeClaimWith(c: ClaimHeader, files: ClaimFiles): Buffer {
  const { jobStagedAtMs, ...rest } = c;
  // A claim read from an earlier version (recover carries it) is written again as that version was.
  const version = jobStagedAtMs === undefined ? 2 : VERSION;
  return encodeManifestBytes(
    {
      kind: KIND,
      version,
      ...rest,
      root: c.root ?? null,
      versionDigest: c.versionDigest ?? null,
      ...(jobStagedAtMs === undefined ? {} : { jobStagedAtMs }),
      bytes: files.bytes,
    },
    { files: files.list },
  );
}

/**
 * The staging-relative places a committed task's files may be: the committed task dir or the
 * attempt dir of this or an earlier app attempt (recover carries claims forward), or '' (v2).
 */
function checkRoot(root: string, ctx: ClaimContext, taskAttempt: string): void {
  if (root === '') return;
  if (isAdoptedRoot(root)) {
    const rel = root.startsWith('t:') ? root.slice(2) : root;
    checkRelativePath(rel, 'claim root');
    // Inside the target, only where no reader looks: under a name that is not data (protocol.md §5.11).
    if (root.startsWith('t:') && rel.split('/').every(isDataName))
      throw new Error(`'${root}' is not inside a leftover (a '_' or '.' name) of the target`);
    return;
  }
  const m = /^_temporary\/(\d+)\/(.+)$/.exec(root);
  const app = m ? Number(m[1]) : -1;
  const ok = m !== null && app <= ctx.appAttempt && (m[2] === ctx.task || m[2] === `_temporary/${taskAttempt}`);
  if (!ok) throw new Error(`'${root}' is not this task's committed dir or attempt dir inside the staging dir`);
}

/** A root that adopt wrote: the leftover renamed into the staging dir, or left where it is (t:). */
export function isAdoptedRoot(root: string): boolean {
  return root === ADOPTED_DIR || root.startsWith(ADOPTED_DIR + '/') || root.startsWith('t:');
}

/** The store path of a claim's root. */
export function claimRootPath(layout: JobLayout, targetPath: string, root: string): string {
  return root.startsWith('t:') ? posix.join(targetPath, root.slice(2)) : layout.resolve(root);
}

/** For a root inside the target, the leftover it is in: the path up to its first name that is not data. */
export function leftoverOfRoot(root: string): string | null {
  if (!root.startsWith('t:')) return null;
  const segs = root.slice(2).split('/');
  return segs.slice(0, segs.findIndex((s) => !isDataName(s)) + 1).join('/');
}

/** A claim with its file list left in the file, read once when asked (commit-job at a million files). */
export interface ClaimRecord extends ClaimHeader {
  readonly fileCount: number;
  readonly bytes: number;
  /**
   * Each file in order, checked as a path from the command line is (protocol.md §5.11), then that the files
   * add up to `bytes`. Once only: the file's text is let go afterwards.
   */
  eachFile(fn: (f: TaskFile) => void): void;
}

export function decodeClaimRecord(text: string | Buffer, file: string, ctx: ClaimContext): ClaimRecord {
  const f = new Fields(decodeManifestLazy(text, file), file);
  f.kind(KIND, VERSION);
  const state = f.oneOf('state', ['claimed', 'committed'] as const);
  const who = claimedBy(f, file, ctx);
  const root = state === 'committed' ? committedRoot(f, file, ctx, who.taskAttempt) : undefined;
  const fileCount = f.length('files');
  const bytes = f.count('bytes');
  // Version 1 claims (before the digest) have none; from version 2 it is there, null or a digest.
  const versionDigest = f.doc.version === 1 ? null : f.nullableText('versionDigest');
  if (versionDigest !== null && !/^[0-9a-f]{64}$/.test(versionDigest))
    throw CorruptManifestError.badField(file, 'versionDigest', 'is not 64 hex digits');
  const jobStagedAtMs = (f.doc.version as number) >= 3 ? f.time('jobStagedAtMs') : undefined;
  checkOfInstance(
    { file, what: `the claim of task ${who.task}, made by ${who.taskAttempt}`, stagedAtMs: jobStagedAtMs },
    { jobId: ctx.jobId, stagedAtMs: ctx.jobStagedAtMs },
    'abort this job and stage it again (under a new --job-id runs of the earlier job cannot reach it)',
  );
  const header = {
    ...who,
    state,
    claimedAtMs: f.time('claimedAtMs'),
    host: f.string('host'),
    pid: f.count('pid'),
    root,
    versionDigest,
    ...(jobStagedAtMs === undefined ? {} : { jobStagedAtMs }),
  };
  return { ...header, fileCount, bytes, eachFile: fileReader(f, file, bytes) };
}

/** Which attempt made the claim, each name checked against the file's place: its task and app attempt. */
function claimedBy(f: Fields, file: string, ctx: ClaimContext) {
  const task = f.string('task');
  if (task !== ctx.task)
    throw CorruptManifestError.badField(file, 'task', `is '${task}', but the file is the claim of task '${ctx.task}'`);
  const attempt = f.count('attempt');
  const taskAttempt = f.string('taskAttempt');
  if (taskAttempt !== taskAttemptName(ctx.jobId, task, attempt)) {
    throw CorruptManifestError.badField(
      file,
      'taskAttempt',
      `is '${taskAttempt}', expected '${taskAttemptName(ctx.jobId, task, attempt)}'`,
    );
  }
  const appAttempt = f.count('appAttempt');
  if (appAttempt !== ctx.appAttempt)
    throw CorruptManifestError.badField(
      file,
      'appAttempt',
      `is ${appAttempt}, but the file is in app attempt ${ctx.appAttempt}`,
    );
  return { task, attempt, taskAttempt, appAttempt };
}

/** A committed claim's root, checked to be the task's own dir (protocol.md §5.11). */
function committedRoot(f: Fields, file: string, ctx: ClaimContext, taskAttempt: string): string {
  const root = f.text('root');
  try {
    checkRoot(root, ctx, taskAttempt);
  } catch (e) {
    throw CorruptManifestError.badField(file, 'root', (e as Error).message);
  }
  return root;
}

/** ClaimRecord.eachFile: the claim's files read once, in order, then checked to add up to `bytes`. */
function fileReader(f: Fields, file: string, bytes: number): ClaimRecord['eachFile'] {
  let files: Fields | null = f;
  return (fn: (t: TaskFile) => void): void => {
    if (!files) throw new Error(`internal: the files of ${file} were read already`);
    let sum = 0;
    // The reader's own errors (a clash between tasks) pass through; only the file's are the file's.
    let theirs: { error: unknown } | null = null;
    try {
      files.each('files', (x) => {
        const t = fileOf(x);
        sum += t.size;
        try {
          fn(t);
        } catch (error) {
          theirs = { error };
          throw error;
        }
      });
    } catch (e) {
      throw theirs ? (theirs as { error: unknown }).error : e;
    }
    files = null;
    if (bytes !== sum)
      throw CorruptManifestError.badField(file, 'bytes', `is ${bytes}, but the files add up to ${sum}`);
  };
}

export function decodeClaim(text: string | Buffer, file: string, ctx: ClaimContext): Claim {
  const { fileCount: _fileCount, bytes: _bytes, eachFile, ...header } = decodeClaimRecord(text, file, ctx);
  const files: TaskFile[] = [];
  eachFile((t) => files.push(t));
  return { ...header, files };
}

/** Reads a claim (null: none). A claim being written on WebHDFS is read again shortly. */
export function readClaim(store: Store, layout: JobLayout, ctx: ClaimContext): Promise<Claim | null> {
  return readManifestFile(store, layout.claimFile(ctx.appAttempt, ctx.task), (text, file) =>
    decodeClaim(text, file, ctx),
  );
}

/** readClaim with the file list left in the file (ClaimRecord). */
export function readClaimRecord(store: Store, layout: JobLayout, ctx: ClaimContext): Promise<ClaimRecord | null> {
  return readManifestFile(store, layout.claimFile(ctx.appAttempt, ctx.task), (text, file) =>
    decodeClaimRecord(text, file, ctx),
  );
}

/**
 * The pending uploads (S3) that the claims of the job's current app attempt hold: what is done
 * with them is all the callers ask. Each claim is read through without an object per file kept
 * (at a million files, the whole list was 116 MiB).
 */
export async function claimedUploads(
  store: Store,
  layout: JobLayout,
  job: { readonly jobId: string; readonly appAttempt: number },
  concurrency = 16,
  unreadable?: (file: string, e: Error) => void,
): Promise<TaskFile[]> {
  if (unreadable) return lenientUploads(store, layout, job, concurrency, unreadable);
  const out: TaskFile[] = [];
  for (const c of (
    await readClaimRecords(store, layout, { jobId: job.jobId, appAttempt: job.appAttempt }, concurrency)
  ).values()) {
    c.eachFile((f) => {
      if (f.upload) out.push(f);
    });
  }
  return out;
}

/**
 * claimedUploads for a step that ends the job (abort): a claim it cannot read is told to `unreadable` and passed over.
 */
async function lenientUploads(
  store: Store,
  layout: JobLayout,
  job: { readonly jobId: string; readonly appAttempt: number },
  concurrency: number,
  unreadable: (file: string, e: Error) => void,
): Promise<TaskFile[]> {
  const out: TaskFile[] = [];
  await mapLimit(await claimEntries(store, layout, job.appAttempt), concurrency, async (e) => {
    const file = store.toUri(e.path);
    try {
      const task = claimTaskOf(e);
      if (task === null) throw new Error('is not a claim file (<task>.yaml)');
      (await readClaimRecord(store, layout, { jobId: job.jobId, task, appAttempt: job.appAttempt }))?.eachFile(
        (f) => void (f.upload && out.push(f)),
      ); // those before a bad item are the job's too
    } catch (err) {
      if (err instanceof StoreError) throw err;
      unreadable(file, err as Error);
    }
  });
  return out;
}

/**
 * Which claims: those of one app attempt of a job (refusing those of an earlier job of its id, when
 * its stagedAtMs is given).
 */
export type AppAttemptClaims = Omit<ClaimContext, 'task'>;

/** Every claim of one app attempt, by task; a file there that is not a claim is reported. */
export async function readClaims(
  store: Store,
  layout: JobLayout,
  of: AppAttemptClaims,
  concurrency = 16,
): Promise<Map<string, Claim>> {
  const tasks = await claimTasks(store, layout, of.appAttempt);
  const claims = await mapLimit(tasks, concurrency, (task) => readClaim(store, layout, { ...of, task }));
  const out = new Map<string, Claim>();
  for (const c of claims) if (c) out.set(c.task, c);
  return out;
}

/** The tasks that have a claim file in an app attempt; a file there that is not a claim is reported. */
async function claimTasks(store: Store, layout: JobLayout, app: number): Promise<string[]> {
  return (await claimEntries(store, layout, app)).map((e) => {
    const task = claimTaskOf(e);
    if (task === null) throw new CorruptManifestError(store.toUri(e.path), { reason: 'not-a-claim' });
    return task;
  });
}

/** The entries of an app attempt's claims dir (hidden ones, a store's own, left out). */
export async function claimEntries(store: Store, layout: JobLayout, app: number): Promise<Entry[]> {
  return (await store.list(layout.claimsDir(app))).filter((e) => !e.name.startsWith('.'));
}

/** The task whose claim an entry of the claims dir is (`<task>.yaml`), or null: not a claim file. */
export function claimTaskOf(e: Entry): string | null {
  if (e.kind !== 'file' || !e.name.endsWith('.yaml')) return null;
  try {
    return checkTaskId(e.name.slice(0, -5));
  } catch {
    return null;
  }
}

/**
 * Every claim of one app attempt, by task, with file lists left unread (ClaimRecord): each claim
 * stays one string until its files are read, never a list of objects.
 */
export async function readClaimRecords(
  store: Store,
  layout: JobLayout,
  of: AppAttemptClaims,
  concurrency = 16,
): Promise<Map<string, ClaimRecord>> {
  const read = await mapLimit(await claimTasks(store, layout, of.appAttempt), concurrency, (task) =>
    readClaimRecord(store, layout, { ...of, task }),
  );
  const out = new Map<string, ClaimRecord>();
  for (const c of read) if (c) out.set(c.task, c);
  return out;
}
