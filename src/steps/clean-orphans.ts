// clean-orphans: finds what killed jobs leave under some roots and, when told to, removes it.
// Walks directories only (never reads a data file), never follows links, never enters a
// leftover once found; nothing outside a listed leftover is ever removed.
// Keeps protocol.md §5.16 (never the only copy of output) and §5.17 (only uploads no job owns).

import { posix } from 'node:path';
import { asStageCommitError, ConflictError } from '../errors.js';
import { loadJob, type JobManifest } from '../job/job.js';
import { canHoldTable, defaultStagingRoot, JobLayout, JOB_FILE } from '../job/layout.js';
import { isPastCommitPoint, stateOnStore } from '../job/open.js';
import { holderKnownDead, leaseTtl, readCurrentLease, type CurrentLease } from '../job/lease.js';
import { ownedUploadIds } from '../job/pending-uploads.js';
import type { PendingUpload } from '../store/types.js';
import { removeDirIfEmpty } from '../store/operations.js';
import { abortUploads, keepsPendingUploads, pendingUploadsUnder } from '../store/uploads.js';
import { measureTree } from '../store/walk.js';
import { mapLimit } from '../util/pool.js';
import { abort } from './abort.js';
import type { StepEnv } from './env.js';
import { Progress } from './progress.js';
import { recover } from './recover.js';
import { storeClock } from './store-clock.js';
import { compareStrings } from '../util/compare.js';
import {
  checkRoots,
  isLeaseFile,
  removeEmptyStagingParents,
  scan,
  type LeftoverKind,
  type ScanProblem,
} from './orphan-scan.js';
import { unpublishedOutput } from './unpublished.js';

export { kindByName, LEFTOVER_KINDS, type LeftoverKind, type ScanProblem } from './orphan-scan.js';

/** `adopt`: the leftover holds output the table may not have; --delete keeps it. */
export type LeftoverAction = 'would-delete' | 'deleted' | 'rolled-forward' | 'adopt' | 'skipped';

export interface Leftover {
  readonly kind: LeftoverKind;
  readonly path: string;
  readonly uri: string;
  readonly ageSeconds: number;
  readonly files: number;
  readonly bytes: number;
  readonly jobId?: string;
  readonly jobState?: string;
  /** The upload to abort, for kind 'multipart-upload'. */
  readonly upload?: PendingUpload;
  /** A stagecommit job past its commit point: --delete rolls it forward, never deletes it. */
  readonly pastCommit?: boolean;
  /** An engine's leftover that may hold the only copy of output: removed only with deleteUnpublished. */
  readonly unpublished?: boolean;
  action: LeftoverAction;
  reason?: string;
}

export interface CleanOrphansInput {
  readonly roots: readonly string[];
  readonly olderThanMs: number;
  readonly delete: boolean;
  /** With delete: also remove leftovers that hold output the table may not have (action 'adopt'). */
  readonly deleteUnpublished?: boolean;
  readonly maxDepth?: number;
}

export interface CleanOrphansResult {
  readonly roots: readonly string[];
  readonly olderThanSeconds: number;
  readonly dryRun: boolean;
  readonly directoriesScanned: number;
  readonly leftovers: readonly Leftover[];
  readonly problems: readonly ScanProblem[];
  readonly reclaimableBytes: number;
}

/** Uploads never completed under a root (S3 multipart). Not those in `accounted` (a job's own, which
 *  go with the job: abort or roll-forward; those an earlier root listed), which gains these. */
async function staleUploads(
  env: StepEnv,
  root: string,
  now: number,
  olderThanMs: number,
  accounted: Set<string>,
): Promise<Leftover[]> {
  const { store } = env;
  return (await pendingUploadsUnder(store, root))
    .filter((u) => !accounted.has(u.uploadId))
    .map((u) => {
      accounted.add(u.uploadId);
      const ageSeconds = Math.max(0, Math.floor((now - u.initiatedMs) / 1000));
      const young = now - u.initiatedMs < olderThanMs;
      return {
        kind: 'multipart-upload' as const,
        path: u.path,
        uri: store.toUri(u.path),
        ageSeconds,
        files: 0,
        bytes: 0,
        upload: u,
        action: young ? ('skipped' as const) : ('would-delete' as const),
        reason: young ? `started ${ageSeconds}s ago: newer than --older-than` : undefined,
      };
    });
}

