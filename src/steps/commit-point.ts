// Reaching the commit point through the table log (protocol.md §4.3, §5.5, §5.8): conflicts with commits
// made since the job was staged, waiting for (or naming) unfinished commits of the same
// partitions, then creating the next log entry — the one decision two racing jobs cannot both win.

import { setTimeout as sleep } from 'node:timers/promises';
import { againAdvice } from '../job/adoption.js';
import { ConflictError } from '../errors.js';
import { loadJob, type JobManifest } from '../job/job.js';
import { stateOnStore, type OpenJob } from '../job/open.js';
import { JobLayout } from '../job/layout.js';
import { LeaseWatch, readCurrentLease } from '../job/lease.js';
import {
  describeUnit,
  isOwnEntry,
  lastTaken,
  overlap,
  TableLog,
  type DoneOutcome,
  type LogEntry,
  type LogListing,
} from '../job/table-log.js';
import type { StepEnv } from './env.js';

export interface CommitUnits {
  /** Table-relative paths the commit writes into or replaces ('' = the whole table). */
  readonly touches: readonly string[];
  /** Units whose old data it replaces. */
  readonly replaces: readonly string[];
}

const DEFAULT_WAIT_MS = 60_000;

type HolderState = 'finished' | 'void' | 'live' | 'stopped' | 'undecided';

/**
 * What an unfinished entry's job is doing: done, given up, running (its lease is not yet seen
 * expired by `watch`, this process's own look at it over the rounds), stopped past its commit
 * point, or stopped after taking the entry but before writing its plan.
 */
async function holderState(env: StepEnv, e: LogEntry, watch: LeaseWatch): Promise<HolderState> {
  const layout = new JobLayout(e.staging);
  const job = await loadJob(env.store, layout);
  if (!job || job.jobId !== e.jobId || job.state === 'committed') return 'finished';
  if (job.state === 'aborted') return 'void';
  const lease = await readCurrentLease(env.store, layout);
  if (lease && !watch.expired(lease)) return 'live';
  return (await stateOnStore(env.store, layout, job)) === 'committing' ? 'stopped' : 'undecided';
}

