// The table log (protocol.md §3.3, §5.5, §5.8): numbered entries beside the default staging root, each
// created with the store's create-if-absent, as Delta Lake's `_delta_log/N.json`. A job records
// the newest entry at `stage`; at its commit it creates the next entry. Whoever creates number N
// first has it: the loser reads what it lost to and either conflicts or tries N+1. An entry is
// finished once its job has applied its plan (`N.done`); until then it holds what it touches.

import { randomUUID } from 'node:crypto';
import { posix } from 'node:path';
import { ConflictError, CorruptManifestError, withContext } from '../errors.js';
import { decodeManifest, encodeManifest, Fields } from '../manifest/codec.js';
import { ancestorsOf, checkRelativePath, checkStorePath } from '../paths.js';
import { bulkDelete, listsInOrder } from '../store/operations.js';
import type { Store } from '../store/types.js';
import { mapLimit } from '../util/pool.js';
import { commitLogDir } from './layout.js';
import { readManifestFile } from './manifest-io.js';

const ENTRY = 'stagecommit/log-entry';
const DONE = 'stagecommit/log-done';
const ID = 'stagecommit/log-id';
/** The log's identity, made with its first entry: a log deleted and made again has another. */
const ID_FILE = 'log-id.yaml';
const DIGITS = 20;
const CHECKPOINT = 'stagecommit/log-checkpoint';
/** Where the log's short cut for `stage` is (protocol.md §3.4). */
const CHECKPOINT_FILE = 'checkpoint.yaml';
/** The newest entries are never pruned: the newest number is always there to count from. */
const KEEP_ENTRIES = 1000;
/** Finished entries beyond the newest MAX_ENTRIES are pruned whatever their age (by count)... */
const MAX_ENTRIES = 10_000;
/** ...and those beyond the newest KEEP_ENTRIES once a week old (by age). */
const KEEP_MS = 7 * 24 * 3600 * 1000;
/** The commit of every CHECKPOINT_EVERY-th number prunes (at most PRUNE_BATCH) and writes the checkpoint. */
const CHECKPOINT_EVERY = 16;
const PRUNE_BATCH = 256;
/** Numbers looked up at once where the log cannot be listed from a name. */
const LOOKUP_BATCH = 16;

const pad = (n: number): string => String(n).padStart(DIGITS, '0');

/** Entry numbers (ascending) and done markers among a log dir's names, `from` and above. */
function parseNames(names: readonly string[], from = 0): Pick<LogListing, 'numbers' | 'done'> {
  const numbers: number[] = [];
  const done = new Set<number>();
  for (const name of names) {
    const m = /^(\d{20})\.(yaml|done)$/.exec(name);
    if (!m || Number(m[1]) < from) continue;
    if (m[2] === 'yaml') numbers.push(Number(m[1]));
    else done.add(Number(m[1]));
  }
  numbers.sort((a, b) => a - b);
  return { numbers, done };
}

/** The lowest number with an entry or a done marker (null: none). */
function lowest(l: Pick<LogListing, 'numbers' | 'done'>): number | null {
  let low = l.numbers.length ? l.numbers[0]! : null;
  for (const n of l.done) if (low === null || n < low) low = n;
  return low;
}

/**
 * What stays true of a log once true (protocol.md §3.4): number `newest` was taken, every number
 * below `readFrom` is finished, every number below `oldest` is pruned, in the log whose id is `log`.
 */
export interface LogCheckpoint {
  readonly log: string;
  readonly newest: number;
  readonly readFrom: number;
  readonly oldest: number;
}

export interface LogEntry {
  readonly number: number;
  readonly jobId: string;
  /** The job's staging dir (store path): where its plan is, and who to finish. */
  readonly staging: string;
  readonly handle: string;
  /** Table-relative paths the commit writes into or replaces ('' = the whole table). */
  readonly touches: readonly string[];
  /** Table-relative units whose old data the commit replaces. */
  readonly replaces: readonly string[];
  readonly atMs: number;
  /**
   * The plan the commit applies (`_plan/<plan>.yaml` in `staging`) and its SHA-256; null in entries
   * made before entries named their plan (version 1).
   */
  readonly plan: { readonly name: string; readonly sha256: string } | null;
}

