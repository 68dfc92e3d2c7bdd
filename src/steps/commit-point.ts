// Reaching the commit point through the table log (protocol.md §4.1, §4.3, §5.5, §5.8): conflicts with
// commits made since the job was staged, waiting for (or naming) unfinished commits of the same
// partitions, then the plan written and the next log entry naming it created — that one create is
// the commit point, the one decision two racing jobs cannot both win.

import { setTimeout as sleep } from 'node:timers/promises';
import { againAdvice } from '../job/adoption.js';
import { BlockedError, ConflictError, StageCommitError, withContext, type ConflictDetail } from '../errors.js';
import { loadJob, type JobManifest } from '../job/job.js';
import type { OpenJob } from '../job/open.js';
import { JobLayout } from '../job/layout.js';
import { LeaseWatch, readCurrentLease } from '../job/lease.js';
import { planRefOf, type PlanRef } from '../plan/plan-file.js';
import {
  isOwnEntry,
  lastTaken,
  overlap,
  TableLog,
  type DoneOutcome,
  type LogEntry,
  type LogListing,
} from '../job/table-log.js';
import { failuresAreAnswers } from '../store/operations.js';
import type { StepEnv } from './env.js';

export interface CommitUnits {
  /** Table-relative paths the commit writes into or replaces ('' = the whole table). */
  readonly touches: readonly string[];
  /** Units whose old data it replaces. */
  readonly replaces: readonly string[];
}

const DEFAULT_WAIT_MS = 60_000;

type HolderState = 'finished' | 'dead' | 'live' | 'stopped';

/**
 * What an unfinished entry's job is doing: done; running (its lease is not yet seen expired by
 * `watch`, this process's own look at it over the rounds); stopped past its commit point; or the
 * entry is dead (protocol.md §3.3): its job was aborted, or the entry names no plan of the job that
 * is there in its current app attempt (a create that landed after the next lease holder removed
 * the plan, or after recover started a new app attempt), or is not the plan the job commits.
 */
async function holderState(env: StepEnv, e: LogEntry, watch: LeaseWatch): Promise<HolderState> {
  const layout = new JobLayout(e.staging);
  const job = await loadJob(env.store, layout);
  if (!job || job.jobId !== e.jobId || job.state === 'committed') return 'finished';
  if (job.state === 'aborted') return 'dead';
  const lease = await readCurrentLease(env.store, layout);
  if (lease && !watch.expired(lease)) return 'live';
  return (await namesLivePlan(env, layout, job, e)) ? 'stopped' : 'dead';
}

/** Whether entry `e` may still be its job's commit point: the plan it names is the job's to roll forward. */
async function namesLivePlan(env: StepEnv, layout: JobLayout, job: JobManifest, e: LogEntry): Promise<boolean> {
  // A job committing since before entries named their plan: its entry is taken as its own.
  if (job.state === 'committing') return job.planName === undefined || e.plan?.name === job.planName;
  if (!e.plan) return false;
  const ref = planRefOf(layout, `${e.plan.name}.yaml`);
  return ref.appAttempt === job.appAttempt && (await env.store.stat(ref.path)) !== null;
}

/** Why this job cannot commit while `e` holds `where`: its holder is running, or stopped. */
function heldBy(job: JobManifest, e: LogEntry, where: string, state: 'live' | 'stopped'): ConflictError {
  // A live holder finishes on its own (retry later); a stopped one waits for someone to run recover.
  const detail: ConflictDetail = {
    reason: 'unit-held',
    jobId: job.jobId,
    holder: e.jobId,
    unit: where,
    handle: e.handle,
    holderState: state,
  };
  return new (state === 'live' ? ConflictError : BlockedError)(detail);
}

/** What reachCommitPoint may be given beside the plan. */
export interface CommitPointOptions<P> {
  dryRun?: boolean;
  firstListing?: Promise<LogListing>;
  /** Writes the plan, naming entry `entry`, under a name never used before (protocol.md §4.2 step 5). */
  write?: (planned: P, entry: number) => Promise<{ readonly ref: PlanRef; readonly sha256: string }>;
}

/**
 * One job's reading of the table log on its way to its commit point. Entries never change once
 * made, and neither do done markers: each is read once, and only where it decides something.
 */
class LogReading {
  readonly log: TableLog;
  private readonly entries = new Map<number, LogEntry>();
  private readonly outcomes = new Map<number, Promise<DoneOutcome | null>>();
  /** This process's own look at each holder's lease over the rounds (protocol.md §10). */
  private readonly watches = new Map<number, LeaseWatch>();
  readonly deadline: number;

  constructor(
    readonly env: StepEnv,
    readonly open: OpenJob,
    readonly units: CommitUnits,
  ) {
    this.log = new TableLog(env.store, open.job.targetPath);
    this.deadline = env.now() + (env.commitWaitMs ?? DEFAULT_WAIT_MS);
  }