/** --delete: each leftover it applies to, one after another, counted with its bytes; a failure is that one's reason. */
async function actOn(
  env: StepEnv,
  leftovers: readonly Leftover[],
  input: CleanOrphansInput,
  clock: () => number,
): Promise<void> {
  const acted = leftovers.filter((l) => isActedOn(l, input));
  const removing = new Progress(env, 'removing', acted.length, sumBytes(acted));
  for (const l of acted) {
    try {
      await act(env, l, input, clock());
    } catch (e) {
      l.action = 'skipped';
      l.reason = asStageCommitError(e).message;
    }
    removing.item(l.path, l.bytes);
  }
}

function sumBytes(ls: readonly { readonly bytes: number }[]): number {
  return ls.reduce((a, l) => a + l.bytes, 0);
}

export async function cleanOrphans(env: StepEnv, input: CleanOrphansInput): Promise<CleanOrphansResult> {
  const { store } = env;
  const problems: ScanProblem[] = [];

  await checkRoots(store, input.roots, env.concurrency);
  // Ages that decide a deletion are the store's times against the store's clock: this machine's
  // may be far off (a clock days ahead took a job staged seconds before for days old). A dry run
  // writes nothing, so it dates by this machine's clock.
  const clock = input.delete ? await storeClock(env, input.roots[0]!) : env.now;
  const now = clock();
  const scanned = await scan(env, input.roots, input.maxDepth ?? 16, problems);
  // Roots may repeat or nest (`s3://b s3://b/wh`): each leftover is listed, and acted on, once.
  const found = [...new Map(scanned.found.map((f) => [f.path, f])).values()];

  env.emit({ type: 'phase', label: `measuring ${found.length} leftover(s)` });
  const measuring = new Progress(env, 'measuring', found.length);
  const owned = new Set<string>();
  let jobUnread = false;
  const leftovers = (
    await mapLimit(found, Math.max(1, Math.floor(env.concurrency / 4)), async (f): Promise<Leftover | null> => {
      try {
        const l = await describe(env, f, now, input.olderThanMs, owned);
        measuring.item(f.path, l.bytes);
        return l;
      } catch (e) {
        measuring.item(f.path);
        if (f.kind === 'stagecommit') jobUnread = true;
        problems.push({ path: store.toUri(f.path), message: (e as Error).message });
        return null;
      }
    })
  ).filter((l): l is Leftover => l !== null);
  if (keepsPendingUploads(store) && !(await ownUploadsBeside(env, input.roots, owned))) jobUnread = true;
  const magic = magicTables(leftovers);
  for (const root of input.roots) {
    for (const u of await staleUploads(env, root, now, input.olderThanMs, owned)) {
      leftovers.push(judgeUpload(u, jobUnread, magic));
    }
  }
  leftovers.sort((a, b) => compareStrings(a.uri, b.uri));

  if (input.delete) {
    await actOn(env, leftovers, input, clock);
    await removeEmptyStagingParents(store, scanned.emptyParents);
  }
  const reclaimableBytes = sumBytes(leftovers.filter((l) => l.action === 'would-delete' || l.action === 'deleted'));
  return {
    roots: input.roots.map((r) => store.toUri(r)),
    olderThanSeconds: Math.round(input.olderThanMs / 1000),
    dryRun: !input.delete,
    directoriesScanned: scanned.scanned,
    leftovers,
    problems,
    reclaimableBytes,
  };
}

/** The dirs holding an S3A magic commit that clean-orphans keeps: uploads under them may be its output. */
function magicTables(leftovers: readonly Leftover[]): string[] {
  return leftovers.filter((l) => l.kind === 's3a-magic' && l.unpublished).map((l) => posix.dirname(l.path));
}