export type DoneOutcome = 'committed' | 'void';

/** Whose an entry is: a job id and the staging dir (store path) of that job. */
export interface EntryOwner {
  readonly jobId: string;
  readonly staging: string;
}

/** An entry is a job's when both its id and its staging dir are: two staging dirs may hold jobs of one id. */
export function isOwnEntry(e: Pick<LogEntry, 'jobId' | 'staging'>, owner: EntryOwner): boolean {
  return e.jobId === owner.jobId && e.staging === owner.staging;
}

export interface LogListing {
  /** Entry numbers present, ascending. */
  readonly numbers: readonly number[];
  readonly done: ReadonlySet<number>;
  /** The log's id (null: none yet, or a log made before logs had one). */
  readonly id: string | null;
}

/**
 * The highest number taken in the log (null: none): an entry's, or a done marker's whose entry
 * went. A marker is made only beside its entry, so a marker alone proves its number was taken: a
 * commit that created that number again would pass over the commit it recorded (and that commit's
 * marker would then seem to finish this one).
 */
export function lastTaken(listing: Pick<LogListing, 'numbers' | 'done'>): number | null {
  const top = listing.numbers.length ? listing.numbers[listing.numbers.length - 1]! : null;
  let last = top;
  for (const n of listing.done) if (last === null || n > last) last = n;
  return last;
}

/**
 * The first path of `a` where two sets of table-relative paths overlap (one inside the other; ''
 * is the whole table), the deeper of the two, or null. Linear in both: a job of 20,000 partitions
 * checked against another's took 3.3 s per log entry as a pair-by-pair scan.
 */
export function overlap(a: readonly string[], b: readonly string[]): string | null {
  if (a.length === 0 || b.length === 0) return null;
  const inB = new Set(b);
  // A proper ancestor of some path of b → the first such path.
  const above = new Map<string, string>();
  for (const q of b) for (const anc of ancestorsOf(q)) if (!above.has(anc)) above.set(anc, q);
  for (const p of a) {
    if (p === '') return b[0] === '' ? p : b[0]!;
    if (inB.has('') || inB.has(p)) return p;
    for (const anc of ancestorsOf(p)) if (inB.has(anc)) return p;
    const q = above.get(p);
    if (q !== undefined) return q;
  }
  return null;
}

export { describeUnit } from '../messages/conflict.js';

function checkUnits(field: string, f: Fields): string[] {
  return f.array(field, (x) => {
    if (typeof x !== 'string') throw new Error('is not a string');
    if (x !== '') checkRelativePath(x, 'partition path');
    return x;
  });
}

/** What pruning keeps and how often it runs (protocol.md §3.4). */
export interface LogRetention {
  /** The newest entries never pruned. */
  readonly keep: number;
  /** Finished entries beyond the newest `max` go whatever their age. */
  readonly max: number;
  /** The commit of every `every`-th number prunes and writes the checkpoint. */
  readonly every: number;
}

const RETENTION: LogRetention = { keep: KEEP_ENTRIES, max: MAX_ENTRIES, every: CHECKPOINT_EVERY };

export class TableLog {
  readonly dir: string;
  constructor(
    private readonly store: Store,
    private readonly targetPath: string,
    private readonly retention: LogRetention = RETENTION,
  ) {
    this.dir = commitLogDir(targetPath);
  }

  private entryPath(n: number): string {
    return posix.join(this.dir, `${pad(n)}.yaml`);
  }

  private donePath(n: number): string {
    return posix.join(this.dir, `${pad(n)}.done`);
  }

