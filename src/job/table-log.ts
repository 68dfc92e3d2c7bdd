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
/** Entries kept at least; older finished ones go once they are a week old. */
const KEEP_ENTRIES = 1000;
const KEEP_MS = 7 * 24 * 3600 * 1000;

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

export class TableLog {
  readonly dir: string;
  constructor(
    private readonly store: Store,
    private readonly targetPath: string,
  ) {
    this.dir = commitLogDir(targetPath);
  }

  private entryPath(n: number): string {
    return posix.join(this.dir, `${String(n).padStart(DIGITS, '0')}.yaml`);
  }

  private donePath(n: number): string {
    return posix.join(this.dir, `${String(n).padStart(DIGITS, '0')}.done`);
  }

  /** The entries and done markers, and the log's id, read at once. */
  async list(): Promise<LogListing> {
    const numbers: number[] = [];
    const done = new Set<number>();
    const [entries, id] = await Promise.all([this.store.list(this.dir), this.readId()]);
    for (const e of entries) {
      const m = /^(\d{20})\.(yaml|done)$/.exec(e.name);
      if (!m) continue;
      if (m[2] === 'yaml') numbers.push(Number(m[1]));
      else done.add(Number(m[1]));
    }
    numbers.sort((a, b) => a - b);
    return { numbers, done, id };
  }

  /** The newest number taken (null: none yet) and the log's id, recorded by `stage`. */
  async position(): Promise<{ position: number | null; id: string | null }> {
    const listing = await this.list();
    return { position: lastTaken(listing), id: listing.id };
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
    f.kind(ENTRY, 1);
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
   * Entry `n` as a plan naming it for `owner` needs it: the entry (null when it is gone), whether
   * it is that job's (its id and its staging dir: one id may be given to jobs in two staging
   * dirs), and then whether it was given up (its done marker says void) or finished (it says
   * committed: written once its plan was applied and `_SUCCESS` written).
   */
  async readOwn(
    n: number,
    owner: EntryOwner,
  ): Promise<{ entry: LogEntry | null; own: boolean; givenUp: boolean; finished: boolean }> {
    const entry = await this.read(n).catch((e: unknown) => {
      if (e instanceof ConflictError) return null;
      throw e;
    });
    const own = entry !== null && isOwnEntry(entry, owner);
    const outcome = own ? await this.readDone(n, owner.jobId) : null;
    return { entry, own, givenUp: outcome === 'void', finished: outcome === 'committed' };
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

  /** Creates entry N if nobody has; false when another job has it. */
  tryAppend(entry: LogEntry): Promise<boolean> {
    const { number, jobId, staging, handle, touches, replaces, atMs } = entry;
    const body = encodeManifest({
      kind: ENTRY,
      version: 1,
      number,
      jobId,
      staging,
      handle,
      touches: [...touches],
      replaces: [...replaces],
      atMs,
      at: new Date(atMs).toISOString(),
    });
    return this.store.createExclusive(this.entryPath(number), body);
  }

  /** Marks entry N finished (its commit applied) or void (its job never passed its commit point). */
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
   * Removes the oldest finished entries beyond the newest KEEP_ENTRIES, once a week old: only a
   * contiguous run from the start, so a job staged earlier sees a gap and conflicts (never a miss).
   * A week old by the store's times alone (protocol.md §10): an entry's modification time against
   * the newest entry's, which the commit that prunes has just made; never an `at` written by
   * another host's clock, nor this machine's.
   */
  async prune(listing: LogListing): Promise<void> {
    const { numbers, done } = listing;
    if (numbers.length <= KEEP_ENTRIES) return;
    const times = new Map((await this.store.list(this.dir, { details: true })).map((e) => [e.name, e.mtimeMs]));
    const timeOf = (n: number) => times.get(posix.basename(this.entryPath(n))) ?? -1;
    const now = timeOf(numbers[numbers.length - 1]!);
    if (now <= 0) return;
    for (let i = 0; i < numbers.length - KEEP_ENTRIES && i < 64; i++) {
      const n = numbers[i]!;
      const made = timeOf(n);
      if (!done.has(n) || made <= 0 || now - made < KEEP_MS) return;
      await this.store.delete(this.entryPath(n), false);
      await this.store.delete(this.donePath(n), false);
    }
  }

  /** This job's unfinished entry made after its `stage`, if an interrupted run created one. */
  async findOwn(
    owner: EntryOwner,
    position: number | null,
    listing: LogListing,
    concurrency: number,
  ): Promise<LogEntry | null> {
    const since = listing.numbers.filter((n) => (position === null || n > position) && !listing.done.has(n));
    const entries = await this.readMany(since, concurrency);
    return entries.find((e) => isOwnEntry(e, owner)) ?? null;
  }
}
