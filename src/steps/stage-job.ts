// stage (new job): checks the target and mode, creates the staging dir and `_job.yaml`.
// Records the table log's position and id, which the conflict check starts from (protocol.md §5.5).

import { randomUUID } from 'node:crypto';
import { posix } from 'node:path';
import { findCommitted } from '../job/finished.js';
import { BlockedError, UsageError } from '../errors.js';
import { encodeJob, loadJob, type Adoption, type Algorithm, type JobManifest, type Mode } from '../job/job.js';
import { canHoldTable, commitLogDir, defaultStagingRoot, JOB_FILE, JobLayout, LEASE_PREFIX } from '../job/layout.js';
import { readCurrentLease } from '../job/lease.js';
import { TableLog } from '../job/table-log.js';
import { isDataName, normalizeColumn, type PartitionValue } from '../paths.js';
import type { Entry, Store } from '../store/types.js';
import { verifyStore } from '../store/operations.js';
import { isInFlightName } from '../store/temp-names.js';
import type { StepEnv } from './env.js';
import { removeStrayLeases } from './stray-lease.js';
import { discardUndecided, findRerunJob, markResumed, type FoundJob, type RerunParams } from './resume-job.js';
import { checkUnlocked } from './effects.js';
import { JobGoneError } from '../job/open.js';

export interface StageJobInput {
  readonly targetPath: string;
  /** Explicit staging dir; else `<stagingRoot>/<jobId>`; else the default hidden sibling. */
  readonly stagingPath?: string;
  readonly stagingRoot?: string;
  readonly mode: Mode;
  readonly algorithm: Algorithm;
  readonly partition: readonly PartitionValue[];
  readonly partitionBy?: readonly string[];
  readonly jobId?: string;
  readonly tasks?: number;
  /** Set by adopt: where the leftover was. */
  readonly adopted?: Adoption;
}

export interface StageJobResult {
  readonly jobId: string;
  readonly handle: string;
  readonly stagingPath: string;
  readonly job: JobManifest;
}

const JOB_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

function isInside(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith('/') ? parent : parent + '/');
}

/** A table lives in a directory: not the store's root, nor a whole bucket. */
function checkTableDir(store: Store, targetPath: string): void {
  if (!canHoldTable(targetPath)) throw new UsageError({ reason: 'target-is-root' });
  if (!canHoldTable(targetPath, store.namespaceDepth)) {
    const uri = store.toUri(targetPath);
    throw new UsageError({ reason: 'target-is-bucket', target: uri });
  }
}

export function resolvePartitioning(
  partition: readonly PartitionValue[],
  partitionBy: readonly string[] | undefined,
): string[] {
  const seen = new Set<string>();
  for (const p of partition) {
    if (seen.has(p.column)) throw new UsageError({ reason: 'partition-given-twice', column: p.column });
    seen.add(p.column);
  }
  if (!partitionBy) return partition.map((p) => p.column);
  const cols = partitionBy.map(normalizeColumn);
  if (new Set(cols).size !== cols.length) throw new UsageError({ reason: 'partition-by-repeats', columns: cols });
  partition.forEach((p, i) => {
    if (cols[i] !== p.column) {
      throw new UsageError({ reason: 'partition-not-leading', column: p.column, columns: cols });
    }
  });
  return cols;
}

/** Where the staging dir may be: never around the target, never inside it where readers see it. */
function checkStagingPlace(env: StepEnv, targetPath: string, stagingPath: string, mode: Mode): void {
  const { store } = env;
  if (isInside(targetPath, stagingPath)) {
    throw new UsageError({
      reason: 'target-in-staging-dir',
      target: store.toUri(targetPath),
      stagingDir: store.toUri(stagingPath),
    });
  }
  if (isInside(stagingPath, targetPath)) {
    if (mode === 'create') {
      throw new UsageError({ reason: 'staging-dir-in-target', stagingDir: store.toUri(stagingPath), why: 'create' });
    }
    const rel = posix.relative(targetPath, stagingPath);
    if (rel.split('/').every(isDataName)) {
      throw new UsageError({ reason: 'staging-dir-in-target', stagingDir: store.toUri(stagingPath), why: 'visible' });
    }
  }
}