/** Why this job cannot commit while `e` holds `where`: its holder is running, or stopped. */
function heldBy(job: JobManifest, e: LogEntry, where: string, state: HolderState): ConflictError {
  return new ConflictError(
    state === 'live'
      ? `job ${job.jobId} waited for job ${e.jobId}, which is still committing ${describeUnit(where)} (${e.handle}): nothing was changed; run commit-job again when it has finished`
      : state === 'stopped'
        ? `job ${e.jobId} passed its commit point for ${describeUnit(where)} but did not finish (killed?): nothing was changed; finish it with 'stagecommit recover --job ${e.handle}', then run commit-job again`
        : `job ${e.jobId} holds ${describeUnit(where)} in the table log but stopped before its commit point (killed?): nothing was changed; run 'stagecommit recover --job ${e.handle}' (or abort it), then run commit-job again`,
  );
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');
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
  opts: {
    dryRun?: boolean;
    firstListing?: Promise<LogListing>;
    persist?: (planned: P, entry: number) => Promise<void>;
    withdraw?: () => Promise<unknown>;
  } = {},
): Promise<{ plan: P; entry: LogEntry; listing: LogListing }> {
  const { job } = open;
  const log = new TableLog(env.store, job.targetPath);
  const pos = job.logPosition;
  const deadline = env.now() + (env.commitWaitMs ?? DEFAULT_WAIT_MS);
  const cache = new Map<number, LogEntry>();
  const watches = new Map<number, LeaseWatch>();
  const watchOf = (n: number) => watches.get(n) ?? watches.set(n, new LeaseWatch(env)).get(n)!;
  // A job that cannot commit is the user's to end: its staging dir, and on S3 its pending uploads in the table's
  // prefix, stay until abort.
  const restage = (what: string) =>
    againAdvice(
      job,
      `abort it ('stagecommit abort --job ${env.store.toUri(open.layout.root)}' removes its staging dir and uploads) and ${what}`,
    );
  const read = async (ns: readonly number[]) => {
    const missing = ns.filter((n) => !cache.has(n));
    for (const e of await log.readMany(missing, env.concurrency)) cache.set(e.number, e);
    return ns.map((n) => cache.get(n)!);
  };
  // Done markers never change either: each is read once, and only where it decides something.
  const outcomes = new Map<number, Promise<DoneOutcome | null>>();
  const outcome = (n: number) => outcomes.get(n) ?? outcomes.set(n, log.readDone(n, cache.get(n)!.jobId)).get(n)!;
  for (let round = 0; ; round++) {
    // A listing taken before this call is as good as a new one: creating the entry decides races.
    const listing = await (round === 0 && opts.firstListing ? opts.firstListing : log.list());
    const { numbers, done } = listing;
    // A log deleted and made again numbers its entries afresh: this job's position means nothing in it.
    if (job.logId !== undefined && listing.id !== job.logId) {
      throw new ConflictError(
        `job ${job.jobId} cannot check its commit against the table log ${env.store.toUri(log.dir)}: it is not the log the job was staged against (${listing.id === null ? 'the log has no id now: its log-id.yaml, or the whole log dir, was deleted' : 'the log dir was deleted and made again since'}), so commits made meanwhile are unknown: nothing was changed; ${restage('stage the job again')}`,
      );
    }
    // A done marker whose entry went still holds its number (lastTaken): the gap below stops this job.
    const max = lastTaken(listing);
    const since = numbers.filter((n) => pos === null || n > pos);
    if (since.length !== (max ?? -1) - (pos ?? -1)) {
      throw new ConflictError(
        `job ${job.jobId} cannot check its commit against the table log ${env.store.toUri(log.dir)}: entries made since it was staged are missing (pruned after a week, or removed): nothing was changed; ${restage('stage the job again')}`,
      );
    }
    const unfinished = numbers.filter((n) => !done.has(n));
    await read([...new Set([...since, ...unfinished])]);
    const mine = new Set(
      since.filter((n) => isOwnEntry(cache.get(n)!, { jobId: job.jobId, staging: open.layout.root })),
    );
    const ownNumber = [...mine].find((n) => !done.has(n));
    const own = ownNumber === undefined ? null : cache.get(ownNumber)!;

    // protocol.md §5.5: a commit since this job's stage that touched what this job replaces wins over it.
    for (const n of since) {
      const e = cache.get(n)!;
      if (mine.has(n)) continue;
      const where = overlap(units.replaces, e.touches);
      if (where === null || (done.has(n) && (await outcome(n)) === 'void')) continue;
      const did = overlap(units.replaces, e.replaces) !== null ? 'replaced' : 'wrote into';
      throw new ConflictError(
        `job ${job.jobId} conflicts with job ${e.jobId}${e.jobId === job.jobId ? ` (another job given the same --job-id, staged at ${e.handle})` : ''}, which ${did} ${describeUnit(where)} at ${new Date(e.atMs).toISOString()} after this job was staged: nothing was changed; ${restage('stage the job again on the new data')}`,
      );
    }

    // protocol.md §5.8: an unfinished commit holds what it touches until its plan is applied.
    let wait: LogEntry | null = null;
    let settled = round === 0 && opts.firstListing !== undefined;
    for (const n of unfinished) {
      const e = cache.get(n)!;
      // Entries after our own were made by jobs that saw ours: they wait for us, not we for them.
      if (mine.has(n) || (own && n > own.number)) continue;
      const where = overlap(units.touches, e.touches);
      if (where === null) continue;
      settled = false;
      const state = await holderState(env, e, watchOf(n));
      if (state === 'finished' || state === 'void') {
        if (!opts.dryRun) await log.markDone(e, state === 'void' ? 'void' : 'committed', env.now());
        continue;
      }
      if (state === 'live' && env.now() < deadline && !opts.dryRun) {
        wait = e;
        continue;
      }
      throw heldBy(job, e, where, state);
    }
    if (wait) {
      env.emit({ type: 'phase', label: `waiting for job ${wait.jobId} to finish its commit` });
      await sleep(Math.min(1000, 100 * (round + 1)));
      continue;
    }

    const planned = await plan(settled);
    if (own && sameSet(own.touches, units.touches) && sameSet(own.replaces, units.replaces)) {
      // An interrupted run made the entry but not the plan: the plan alone is the commit point now.
      await opts.persist?.(planned, own.number);
      return { plan: planned, entry: own, listing };
    }
    const entry: LogEntry = {
      number: (max ?? -1) + 1,
      jobId: job.jobId,
      staging: open.layout.root,
      handle: job.staging,
      touches: units.touches,
      replaces: units.replaces,
      atMs: env.now(),
    };
    // A dry run stops here: the entry it would create, created by nobody.
    if (opts.dryRun) return { plan: planned, entry, listing };
    // An interrupted run held an entry for other partitions (tasks committed since): give it up.
    if (own) await log.markDone(own, 'void', env.now());
    // The commit point in one round trip: the entry and the plan naming it, created at once (the
    // plan counts once its entry is this job's: open.ts). The log's first entry (or the first
    // since logs have ids) gives it its id, beside them.
    const [tried, id, persisted] = await Promise.allSettled([
      log.tryAppend(entry),
      listing.id === null ? log.makeId() : undefined,
      opts.persist?.(planned, entry.number),
    ]);
    if (persisted.status === 'rejected') throw persisted.reason;
    const appended =
      tried.status === 'fulfilled'
        ? tried.value
        : await landed(env, open, { log, entry, withdraw: opts.withdraw }, tried.reason);
    // Past the commit point now: a log left without its id gets one from the next commit.
    if (id.status === 'rejected')
      env.emit({ type: 'warn', message: `could not give the table log its id: ${(id.reason as Error).message}` });
    if (appended) return { plan: planned, entry, listing: { ...listing, numbers: [...numbers, entry.number] } };
    // Another job took that number first: the plan naming it goes; read what that job did, then try the next one.
    await opts.withdraw?.();
  }
}