  /** The entries and done markers, and the log's id, read at once: the whole log. */
  async list(): Promise<LogListing> {
    const [names, id] = await Promise.all([
      this.store.list(this.dir).then((es) => es.map((e) => e.name)),
      this.readId(),
    ]);
    return { ...parseNames(names), id };
  }

  /**
   * The entries and done markers numbered `from` and above, and the log's id (protocol.md §3.4):
   * listed from that name where the store lists in order, else looked up number by number. The
   * whole log when `from` is undefined (a job staged before jobs recorded where to read from).
   */
  async listFrom(from: number | undefined): Promise<LogListing> {
    if (from === undefined) return this.list();
    const [found, id] = await Promise.all([this.namesFrom(from), this.readId()]);
    return { ...found, id };
  }

  /** Where a job's commit reads the log from: never above the number after its position. */
  static readFromOf(job: { readonly logPosition: number | null; readonly logReadFrom?: number }): number | undefined {
    return job.logReadFrom === undefined ? undefined : Math.min(job.logReadFrom, (job.logPosition ?? -1) + 1);
  }

  private async namesFrom(from: number): Promise<Pick<LogListing, 'numbers' | 'done'>> {
    if (listsInOrder(this.store)) {
      // `<from>` sorts just before `<from>.done` and `<from>.yaml`: they are listed, nothing below.
      const es = await this.store.list(this.dir, { startAfter: pad(from) });
      return parseNames(es.map((e) => e.name));
    }
    return (
      (await this.lookUp(from)) ??
      parseNames(
        (await this.store.list(this.dir)).map((e) => e.name),
        from,
      )
    );
  }

  /** Which of number n's two files are there. */
  private async has(n: number): Promise<{ entry: boolean; done: boolean }> {
    const [e, d] = await Promise.all([this.store.stat(this.entryPath(n)), this.store.stat(this.donePath(n))]);
    return { entry: e !== null, done: d !== null };
  }

  /**
   * The numbers from `from` up, on a store that cannot list from a name (a local directory lists
   * whole, in no order): each number is looked up until one is not there. Null when the anchor
   * (the number below `from`, or `from` itself when that one is pruned) is not there before and
   * after the look (pruning may have made a hole), or when a number above the first one missing is
   * there (an entry removed by hand): only a whole listing tells (protocol.md §3.4).
   */
  private async lookUp(from: number): Promise<Pick<LogListing, 'numbers' | 'done'> | null> {
    const numbers: number[] = [];
    const done = new Set<number>();
    const note = (n: number, h: { entry: boolean; done: boolean }) => {
      if (h.entry) numbers.push(n);
      if (h.done) done.add(n);
    };
    const [below, first] = await Promise.all([
      from > 0 ? this.has(from - 1) : Promise.resolve({ entry: false, done: false }),
      this.has(from),
    ]);
    const anchor = below.entry || below.done ? from - 1 : first.entry || first.done ? from : null;
    if (anchor === null) return null;
    note(from, first);
    // A number above the first missing one is there: a hole (an entry removed by hand), which only
    // a whole listing shows for what it is (protocol.md §4.3 rule 2).
    let past = first.entry || first.done ? null : from;
    if (past !== null) {
      const next = await this.has(from + 1);
      if (next.entry || next.done) return null;
    }
    // A few numbers first (usually nothing is newer), more at once as the run goes on.
    for (let n = from + 1, size = 2; past === null; n += size, size = Math.min(size * 2, LOOKUP_BATCH)) {
      const batch = await Promise.all(Array.from({ length: size }, (_, i) => this.has(n + i)));
      const end = batch.findIndex((h) => !h.entry && !h.done);
      batch.slice(0, end < 0 ? batch.length : end).forEach((h, i) => note(n + i, h));
      if (end < 0) continue;
      if (batch.slice(end + 1).some((h) => h.entry || h.done)) return null;
      past = n + end;
      if (end === size - 1) {
        const next = await this.has(past + 1);
        if (next.entry || next.done) return null;
      }
    }
    // Pruning removes numbers from the oldest up: the anchor still there means none above it went.
    const again = await this.has(anchor);
    return again.entry || again.done ? { numbers, done } : null;
  }