/** The options that need no store: v2 never overwrites, a whole number of tasks, a valid job id. */
function checkOptions(input: StageJobInput): { partitionBy: string[]; jobId: string } {
  if (input.algorithm === 'v2' && input.mode === 'overwrite') {
    throw new UsageError({ reason: 'v2-with-overwrite' });
  }
  if (input.tasks !== undefined && (!Number.isInteger(input.tasks) || input.tasks < 1)) {
    throw new UsageError({ reason: 'tasks-invalid', got: String(input.tasks) });
  }
  const partitionBy = resolvePartitioning(input.partition, input.partitionBy);
  const jobId = input.jobId ?? randomUUID();
  if (!JOB_ID.test(jobId)) {
    throw new UsageError({ reason: 'job-id-invalid', jobId });
  }
  return { partitionBy, jobId };
}

/** The target is a directory, or absent; --mode create wants it absent. */
async function checkTarget(store: Store, targetPath: string, mode: StageJobInput['mode']): Promise<Entry | null> {
  const target = await store.stat(targetPath);
  if (target && target.kind !== 'dir') {
    throw new UsageError({ reason: 'target-not-dir', target: store.toUri(targetPath) });
  }
  if (mode === 'create' && target) {
    throw new UsageError({ reason: 'target-exists', target: store.toUri(targetPath) });
  }
  await checkNotInsideTable(store, targetPath);
  return target;
}

/**
 * A target inside a table that has a log (a partition staged as a table of its own) would keep a
 * log of its own, and an overwrite of it would never meet the table's jobs (protocol.md §4.3): one
 * look for the log of each enclosing directory whose log dir lies below the store's root.
 */
async function checkNotInsideTable(store: Store, targetPath: string): Promise<void> {
  const tables: string[] = [];
  for (let p = posix.dirname(targetPath); posix.dirname(p) !== p && posix.dirname(p) !== '/'; p = posix.dirname(p))
    tables.push(p);
  const logs = await Promise.all(tables.map((t) => store.stat(commitLogDir(t)).catch(() => null)));
  const i = logs.findIndex((l) => l?.kind === 'dir');
  if (i < 0) return;
  throw new UsageError({
    reason: 'target-inside-table',
    target: store.toUri(targetPath),
    table: store.toUri(tables[i]!),
    partition: posix.relative(tables[i]!, targetPath),
  });
}

/** A job never adopts files it did not stage: its staging dir is empty (stray leases of ended steps aside). */
async function checkStagingEmpty(env: StepEnv, layout: JobLayout, input: StageJobInput, jobId: string): Promise<void> {
  const rerun = input.jobId !== undefined && !input.adopted;
  const { store } = env;
  const stagingPath = layout.root;
  // Another stage making a job here right now (its temp, its probe) is no job yet: the exclusive
  // create of `_job.yaml` decides between them; a killed one's temps go with the staging dir.
  const list = async () => (await store.list(stagingPath)).filter((e) => !isInFlightName(e.name));
  let existing = await list();
  // Only lease files whose holders are gone: steps on a job that was here ended before removing them.
  if (
    existing.length > 0 &&
    existing.every((e) => e.kind === 'file' && e.name.startsWith(LEASE_PREFIX)) &&
    (await removeStrayLeases(env, layout, await readCurrentLease(store, layout).catch(() => null)))
  ) {
    existing = await list();
  }
  if (existing.length > 0) {
    const names =
      existing
        .slice(0, 3)
        .map((e) => `'${e.name}'`)
        .join(', ') + (existing.length > 3 ? ` and ${existing.length - 3} more` : '');
    // A rerun whose job was staged meanwhile (another run of it, fired twice) goes on with that job.
    if (rerun && existing.some((e) => e.name === JOB_FILE))
      throw new JobIdTaken({ reason: 'job-id-taken', jobId, stagingDir: store.toUri(stagingPath), rerun: true });
    // A rerun that left out --job-id is told the one it needs to go on with the job there.
    const there = existing.some((e) => e.name === JOB_FILE)
      ? await loadJob(store, layout, { allowUnsigned: env.allowUnsignedJob }).catch(() => null)
      : null;
    throw new UsageError(
      input.stagingPath
        ? {
            reason: 'staging-dir-not-empty',
            stagingDir: store.toUri(stagingPath),
            names,
            stagedJobId: there ? there.jobId : null,
          }
        : { reason: 'job-id-in-use', jobId, stagingDir: store.toUri(stagingPath) },
    );
  }
}