  async read(ns: readonly number[]): Promise<void> {
    const missing = ns.filter((n) => !this.entries.has(n));
    for (const e of await this.log.readMany(missing, this.env.concurrency)) this.entries.set(e.number, e);
  }

  watch(n: number): LeaseWatch {
    return this.watches.get(n) ?? this.watches.set(n, new LeaseWatch(this.env)).get(n)!;
  }

  entry(n: number): LogEntry {
    return this.entries.get(n)!;
  }

  outcome(n: number): Promise<DoneOutcome | null> {
    return this.outcomes.get(n) ?? this.outcomes.set(n, this.log.readDone(n, this.entry(n).jobId)).get(n)!;
  }

  /**
   * A job that cannot commit is the user's to end: its staging dir, and on S3 its pending uploads
   * in the table's prefix, stay until abort.
   */
  restage(what: string): string {
    return againAdvice(
      this.open.job,
      `abort it ('stagecommit abort --job ${this.env.store.toUri(this.open.layout.root)}' removes its staging dir and uploads) and ${what}`,
    );
  }
}

/** One listing of the log, as this job reads it. */
interface LogRound {
  readonly listing: LogListing;
  /** The newest entry's number (null: the log is empty). */
  readonly max: number | null;
  /** Entries made since the job was staged. */
  readonly since: readonly number[];
  readonly unfinished: readonly number[];
  /** This job's own entries among `since`: while it is staged, each is dead or finished. */
  readonly mine: ReadonlySet<number>;
}

/**
 * Runs `plan` once the table is stable where the job writes, and returns it with the log entry
 * this job now holds. Throws ConflictError (exit 4) before the commit point, changing nothing
 * but log bookkeeping, when another job replaced or is still committing the same partitions.
 * `plan` is told whether the table was already stable where the job writes when the caller's
 * first listing was taken (no unfinished entry touched it): then what the caller read of the
 * target after that listing is current.
 */
export async function reachCommitPoint<P>(
  env: StepEnv,
  open: OpenJob,
  units: CommitUnits,
  plan: (firstListingSettled: boolean) => Promise<P>,
  opts: CommitPointOptions<P> = {},
): Promise<{ plan: P; entry: LogEntry; listing: LogListing }> {
  const r = new LogReading(env, open, units);
  for (let round = 0; ; round++) {
    // A listing taken before this call is as good as a new one: creating the entry decides races.
    const firstListed = round === 0 && opts.firstListing !== undefined;
    const listing = await (firstListed ? opts.firstListing! : r.log.listFrom(TableLog.readFromOf(open.job)));
    const seen = await readRound(r, listing);
    await checkNoConflict(r, seen);
    const held = await unfinishedHolders(r, seen, opts.dryRun === true);
    if (held.wait) {
      env.emit({ type: 'phase', label: `waiting for job ${held.wait.jobId} to finish its commit` });
      await sleep(Math.min(1000, 100 * (round + 1)));
      continue;
    }
    const planned = await plan(firstListed && held.settled);
    const reached = await createEntry(r, seen, planned, opts);
    if (reached) return reached;
    // Another job took that number first: read what that job did, then try the next one.
  }
}

/** The log as listed: it must be the log the job was staged against, with every entry since. */
async function readRound(r: LogReading, listing: LogListing): Promise<LogRound> {
  const { env, open, log } = r;
  const { job } = open;
  const pos = job.logPosition;
  const { numbers, done } = listing;
  // A log deleted and made again numbers its entries afresh: this job's position means nothing in it.
  if (job.logId !== undefined && listing.id !== job.logId) {
    throw new BlockedError({
      reason: 'log-replaced',
      jobId: job.jobId,
      log: env.store.toUri(log.dir),
      logIdGone: listing.id === null,
      advice: r.restage('stage the job again'),
    });
  }
  // A done marker whose entry went still holds its number (lastTaken): the gap below stops this job.
  // The listing starts at the job's read-from number, which may be above its position (protocol.md §3.4).
  const listed = lastTaken(listing);
  const max = pos === null || (listed !== null && listed > pos) ? listed : pos;
  const since = numbers.filter((n) => pos === null || n > pos);
  if (since.length !== (max ?? -1) - (pos ?? -1)) {
    throw new BlockedError({
      reason: 'log-entries-missing',
      jobId: job.jobId,
      log: env.store.toUri(log.dir),
      advice: r.restage('stage the job again'),
    });
  }
  const unfinished = numbers.filter((n) => !done.has(n));
  await r.read([...new Set([...since, ...unfinished])]);
  const mine = new Set(since.filter((n) => isOwnEntry(r.entry(n), { jobId: job.jobId, staging: open.layout.root })));
  return { listing, max, since, unfinished, mine };
}