function judgeUpload(u: Leftover, jobUnread: boolean, magic: readonly string[]): Leftover {
  if (u.action !== 'would-delete') return u;
  const table = magic.find((d) => u.path.startsWith(`${d}/`));
  // An S3A magic commit's records name uploads under its table: they may be its only output.
  if (table !== undefined) {
    const reason = `an S3A magic commit kept under ${u.uri.slice(0, u.uri.length - u.path.length + table.length)} may name it; remove it only with --delete --delete-unpublished, which loses that output`;
    return { ...u, unpublished: true, action: 'skipped', reason };
  }
  // A job we could not read may own any of them: its uploads are not ours to judge.
  if (jobUnread) {
    return {
      ...u,
      action: 'skipped',
      reason: 'a stagecommit job under the roots could not be read, and it may own this upload',
    };
  }
  return u;
}

/**
 * A table given as a root has its default staging root beside it, outside the roots: the pending
 * uploads of its jobs are theirs too. False when one of those jobs could not be read.
 */
async function ownUploadsBeside(env: StepEnv, roots: readonly string[], owned: Set<string>): Promise<boolean> {
  const { store } = env;
  let allRead = true;
  for (const root of roots) {
    if (!canHoldTable(root, store.namespaceDepth)) continue; // a bucket has nothing beside it
    const beside = defaultStagingRoot(root);
    if (roots.some((r) => beside === r || beside.startsWith(`${r}/`))) continue; // scanned already
    for (const e of await store.list(beside)) {
      if (e.kind !== 'dir') continue;
      try {
        const layout = new JobLayout(e.path);
        const job = await loadJob(store, layout);
        if (!job) continue;
        for (const id of await ownedUploadIds(store, layout, job, env.concurrency)) owned.add(id);
      } catch {
        allRead = false;
      }
    }
  }
  return allRead;
}

/** `owned` collects the upload ids of the stagecommit jobs described (their uploads are theirs, not stale). */
async function describe(
  env: StepEnv,
  { path, kind }: { readonly path: string; readonly kind: LeftoverKind },
  now: number,
  olderThanMs: number,
  owned?: Set<string>,
): Promise<Leftover> {
  const { store } = env;
  const m = await measureTree(store, path, env.concurrency);
  const newestMs = Math.floor(m.newestMs); // whole milliseconds, as the clock's: a time's fraction is not the future
  const ageSeconds = newestMs > 0 ? Math.max(0, Math.floor((now - newestMs) / 1000)) : 0;
  const base = { kind, path, uri: store.toUri(path), ageSeconds, files: m.files, bytes: m.bytes };
  // A leftover that cannot be dated may belong to a job that is starting: it is never taken for old.
  const protectedBy =
    newestMs <= 0
      ? 'empty, and the store keeps no modification time for it: its age is unknown'
      : now - newestMs < olderThanMs
        ? `changed ${ageSeconds}s ago: newer than --older-than`
        : undefined;
  if (kind !== 'stagecommit') {
    if (protectedBy) return { ...base, action: 'skipped', reason: protectedBy };
    // Invariant: clean-orphans never deletes the only copy of output (protocol.md §5.16).
    const kept = await unpublishedOutput(store, path, kind);
    if (!kept) return { ...base, action: 'would-delete' };
    return { ...base, unpublished: true, action: kept.adoptable ? 'adopt' : 'skipped', reason: kept.reason };
  }
  const layout = new JobLayout(path);
  let job: JobManifest | null;
  try {
    job = await loadJob(store, layout);
  } catch (e) {
    return { ...base, action: 'skipped', reason: `unreadable ${JOB_FILE}: ${(e as Error).message}` };
  }
  if (!job) return strayLeases(env, path, base, protectedBy, now);
  if (owned && keepsPendingUploads(store)) {
    for (const id of await ownedUploadIds(store, layout, job, env.concurrency)) owned.add(id);
  }
  const state = await stateOnStore(store, layout, job);
  const past = isPastCommitPoint(state);
  const withJob = { ...base, jobId: job.jobId, jobState: state };
  const lease = await readCurrentLease(store, layout);
  if (await mayBeHeld(env, lease, now))
    return { ...withJob, action: 'skipped', reason: 'a live process may hold its lease (renewed within its TTL)' };
  if (past)
    return {
      ...withJob,
      pastCommit: true,
      action: 'skipped',
      reason: 'past its commit point: --delete rolls it forward, never deletes it',
    };
  if (protectedBy) return { ...withJob, action: 'skipped', reason: protectedBy };
  return { ...withJob, action: 'would-delete' };
}