/** The input checked, with the job id and staging dir it comes to. */
function checkInput(env: StepEnv, input: StageJobInput): RerunParams {
  const { store } = env;
  const { partitionBy, jobId } = checkOptions(input);
  const targetPath = input.targetPath.replace(/\/+$/, '') || '/';
  checkTableDir(store, targetPath);

  const stagingPath = (
    input.stagingPath ?? posix.join(input.stagingRoot ?? defaultStagingRoot(targetPath), jobId)
  ).replace(/\/+$/, '');
  checkStagingPlace(env, targetPath, stagingPath, input.mode);
  return { ...input, targetPath, stagingPath, jobId, partitionBy };
}

/** A job id staged again meanwhile (an exclusive create lost): a rerun looks at that job. */
class JobIdTaken extends UsageError {}

/** What a rerun of `stage --target --job-id` found, or a new job. */
export interface StageOrResumeResult {
  readonly jobId: string;
  readonly handle: string;
  readonly stagingPath: string;
  /** The job's manifest; null for a rerun that found its job committed and gone. */
  readonly job: JobManifest | null;
  /** Set when `--job-id` named a job staged before (a rerun): what was found. */
  readonly found?: FoundJob;
}

/**
 * `stage --target`: a new job, or, when `--job-id` names a job staged at the same staging dir
 * (a rerun), that job: staged or committing (goes on), committed (says so); a job staged with other
 * parameters is exit 2. The lookup comes before the target is judged: a create job's target exists
 * once it committed.
 */
export async function stageOrResume(env: StepEnv, input: StageJobInput): Promise<StageOrResumeResult> {
  const p = checkInput(env, input);
  const rerun = input.jobId !== undefined && !input.adopted;
  for (let round = 1; ; round++) {
    try {
      return await stageOrResumeOnce(env, input, p, rerun);
    } catch (e) {
      // The job went while this rerun resumed it (clean-orphans removed it as too old, having taken
      // its lease first): nothing of it is left to go on with, so the rerun stages it afresh.
      if (!rerun || round >= 3 || !(e instanceof JobGoneError) || e.committed) throw e;
    }
  }
}

async function stageOrResumeOnce(
  env: StepEnv,
  input: StageJobInput,
  p: RerunParams,
  rerun: boolean,
): Promise<StageOrResumeResult> {
  const found = rerun ? await findRerunJob(env, p) : null;
  if (found) return rerunResult(env, p, found);
  try {
    return await createJob(env, input, p);
  } catch (e) {
    // Another run of the same rerun staged it first: go on with that job, as a later rerun would.
    const now = rerun && e instanceof JobIdTaken ? await findRerunJob(env, p) : null;
    if (now) return rerunResult(env, p, now);
    throw e;
  }
}

/**
 * A rerun's answer: the job it found, its undecided attempts discarded (a rerun's output is never
 * added to an earlier run's); for one aborted and not yet cleaned up, exit 4 while the abort still
 * runs (its lease is held: clean-orphans removing it), exit 6 once it stopped.
 */