  /**
   * The newest number taken (null: none yet), the lowest not finished, and the log's id, recorded
   * by `stage`: read from the checkpoint on, or the whole log where there is none (and then a
   * checkpoint is made from that listing, so the next stage reads only the log's end).
   */
  async position(): Promise<{ position: number | null; readFrom: number; id: string | null }> {
    const [found, id] = await Promise.all([this.readCheckpoint(), this.readId()]);
    // A checkpoint is trusted only where it names this log's id and its newest number is taken here
    // (one copied from another table, or left from a log deleted and made again, would hide this
    // log's newer commits from the job's check).
    const [from, newest] =
      found && id !== null && found.log === id
        ? await Promise.all([this.namesFrom(found.readFrom), this.has(found.newest)])
        : [null, null];
    const cp = newest && (newest.entry || newest.done) ? found : null;
    const listing = cp && from ? { ...from, id } : await this.list();
    const listed = lastTaken(listing);
    const position = cp && (listed === null || cp.newest > listed) ? cp.newest : listed;
    const open = listing.numbers.find((n) => !listing.done.has(n));
    const readFrom = open ?? (position === null ? 0 : position + 1);
    const oldest = lowest(listing);
    if (!cp && position !== null && oldest !== null && listing.id !== null)
      await this.writeCheckpoint({ log: listing.id, newest: position, readFrom, oldest }).catch(() => undefined);
    return { position, readFrom, id: listing.id };
  }

  private get checkpointPath(): string {
    return posix.join(this.dir, CHECKPOINT_FILE);
  }

  /**
   * The checkpoint (null: none, or one that cannot be read: it is only a short cut, the whole
   * log says the same). What it says stays true once true, so an old one is only less precise.
   */
  async readCheckpoint(): Promise<LogCheckpoint | null> {
    return readManifestFile(this.store, this.checkpointPath, (text, file) => {
      const f = new Fields(decodeManifest(text, file), file);
      f.kind(CHECKPOINT, 2);
      const cp = {
        log: f.string('log'),
        newest: f.count('newest'),
        readFrom: f.count('readFrom'),
        oldest: f.count('oldest'),
      };
      if (cp.readFrom > cp.newest + 1 || cp.oldest > cp.readFrom)
        throw new CorruptManifestError(file, {
          reason: 'bad-field',
          field: 'readFrom',
          problem: 'is not between oldest and newest + 1',
        });
      return cp;
    }).catch(() => null);
  }

  private async writeCheckpoint(cp: LogCheckpoint): Promise<void> {
    await this.store.writeFile(this.checkpointPath, encodeManifest({ kind: CHECKPOINT, version: 2, ...cp }));
  }

  private get idPath(): string {
    return posix.join(this.dir, ID_FILE);
  }

  async readId(): Promise<string | null> {
    return readManifestFile(this.store, this.idPath, (text, file) => {
      const f = new Fields(decodeManifest(text, file), file);
      f.kind(ID, 1);
      const id = f.string('id');
      if (!/^[0-9a-f-]{36}$/.test(id)) throw CorruptManifestError.badField(file, 'id', 'is not a UUID');
      return id;
    }).catch(this.withAdvice);
  }

  /** Gives the log a new id if it has none (the first of two racing creates wins). */
  async makeId(): Promise<void> {
    await this.store.createExclusive(this.idPath, encodeManifest({ kind: ID, version: 1, id: randomUUID() }));
  }