/**
 * A handle with no job: only lease files left there (a step killed between trying the lease and
 * finding no job). Deleted as the next step at the handle would (a job abort there removes a dead
 * holder's file and the directory it alone kept); a live holder's is left alone.
 */
async function strayLeases(
  env: StepEnv,
  path: string,
  base: Omit<Leftover, 'action'>,
  protectedBy: string | undefined,
  now: number,
): Promise<Leftover> {
  const entries = await env.store.list(path);
  if (entries.length === 0 || !entries.every(isLeaseFile))
    return { ...base, action: 'skipped', reason: `${JOB_FILE} vanished during the scan` };
  const stray = { ...base, jobState: 'no job: a lease file left behind' };
  const lease = await readCurrentLease(env.store, new JobLayout(path));
  if (await mayBeHeld(env, lease, now))
    return { ...stray, action: 'skipped', reason: 'a live process may hold its lease (renewed within its TTL)' };
  return protectedBy ? { ...stray, action: 'skipped', reason: protectedBy } : { ...stray, action: 'would-delete' };
}

/**
 * Whether a lease's holder may be alive, as far as a scan tells: not known dead, and its file
 * changed within its TTL by the store's times against `now`. Only a guide: the abort or recover
 * that acts on the job takes the lease, and watches it for its TTL first (lease.ts).
 */
async function mayBeHeld(env: StepEnv, lease: CurrentLease | null, now: number): Promise<boolean> {
  if (!lease || holderKnownDead(lease, env)) return false;
  const changed = (await env.store.stat(lease.path))?.mtimeMs ?? 0;
  return changed <= 0 || now - changed < leaseTtl(lease, env);
}

/** What --delete removes (or rolls forward); output the table may not have only when told so. */
function isActedOn(l: Leftover, input: CleanOrphansInput): boolean {
  if (l.unpublished) return input.deleteUnpublished === true;
  return l.action === 'would-delete' || l.pastCommit === true;
}

async function act(env: StepEnv, l: Leftover, input: CleanOrphansInput, now: number): Promise<void> {
  const { store } = env;
  if (l.kind === 'multipart-upload') {
    await abortUploads(store, [l.upload!], 1);
    l.action = 'deleted';
    return;
  }
  // Re-check just before acting: a leftover that changed since it was listed is left alone.
  const again = await describe(env, l, now, input.olderThanMs);
  if (
    !isActedOn(again, input) ||
    again.files !== l.files ||
    again.bytes !== l.bytes ||
    again.ageSeconds + 5 < l.ageSeconds
  ) {
    l.action = 'skipped';
    l.reason = again.reason ?? 'changed since it was listed';
    return;
  }
  if (l.kind === 'stagecommit') {
    if (l.pastCommit) {
      await recover(env, { stagingPath: l.path });
      l.action = 'rolled-forward';
      l.reason = undefined;
    } else {
      // Its lease decides between this abort and a rerun resuming the job: one resumed since the
      // age judged here is left alone.
      try {
        await abort(env, { stagingPath: l.path, unlessResumedAfterMs: now - input.olderThanMs });
      } catch (e) {
        if (!(e instanceof ConflictError && e.reason === 'resumed-meanwhile')) throw e;
        l.action = 'skipped';
        l.reason = e.message;
        return;
      }
      // A handle with no job: the abort removed a lease file whose holder is known dead (and the dir it alone kept).
      // One of another host's is removed here: the re-check found it unchanged past its TTL and --older-than.
      if (l.jobId === undefined) {
        const left = await store.list(l.path);
        if (left.length > 0 && left.every(isLeaseFile)) {
          for (const e of left) await store.delete(e.path, false);
          await removeDirIfEmpty(store, l.path);
        }
      }
      if (l.jobId === undefined && (await store.list(l.path)).length > 0) {
        l.action = 'skipped';
        l.reason = 'its lease file could not be removed';
        return;
      }
      l.action = 'deleted';
    }
    return;
  }
  await store.delete(l.path, true);
  l.action = 'deleted';
}