/** protocol.md §5.5: a commit since this job's stage that touched what this job replaces wins over it. */
async function checkNoConflict(r: LogReading, seen: LogRound): Promise<void> {
  const { job } = r.open;
  const { replaces } = r.units;
  for (const n of seen.since) {
    const e = r.entry(n);
    if (seen.mine.has(n)) continue;
    const where = overlap(replaces, e.touches);
    if (where === null) continue;
    // A dead entry (protocol.md §3.3) never committed: marked void, or found dead now (rule 4 marks it).
    if (
      seen.listing.done.has(n) ? (await r.outcome(n)) === 'void' : (await holderState(r.env, e, r.watch(n))) === 'dead'
    )
      continue;
    const did = overlap(replaces, e.replaces) !== null ? 'replaced' : 'wrote into';
    throw new BlockedError({
      reason: 'partition-replaced',
      jobId: job.jobId,
      other: e.jobId,
      sameIdHandle: e.jobId === job.jobId ? e.handle : null,
      did,
      unit: where,
      at: new Date(e.atMs).toISOString(),
      advice: r.restage('stage the job again on the new data'),
    });
  }
}

/**
 * protocol.md §5.8: an unfinished commit holds what it touches until its plan is applied. One whose job
 * finished is marked so, a dead one void (protocol.md §3.3; this job's own unfinished entries are
 * dead: it is staged and holds the lease); a live one is waited for (`wait`) until the deadline; any
 * other stops this commit. `settled`: no unfinished entry touched what this job does.
 */
async function unfinishedHolders(
  r: LogReading,
  seen: LogRound,
  dryRun: boolean,
): Promise<{ wait: LogEntry | null; settled: boolean }> {
  const { env, log } = r;
  let wait: LogEntry | null = null;
  let settled = true;
  for (const n of seen.unfinished) {
    const e = r.entry(n);
    const where = overlap(r.units.touches, e.touches);
    if (where === null) continue;
    settled = false;
    const state = seen.mine.has(n) ? 'dead' : await holderState(env, e, r.watch(n));
    if (state === 'finished' || state === 'dead') {
      if (!dryRun) await log.markDone(e, state === 'dead' ? 'void' : 'committed', env.now());
      continue;
    }
    if (state === 'live' && env.now() < r.deadline && !dryRun) {
      wait = e;
      continue;
    }
    throw heldBy(r.open.job, e, where, state);
  }
  return { wait, settled };
}

/**
 * The commit point (protocol.md §4.1): the plan written, then the next entry naming it and its
 * digest created. Null when another job took that number first: the plan, named by no entry, is
 * garbage and goes.
 */
async function createEntry<P>(
  r: LogReading,
  seen: LogRound,
  planned: P,
  opts: CommitPointOptions<P>,
): Promise<{ plan: P; entry: LogEntry; listing: LogListing } | null> {
  const { env, open, log, units } = r;
  const { job } = open;
  const { listing } = seen;
  const base = {
    number: (seen.max ?? -1) + 1,
    jobId: job.jobId,
    staging: open.layout.root,
    handle: job.staging,
    touches: units.touches,
    replaces: units.replaces,
    atMs: env.now(),
  };
  // A dry run stops here: the entry it would create, created by nobody.
  if (opts.dryRun || !opts.write) return { plan: planned, entry: { ...base, plan: null }, listing };
  const written = await opts.write(planned, base.number);
  const entry = { ...base, plan: { name: written.ref.name, sha256: written.sha256 } };
  // The log's first entry (or the first since logs have ids) gives it its id, beside it.
  const [tried, id] = await Promise.allSettled([log.tryAppend(entry), listing.id === null ? log.makeId() : undefined]);
  if (tried.status === 'rejected') throw commitPointUnknown(env, open, tried.reason as unknown);
  // Past the commit point now: a log left without its id gets one from the next commit.
  if (id.status === 'rejected' && tried.value)
    env.emit({ type: 'warn', message: `could not give the table log its id: ${(id.reason as Error).message}` });
  if (tried.value)
    return { plan: planned, entry, listing: { ...listing, numbers: [...listing.numbers, entry.number] } };
  await env.store.delete(written.ref.path, false);
  return null;
}

/**
 * The entry's create failed: it may have landed, its answer lost. No read-back: the next lease
 * holder reads the log and rolls the plan forward or removes it (protocol.md §4.2 step 5).
 */
export function commitPointUnknown(
  env: StepEnv,
  open: OpenJob,
  e: unknown,
  made: 'plan was created' | 'table-log entry was made' = 'table-log entry was made',
): unknown {
  // Only stagecommit's own errors reach a user (a store's failure is a StoreError); others are bugs or injected faults.
  if (e instanceof ConflictError || !(e instanceof StageCommitError)) return e;
  // A local create that failed (no space, no permission) made nothing: the job is staged.
  if (failuresAreAnswers(env.store)) return e;
  const handle = env.store.toUri(open.layout.root);
  return withContext(e, { reason: 'commit-point-unknown', jobId: open.job.jobId, handle, made });
}