  private decode(text: string | Buffer, file: string, n: number): LogEntry {
    const f = new Fields(decodeManifest(text, file), file);
    f.kind(ENTRY, 2);
    const number = f.count('number');
    if (number !== n) throw CorruptManifestError.badField(file, 'number', `is ${number}, but the file is entry ${n}`);
    const staging = f.string('staging');
    try {
      checkStorePath(staging);
    } catch (e) {
      throw CorruptManifestError.badField(file, 'staging', (e as Error).message);
    }
    return {
      number,
      jobId: f.string('jobId'),
      staging,
      handle: f.string('handle'),
      touches: checkUnits('touches', f),
      replaces: checkUnits('replaces', f),
      atMs: (f.string('at'), f.count('atMs')),
      plan: f.doc.version === 1 ? null : { name: f.string('plan'), sha256: f.string('planSha256') },
    };
  }

  /**
   * A damaged entry or done marker stops every commit to the table (what it decided is unknown):
   * its error says how to get past it.
   */
  private withAdvice = (e: unknown): never => {
    if (!(e instanceof CorruptManifestError)) throw e;
    const { store } = this;
    throw withContext(e, {
      reason: 'table-log-damaged',
      target: store.toUri(this.targetPath),
      dir: store.toUri(this.dir),
    });
  };

  async read(n: number): Promise<LogEntry> {
    const path = this.entryPath(n);
    const e = await readManifestFile(this.store, path, (text, file) => this.decode(text, file, n)).catch(
      this.withAdvice,
    );
    if (!e) throw new ConflictError({ reason: 'log-entry-vanished', entry: this.store.toUri(path) });
    return e;
  }

  readMany(ns: readonly number[], concurrency: number): Promise<LogEntry[]> {
    return mapLimit(ns, concurrency, (n) => this.read(n));
  }

  /**
   * Entry `n` as plan `plan` of job `owner` needs it (protocol.md §4.1, §4.4): whether it names that
   * plan (the job's id and staging dir, and the plan's name), then whether it is marked void or
   * finished (`committed`: written once its plan was applied and `_SUCCESS` written). `entry`:
   * null when it is not there.
   */
  async entryNaming(
    n: number,
    owner: EntryOwner,
    plan: string,
  ): Promise<{ entry: LogEntry | null; names: boolean; void: boolean; finished: boolean }> {
    const entry = await this.read(n).catch((e: unknown) => {
      if (e instanceof ConflictError) return null;
      throw e;
    });
    const names = entry !== null && isOwnEntry(entry, owner) && entry.plan?.name === plan;
    const outcome = names ? await this.readDone(n, owner.jobId) : null;
    return { entry, names, void: outcome === 'void', finished: outcome === 'committed' };
  }

  /**
   * The outcome entry N's done marker records (null: none yet). `jobId`: the job entry N names; a
   * marker naming another job is not this entry's (its own entry went, and N was made again):
   * it is damage, never an outcome of this entry.
   */
  async readDone(n: number, jobId: string): Promise<DoneOutcome | null> {
    return readManifestFile(this.store, this.donePath(n), (text, file) => {
      const f = new Fields(decodeManifest(text, file), file);
      f.kind(DONE, 1);
      if (f.count('number') !== n)
        throw CorruptManifestError.badField(file, 'number', `is not ${n}, the entry it finishes`);
      const of = f.string('jobId');
      if (of !== jobId)
        throw CorruptManifestError.badField(file, 'jobId', `is ${of}, but entry ${n} is job ${jobId}'s`);
      f.count('atMs');
      return f.oneOf('outcome', ['committed', 'void'] as const);
    }).catch(this.withAdvice);
  }

  /** Creates entry N if nobody has (the commit point, protocol.md §4.1); false when another job has it. */
  tryAppend(entry: LogEntry & { readonly plan: NonNullable<LogEntry['plan']> }): Promise<boolean> {
    const { number, jobId, staging, handle, touches, replaces, atMs, plan } = entry;
    const body = encodeManifest({
      kind: ENTRY,
      version: 2,
      number,
      jobId,
      staging,
      handle,
      touches: [...touches],
      replaces: [...replaces],
      atMs,
      at: new Date(atMs).toISOString(),
      plan: plan.name,
      planSha256: plan.sha256,
    });
    return this.store.createExclusive(this.entryPath(number), body);
  }