/**
 * The entry's create failed (with the plan naming it written, when `withdraw` is given): it may
 * have landed, its answer lost. Read back: ours, the commit point is passed; not there, the plan
 * is withdrawn and the error stands (nothing changed); unknown, the error says so.
 */
async function landed(
  env: StepEnv,
  open: OpenJob,
  created: { readonly log: TableLog; readonly entry: LogEntry; readonly withdraw?: () => Promise<unknown> },
  e: unknown,
): Promise<true> {
  const { log, entry, withdraw } = created;
  if (!withdraw) throw e;
  const now = await log
    .readOwn(entry.number, { jobId: open.job.jobId, staging: open.layout.root })
    .catch(() => undefined);
  if (now?.own) return true;
  if (now) {
    // Not there: nothing changed. A plan that cannot be withdrawn now counts for nothing (open.ts).
    if (
      !(await withdraw().then(
        () => true,
        () => false,
      )) &&
      e instanceof Error
    )
      e.message +=
        '; the commit plan written beside it is left, and counts for nothing: the next commit-job, recover or abort removes it';
    throw e;
  }
  if (e instanceof Error && !(e instanceof ConflictError)) {
    e.message += `; the target is unchanged, but whether job ${open.job.jobId} passed its commit point is not known: run 'stagecommit recover --job ${env.store.toUri(open.layout.root)}' once the store answers (it finishes the job if its table-log entry was made, else leaves it staged)`;
  }
  throw e;
}

/** Gives up this job's log entry if it holds one (abort, or recover before the commit point). */
export async function releaseLogEntry(env: StepEnv, { job, layout }: Pick<OpenJob, 'job' | 'layout'>): Promise<void> {
  if (job.algorithm === 'v2') return;
  const log = new TableLog(env.store, job.targetPath);
  const listing = await log.list();
  const own = await log.findOwn({ jobId: job.jobId, staging: layout.root }, job.logPosition, listing, env.concurrency);
  if (own && !listing.done.has(own.number)) await log.markDone(own, 'void', env.now());
}