async function rerunResult(env: StepEnv, p: RerunParams, found: FoundJob): Promise<StageOrResumeResult> {
  const handle = env.store.toUri(p.stagingPath);
  if (found.state === 'aborted') {
    await checkUnlocked(env, new JobLayout(p.stagingPath));
    throw new BlockedError({ reason: 'rerun-of-aborted', jobId: p.jobId, handle });
  }
  if (found.state === 'staged') await markResumed(env, p.stagingPath);
  const resumed =
    found.state === 'staged' ? { ...found, discarded: await discardUndecided(env, p.stagingPath) } : found;
  return { jobId: p.jobId, handle, stagingPath: p.stagingPath, job: found.job ?? null, found: resumed };
}

/** A new job (adopt's too): never one staged before. */
export async function stageJob(env: StepEnv, input: StageJobInput): Promise<StageJobResult> {
  return createJob(env, input, checkInput(env, input));
}

async function createJob(env: StepEnv, input: StageJobInput, p: RerunParams): Promise<StageJobResult> {
  const { store } = env;
  const { targetPath, stagingPath, jobId, partitionBy } = p;
  const target = await checkTarget(store, targetPath, input.mode);
  const layout = new JobLayout(stagingPath);
  await checkStagingEmpty(env, layout, input, jobId);

  // A job id chosen by hand may name a job that committed here: reusing it would make a rerun of
  // commit-job answer 'already-committed' for data that was never published.
  if (input.jobId !== undefined && target) {
    const done = await findCommitted(store, stagingPath, env.concurrency);
    if (done)
      throw new UsageError({
        reason: 'job-id-committed',
        jobId,
        target: done.target,
        committedAt: done.committedAt,
      });
  }

  const job: JobManifest = {
    jobId,
    target: store.toUri(targetPath),
    targetPath,
    staging: store.toUri(stagingPath),
    mode: input.mode,
    algorithm: input.algorithm,
    partitionBy,
    staticPartition: input.partition,
    tasks: input.tasks,
    // Where the table log stands now: commits after this one are checked at commit-job (protocol.md §5.5),
    // in this log (its id), not in one made again after it was deleted.
    ...(await logState(store, targetPath)),
    appAttempt: 0,
    state: 'staged',
    stagedAtMs: env.now(),
    owner: { user: env.user, host: env.host, pid: env.pid },
    ...(input.adopted ? { adopted: input.adopted } : {}),
  };
  // A store proves what the protocol relies on (S3: that conditional writes are honoured).
  await verifyStore(store, stagingPath);
  // One mutation: the exclusive create makes the staging dir and `_job.yaml` together.
  const body = encodeJob(job);
  if (!(await store.createExclusive(layout.jobFile, body))) {
    // A create retried after a lost response finds its own first attempt: that is a success.
    const existing = await store.readFile(layout.jobFile);
    if (existing?.toString('utf8') !== body) {
      throw new JobIdTaken({ reason: 'job-id-taken', jobId, stagingDir: store.toUri(stagingPath), rerun: false });
    }
  }
  return { jobId, handle: store.toUri(stagingPath), stagingPath, job };
}

async function logState(
  store: Store,
  targetPath: string,
): Promise<{ logPosition: number | null; logReadFrom: number; logId?: string }> {
  const log = new TableLog(store, targetPath);
  const { position, readFrom, id } = await log.position();
  if (id !== null || position === null)
    return { logPosition: position, logReadFrom: readFrom, ...(id === null ? {} : { logId: id }) };
  // A log with entries but no id (made before logs had one, or its id removed): given one now, so a
  // position in it cannot be taken for one in a log made again after it is deleted.
  await log.makeId();
  const made = await log.readId();
  return { logPosition: position, logReadFrom: readFrom, ...(made === null ? {} : { logId: made }) };
}