  /** Marks entry N finished (its commit applied) or void (it never became a commit point: protocol.md §3.3). */
  async markDone(entry: Pick<LogEntry, 'number' | 'jobId'>, outcome: DoneOutcome, nowMs: number): Promise<void> {
    const body = encodeManifest({
      kind: DONE,
      version: 1,
      number: entry.number,
      jobId: entry.jobId,
      outcome,
      atMs: nowMs,
    });
    await this.store.createExclusive(this.donePath(entry.number), body);
  }

  /**
   * The log's upkeep by the commit that made entry `own`, once it is marked done
   * (protocol.md §3.4): every CHECKPOINT_EVERY numbers, removes the oldest finished entries beyond the newest
   * KEEP_ENTRIES that are beyond the newest MAX_ENTRIES or a week old, PRUNE_BATCH at most, only
   * a contiguous run from the oldest and in order, so a job staged before them sees a gap and
   * stops (never a miss); then writes the checkpoint. `listing`: the log as this commit read it
   * (every number below its first was finished then). A week old by the store's times alone
   * (protocol.md §10): an entry's modification time against entry `own`'s, never an `at` written
   * by another host's clock, nor this machine's.
   */
  async prune(listing: LogListing, own: number): Promise<void> {
    const { keep, max, every } = this.retention;
    if (own % every !== 0) return;
    const open = listing.numbers.filter((n) => n !== own && !listing.done.has(n));
    const readFrom = open.length ? Math.min(...open) : own + 1;
    // The first commit made the log's id after its listing was read.
    const id = listing.id ?? (await this.readId());
    const found = await this.readCheckpoint();
    const cp = found && found.log === id ? found : null;
    const oldest = cp ? cp.oldest : await this.oldestNumber();
    // Only finished entries go, never one of the newest KEEP_ENTRIES.
    const last = Math.min(readFrom - 1, own - keep, oldest + PRUNE_BATCH - 1);
    let through = Math.min(last, own - max);
    if (last > through && last >= oldest && (await this.weekOld(last, own))) through = last;
    if (through >= oldest) await this.removeRun(oldest, through);
    if (id !== null)
      await this.writeCheckpoint({ log: id, newest: own, readFrom, oldest: Math.max(oldest, through + 1) });
  }

  /** The oldest number with an entry or done marker: a whole listing, made once, where no checkpoint says it. */
  private async oldestNumber(): Promise<number> {
    return lowest(parseNames((await this.store.list(this.dir)).map((e) => e.name))) ?? 0;
  }

  /** Whether entry n was made a week before entry `own`, by the store's own times. */
  private async weekOld(n: number, own: number): Promise<boolean> {
    const [made, now] = await Promise.all([this.store.stat(this.entryPath(n)), this.store.stat(this.entryPath(own))]);
    return !!made && !!now && made.mtimeMs > 0 && now.mtimeMs > 0 && now.mtimeMs - made.mtimeMs >= KEEP_MS;
  }

  /**
   * Removes numbers `from` to `to`, each entry before its done marker (a marker alone still holds
   * its number taken). Where readers look numbers up (no listing in order) one at a time from the
   * oldest: a number there proves none above it went. Elsewhere all at once.
   */
  private async removeRun(from: number, to: number): Promise<void> {
    const ns = Array.from({ length: to - from + 1 }, (_, i) => from + i);
    const many = bulkDelete(this.store);
    if (listsInOrder(this.store) && many) {
      await many(ns.map((n) => this.entryPath(n)));
      await many(ns.map((n) => this.donePath(n)));
      return;
    }
    if (listsInOrder(this.store)) {
      await mapLimit(ns, 16, (n) => this.store.delete(this.entryPath(n), false));
      await mapLimit(ns, 16, (n) => this.store.delete(this.donePath(n), false));
      return;
    }
    for (const n of ns) {
      await this.store.delete(this.entryPath(n), false);
      await this.store.delete(this.donePath(n), false);
    }
  }
}
