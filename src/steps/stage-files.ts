// stage (task files): puts files into a task attempt's dir, or tells a writer where that dir is.
// Keeps protocol.md §5.12 (a killed stage publishes no partial file).

import type { BigIntStats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { posix } from 'node:path';
import type { Readable } from 'node:stream';
import { BlockedError, CommitDeniedError, ConflictError, UsageError } from '../errors.js';
import { readDecision } from '../job/decisions.js';
import { staticPrefix, type JobManifest } from '../job/job.js';
import { ATTEMPT_MARKER, SUCCESS_FILE, taskAttemptName } from '../job/layout.js';
import { stageAsUploads, type StagedUploads } from '../job/pending-uploads.js';
import { checkAttempt, checkRelativePath, checkTaskId, partitionPath, type PartitionValue } from '../paths.js';
import { isTempName, TEMP_PREFIX } from '../store/temp-names.js';
import { dirsVanishWhenEmpty, syncWritten } from '../store/operations.js';
import { forEachLimit } from '../util/pool.js';
import type { OpenJob } from '../job/open.js';
import { checkTaskFile, isWriterMarker } from './attempt-output.js';
import { checkDeclared } from './commit-task.js';
import type { StepEnv } from './env.js';
import { Progress } from './progress.js';
import { runStep } from './runner.js';
import { SourceMoves } from './stage-move.js';
import { checkStillStaged, type StagedWrites } from './stage-race.js';
import { currentAttempt } from './task-attempts.js';

/** A file to stage: `name` is its path under the attempt's write dir (with '/' for a tree's dirs). */
export type StagedSource =
  { readonly localPath: string; readonly name: string } | { readonly stream: Readable; readonly name: string };

export interface StageFilesInput {
  readonly stagingPath: string;
  readonly task: string;
  readonly attempt?: number;
  readonly partition: readonly PartitionValue[];
  readonly files: readonly StagedSource[];
  readonly printPath?: boolean;
  /**
   * The local sources may be consumed: renamed into the attempt where they can be, else removed
   * once staged (stage-move.ts).
   */
  readonly move?: boolean;
  /**
   * The files are a directory tree (stage DIR): their `k=v` dirs give the partition columns after
   * the ones in `partition`, and each is checked against the job's partitionBy.
   */
  readonly tree?: boolean;
}

export interface StageFilesResult {
  readonly jobId: string;
  readonly task: string;
  readonly attempt: number;
  /** The task attempt's own dir, as a URI. */
  readonly attemptDir: string;
  /** Where the files go: the attempt dir plus the partition path given, as a URI. */
  readonly writeDir: string;
  /** Table-relative paths of the staged files. */
  readonly files: readonly string[];
  /** Their bytes. */
  readonly bytes: number;
}

/** The partition path a task's files go to: the job's static values, then the task's own. */
export function taskPartitionPath(job: JobManifest, given: readonly PartitionValue[], needFull: boolean): string {
  const cols = job.partitionBy;
  const values: PartitionValue[] = [...job.staticPartition];
  for (const g of given) {
    const s = job.staticPartition.find((p) => p.column === g.column);
    if (s) {
      if (g.value !== s.value)
        throw new UsageError({
          reason: 'partition-differs-static',
          column: g.column,
          value: g.value,
          staticValue: s.value,
        });
      continue;
    }
    const col = cols[values.length];
    if (col === undefined) throw new UsageError({ reason: 'partition-column-extra', column: g.column, columns: cols });
    if (g.column !== col)
      throw new UsageError({ reason: 'partition-column-order', column: g.column, expected: col, columns: cols });
    values.push(g);
  }
  if (needFull && values.length < cols.length) {
    const missing = cols.slice(values.length);
    throw new UsageError({ reason: 'partition-values-missing', columns: missing });
  }
  return partitionPath(values);
}

export async function stageFiles(env: StepEnv, input: StageFilesInput): Promise<StageFilesResult> {
  const task = checkTaskId(input.task);
  const given = input.attempt === undefined ? undefined : checkAttempt(input.attempt);
  return runStep(
    env,
    input.stagingPath,
    { name: 'stage', states: { allowed: ['staged'], doing: 'stage files' } },
    async (open) =>
      stageInto(
        env,
        open,
        input,
        task,
        given ?? (await currentAttempt(env.store, open.layout, open.job, task, 'stage')),
      ),
  );
}

async function stageInto(
  env: StepEnv,
  open: OpenJob,
  input: StageFilesInput,
  task: string,
  attempt: number,
): Promise<StageFilesResult> {
  const { store } = env;
  const { job, layout } = open;
  checkDeclared(job, task, 'staged');
  const part = taskPartitionPath(job, input.partition, !input.printPath && !input.tree);
  const full = checkNames(job, input, part);
  const taskAttempt = taskAttemptName(job.jobId, task, attempt);
  const decision = await readDecision(store, layout, job.appAttempt, taskAttempt, job);
  if (decision?.outcome === 'abort') {
    throw new CommitDeniedError({ reason: 'staged-into-aborted', taskAttempt, taken: null });
  }
  // Files staged into an attempt that committed would never appear: never exit 0 for them (a rerun
  // skips committed tasks: status --tasks-to-run).
  if (decision?.outcome === 'commit') {
    throw new BlockedError({ reason: 'attempt-already-committed', taskAttempt });
  }
  const dir = layout.attemptDir(job.appAttempt, taskAttempt);
  const partDir = part ? posix.join(dir, part) : dir;
  const where = { jobId: job.jobId, task, attempt, attemptDir: store.toUri(dir), writeDir: store.toUri(partDir) };
  const written = { task, taskAttempt, paths: full, dir: partDir };
  if (input.printPath) {
    await store.mkdirs(partDir);
    // Where directories do not exist on their own, the attempt is marked as staged (an attempt
    // that writes nothing may commit; one never staged may not).
    const marker = dirsVanishWhenEmpty(store) ? [posix.join(dir, ATTEMPT_MARKER)] : [];
    for (const m of marker) await store.writeFile(m, '');
    await checkStillStaged(env, layout, job, { ...written, files: marker, uploads: [], uploadRecord: null });
    return { ...where, files: [], bytes: 0 };
  }
  const bytes = await sendFiles(env, open, input.files, { ...written, part, move: input.move });
  return { ...where, files: full, bytes };
}

/**
 * The staged files' table-relative paths (under the partition path `part`); refuses names that
 * are not relative, reserved, a writer's marker, given twice, or none at all.
 */
function checkNames(job: JobManifest, input: StageFilesInput, part: string): string[] {
  const names = input.files.map((f) => checkRelativePath(f.name, 'file name'));
  if (input.tree) for (const n of names) checkTreeFile(job, part ? `${part}/${n}` : n);
  const reserved = names.find((n) => n.split('/').some(isTempName));
  if (reserved !== undefined)
    throw new UsageError({ reason: 'file-name-reserved', name: reserved, prefix: TEMP_PREFIX });
  // What commit-task leaves out as a writer's marker, or refuses as the job's own (`_SUCCESS/…` at the top), would
  // never appear.
  const full = names.map((n) => (part ? `${part}/${n}` : n));
  const markerName = full.find((n) => isWriterMarker(posix.basename(n)) || n.startsWith(`${SUCCESS_FILE}/`));
  if (markerName !== undefined)
    throw new UsageError({ reason: 'file-name-marker', name: markerName, successFile: SUCCESS_FILE });
  const seen = new Set<string>();
  const twice = names.find((n) => seen.size === seen.add(n).size);
  if (twice !== undefined) throw new UsageError({ reason: 'file-name-twice', name: twice });
  if (input.files.length === 0 && !input.printPath) throw new UsageError({ reason: 'nothing-to-stage' });
  return full;
}

/** Where sendFiles writes: the task attempt, its write dir and the partition path under it. */
type Destination = Omit<StagedWrites, 'files' | 'uploads' | 'uploadRecord'> & {
  readonly part: string;
  /** stage --move: the local sources may be consumed. */
  readonly move?: boolean;
};

/**
 * Sends the files into the write dir, then checks the job is still staged (else the files go
 * back); returns their bytes. A local file that changed while it was sent is refused.
 */
async function sendFiles(
  env: StepEnv,
  open: OpenJob,
  sources: readonly StagedSource[],
  to: Destination,
): Promise<number> {
  const { store } = env;
  const { job, layout } = open;
  const { part, move, ...written } = to;
  // Large local files on S3 go up as uploads to their final keys, left pending (no copy at commit).
  const local = sources.filter((f): f is Extract<StagedSource, { localPath: string }> => 'localPath' in f);
  let uploaded: StagedUploads = { names: new Set(), uploads: [], record: null };
  let small = sources;
  // A write that fails (the job's end removed the dir under it, say) is told after the look at the job.
  let failed: { error: unknown } | null = null;
  // One look at each file gives its size and what tells a change.
  const looked = await Promise.all(local.map((f) => stat(f.localPath, { bigint: true })));
  const before = looked.map(fingerprintOf);
  const sizes = new Map(local.map((f, i) => [f.name, Number(looked[i]!.size)] as const));
  const allLocal = local.length === sources.length;
  const progress = new Progress(env, 'staging files', sources.length, allLocal ? sum(sizes.values()) : undefined);
  const sent = new Map<string, number>();
  const onBytes = (name: string) => (n: number) => (sent.set(name, n), progress.bytes(name, n));
  const moves = new SourceMoves(move === true);
  try {
    const watched = local.map((f) => ({ ...f, onBytes: onBytes(f.name) }));
    uploaded = await stageAsUploads(store, { layout, job, taskAttempt: to.taskAttempt }, part, watched, {
      concurrency: env.concurrency,
      nowMs: env.now(),
    });
    for (const n of uploaded.names) progress.item(n, sizes.get(n));
    small = sources.filter((f) => !uploaded.names.has(f.name));
    await putAll(env, small, to.dir, moves, (f) => ({
      onBytes: onBytes(f.name),
      done: () => progress.item(f.name, sizes.get(f.name) ?? sent.get(f.name) ?? 0),
    }));
  } catch (error) {
    failed = { error };
  }
  const files = small.map((f) => posix.join(to.dir, f.name));
  if (failed) await moves.giveBack(files);
  await checkStillStaged(env, layout, job, {
    ...written,
    files,
    uploads: uploaded.uploads,
    uploadRecord: uploaded.record,
    giveBack: (taken) => moves.giveBack(taken),
  });
  // A copy that failed because its file went or changed meanwhile names that file (exit 4), not the store's error.
  const copied = local.map((f, i) => [f, before[i]!] as const).filter(([f]) => !moves.wasTaken(f.localPath));
  if (failed) await checkUnchanged(copied);
  if (failed) throw failed.error;
  await checkUnchanged(copied);
  const left = await moves.removeCopied(local);
  if (left.length) env.emit({ type: 'warn', message: notRemoved(left) });
  return sum(sources.map((f) => sizes.get(f.name) ?? sent.get(f.name) ?? 0));
}

/**
 * Puts each file into `dir` (taken by rename where --move lets the store), then makes them all
 * durable at once: from the look at the job that follows, a commit-task may claim them.
 */
async function putAll(
  env: StepEnv,
  files: readonly StagedSource[],
  dir: string,
  moves: SourceMoves,
  watch: (f: StagedSource) => { onBytes: (n: number) => void; done: () => void },
): Promise<void> {
  const { store } = env;
  await forEachLimit(files, env.concurrency, async (f) => {
    const { onBytes, done } = watch(f);
    const dst = posix.join(dir, f.name);
    await store.put(
      dst,
      'localPath' in f
        ? {
            localPath: f.localPath,
            move: moves.on,
            onTaken: () => moves.took(f.localPath, dst),
            onBytes,
            syncLater: true,
          }
        : { stream: f.stream, onBytes, syncLater: true },
    );
    done();
  });
  await syncWritten(
    store,
    files.map((f) => posix.join(dir, f.name)),
  );
}

function notRemoved(left: readonly string[]): string {
  const shown = left.slice(0, 3).join(', ') + (left.length > 3 ? ', …' : '');
  return `staged, but ${left.length} source file(s) could not be removed (--move): ${shown}`;
}

function sum(ns: Iterable<number>): number {
  let total = 0;
  for (const n of ns) total += n;
  return total;
}

const PARTITION_DIR = /^([a-z0-9][a-z0-9_]*)=/;

/**
 * A file of a staged tree, its table-relative path `rel`: under a full partition path of the job,
 * as commit-task will check it, and no `k=v` dir below that (a partition of a column the job does
 * not have, or one given twice).
 */
function checkTreeFile(job: JobManifest, rel: string): void {
  checkTaskFile(job, rel, staticPrefix(job));
  const dirs = rel.split('/').slice(0, -1);
  const extra = dirs.findIndex((d, i) => i >= job.partitionBy.length && PARTITION_DIR.test(d));
  if (extra < 0) return;
  const col = PARTITION_DIR.exec(dirs[extra]!)![1]!;
  throw new UsageError({
    reason: 'tree-partition-extra',
    dir: dirs.slice(0, extra + 1).join('/'),
    column: col,
    depth: extra + 1,
    columns: job.partitionBy,
  });
}

/**
 * What tells a local file's bytes apart without reading them again, as rsync does: size and
 * modification time, and the inode (a file replaced by rename). Not the change time, which a
 * chmod or a new hard link moves without touching a byte.
 */
async function fingerprint(localPath: string): Promise<string | null> {
  const s = await stat(localPath, { bigint: true }).catch(() => null);
  return s && fingerprintOf(s);
}

function fingerprintOf(s: BigIntStats): string {
  return `${s.size}/${s.mtimeNs}/${s.ino}`;
}

/**
 * A local file written to while it was copied (a 20 MB file rewritten in place mid-upload would
 * be published half old, half new, with exit 0) is a copy of neither version: exit 4,
 * and staging it again replaces that copy (the last staging of a name wins).
 */
async function checkUnchanged(
  local: readonly (readonly [{ readonly localPath: string }, string | null])[],
): Promise<void> {
  const after = await Promise.all(local.map(([f]) => fingerprint(f.localPath)));
  const changed = local.filter(([, before], i) => after[i] !== before).map(([f]) => f);
  if (changed.length === 0) return;
  throw new ConflictError({ reason: 'file-changed', path: changed[0]!.localPath, others: changed.length - 1 });
}
