// adopt: turns what a killed Hadoop, Spark or Hive job left into a stagecommit job whose tasks are
// the engine's committed output, moving no data byte: one rename of the leftover into the staging
// dir where directories rename, or claims that point at the objects where they are (S3).
// What it is: protocol.md §6.2; it keeps §5.18.

import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import { BlockedError, ConflictError, UsageError } from '../errors.js';
import { encodeClaim, type Claim } from '../job/claims.js';
import { decide, decidedBy } from '../job/decisions.js';
import { ADOPTED_DIR, defaultStagingRoot, JobLayout, SUCCESS_FILE, taskAttemptName } from '../job/layout.js';
import { kindOfName, recogniseLeftover } from '../leftover/recognise.js';
import type { Leftover, ListedEntry } from '../leftover/types.js';
import { checkRelativePath, isDataName, partitionOfFile } from '../paths.js';
import type { Entry, Store } from '../store/types.js';
import { adoptStrategy, renamesBetween } from '../store/operations.js';
import { forEachLimit, mapLimit } from '../util/pool.js';
import type { StepEnv } from './env.js';
import { Progress } from './progress.js';
import { stageJob } from './stage-job.js';
import { storeClock } from './store-clock.js';

export interface AdoptInput {
  readonly leftoverPath: string;
  /** The table to publish into; default: the directory that holds the leftover. */
  readonly targetPath?: string;
  readonly mode?: 'append' | 'overwrite';
  /** Declared task count: commit-job then refuses (exit 5) while a task is missing. */
  readonly tasks?: number;
  /** A leftover changed more recently than this may still be written by a live engine (exit 4). */
  readonly olderThanMs: number;
  readonly stagingRoot?: string;
  readonly dryRun?: boolean;
}

export type AdoptOperation =
  | { readonly op: 'create'; readonly path: string }
  | { readonly op: 'rename'; readonly from: string; readonly to: string };

export interface AdoptResult {
  readonly dryRun: boolean;
  readonly jobId: string;
  readonly handle: string;
  readonly target: string;
  readonly mode: 'append' | 'overwrite';
  readonly leftover: {
    readonly path: string;
    readonly kind: Leftover['kind'];
    readonly engineJobId: string | null;
    readonly stage: string;
    readonly ageSeconds: number;
  };
  /** The tasks whose output the leftover holds: committed in the new job. */
  readonly committedTasks: readonly string[];
  readonly tasksDeclared: number | null;
  /** Who declared the task count: --tasks, or adopt itself for gaps in the numbering (highest task + 1). */
  readonly tasksDeclaredBy: 'option' | 'gaps' | null;
  /** Declared tasks without committed output: commit-job would exit 5 while any is listed. */
  readonly tasksToRun: readonly string[];
  /** Task ids missing from the numbering of the committed ones. */
  readonly gaps: readonly string[];
  readonly discarded: Leftover['discarded'];
  readonly partitionBy: readonly string[];
  readonly partitions: readonly string[];
  readonly files: number;
  readonly bytes: number;
  /** The store operations adopting makes (or, in a dry run, would make). */
  readonly operations: readonly AdoptOperation[];
}

/** Directories of a leftover listed at once. */
const LIST_PARALLELISM = 16;

/** A leftover's listing, or the first entry in it that is neither a file nor a directory (its URI). */
export type LeftoverListing =
  { readonly entries: ListedEntry[]; readonly special: null } | { readonly entries: null; readonly special: string };

/**
 * Every file and directory under `dir`, relative to it, with sizes and times, a directory's
 * entries right after it; or, where an entry is neither (an engine never leaves one), that entry.
 * The directories of one level are listed at once (one after another, a leftover of 100 tasks ×
 * 20 partitions took 2,100 round trips in a row).
 */
export async function listLeftover(
  store: Store,
  dir: string,
  onListed?: (dirs: number) => void,
): Promise<LeftoverListing> {
  const inside = new Map<string, Entry[]>();
  for (let level = [dir]; level.length;) {
    const listed = await mapLimit(level, LIST_PARALLELISM, (d) => store.list(d, { details: true }));
    onListed?.(inside.size + level.length);
    const special = listed.flat().find((e) => e.kind !== 'dir' && e.kind !== 'file');
    if (special) return { entries: null, special: store.toUri(special.path) };
    listed.forEach((entries, i) => inside.set(level[i]!, entries));
    level = listed.flat().flatMap((e) => (e.kind === 'dir' ? [e.path] : []));
  }
  const out: ListedEntry[] = [];
  const put = (d: string, rel: string): void => {
    for (const e of inside.get(d) ?? []) {
      const path = rel ? `${rel}/${e.name}` : e.name;
      if (e.kind === 'dir') {
        out.push({ path, kind: 'dir', size: 0, mtimeMs: e.mtimeMs });
        put(e.path, path);
      } else out.push({ path, kind: 'file', size: e.size, mtimeMs: e.mtimeMs });
    }
  };
  put(dir, '');
  return { entries: out, special: null };
}

/** What the other of two adopts of one leftover, or its engine, did to it while this one ran. */

/**
 * The leftover as its listing shows it. A listing cut short because the leftover moved away after
 * adopt looked at it (the other of two adopts renamed it first) is said to be that, not "empty".
 */
async function recognised(env: StepEnv, leftoverPath: string, ownMtimeMs: number): Promise<Leftover> {
  const { store } = env;
  const uri = store.toUri(leftoverPath);
  const { entries, special } = await listLeftover(store, leftoverPath, (n) =>
    env.emit({ type: 'progress', label: 'reading the leftover: directories', done: n, total: n }),
  );
  if (special !== null) throw new UsageError({ reason: 'leftover-special-file', file: special });
  try {
    return recogniseLeftover(uri, posix.basename(leftoverPath), entries, ownMtimeMs);
  } catch (e) {
    if (e instanceof UsageError && (await store.stat(leftoverPath)) === null)
      throw new BlockedError({ reason: 'leftover-taken', leftover: uri, jobs: null });
    throw e;
  }
}

/** The adopted job's id: what it was, the engine's id for it, and a random tail. */
function adoptedJobId(l: Leftover): string {
  const kind = { 'hadoop-temporary': 'hadoop', 'spark-staging': 'spark', 'hive-staging': 'hive' }[l.kind];
  const engine = (l.engineJobId ?? '').replace(/[^A-Za-z0-9_.-]/g, '').slice(0, 80);
  return `adopted-${kind}${engine ? `-${engine}` : ''}-${randomBytes(4).toString('hex')}`;
}

async function checkTarget(store: Store, leftoverPath: string, targetPath: string): Promise<string> {
  const target = await store.stat(targetPath);
  if (!target || target.kind !== 'dir') {
    throw new UsageError({ reason: 'adopt-target-missing', target: store.toUri(targetPath) });
  }
  const rel = posix.relative(targetPath, leftoverPath);
  const inLeftover = posix.relative(leftoverPath, targetPath);
  if (inLeftover === '' || !inLeftover.startsWith('..')) {
    throw new UsageError({
      reason: 'adopt-target-in-leftover',
      target: store.toUri(targetPath),
      itself: inLeftover === '',
    });
  }
  if (adoptStrategy(store) === 'rename') return rel;
  // Without rename the output is published from where it is: it must be inside the target, where readers never look.
  if (rel.startsWith('..') || rel.split('/').every(isDataName)) {
    throw new UsageError({
      reason: 'leftover-outside-target',
      leftover: store.toUri(leftoverPath),
      target: store.toUri(targetPath),
    });
  }
  return rel;
}

export async function adopt(env: StepEnv, input: AdoptInput): Promise<AdoptResult> {
  const { store } = env;
  const leftoverPath = input.leftoverPath.replace(/\/+$/, '') || '/';
  const uri = store.toUri(leftoverPath);
  const leftover = await findLeftover(env, leftoverPath);
  const tooYoung = (ageMs: number) =>
    new ConflictError({
      reason: 'leftover-recent',
      leftover: uri,
      ageSeconds: leftover.newestMtimeMs < 0 ? null : Math.max(0, Math.round(ageMs / 1000)),
    });
  const ageMs = env.now() - leftover.newestMtimeMs;
  if (leftover.newestMtimeMs < 0 || ageMs < input.olderThanMs) throw tooYoung(ageMs);
  const targetPath = (input.targetPath ?? posix.dirname(leftoverPath)).replace(/\/+$/, '') || '/';
  const leftoverRel = await checkTarget(store, leftoverPath, targetPath);
  checkDeclaredTasks(uri, leftover, input.tasks);
  // Gaps mean tasks that never committed: declared up to the highest one found, commit-job then
  // refuses (exit 5) naming them, instead of publishing partial output.
  const numbered = leftover.tasks.filter((t) => /^\d+$/.test(t)).map(Number);
  const tasks = input.tasks ?? (leftover.gaps.length ? numbered.reduce((a, t) => Math.max(a, t), 0) + 1 : undefined);
  const jobId = adoptedJobId(leftover);
  const stagingPath = posix.join(input.stagingRoot ?? defaultStagingRoot(targetPath), jobId);
  await checkRenamesInto(store, leftoverPath, stagingPath, targetPath);
  const rootOf = (root: string) =>
    adoptStrategy(store) === 'rename' ? posix.join(ADOPTED_DIR, root) : `t:${posix.join(leftoverRel, root)}`;
  const a: Adoption = {
    input,
    leftover,
    leftoverPath,
    ageMs,
    targetPath,
    stagingPath,
    jobId,
    tasks,
    claims: adoptedClaims(env, uri, leftover, jobId, rootOf),
  };
  const result = adoptResult(store, a);
  if (input.dryRun) return result;
  // The leftover's times are the store's: old enough by this machine's clock, it must be so by the store's too (a
  // probe), as a clock far ahead takes a running engine's output for abandoned (protocol.md §10).
  const storeAgeMs = (await storeClock(env, posix.dirname(leftoverPath)))() - leftover.newestMtimeMs;
  if (storeAgeMs < input.olderThanMs) throw tooYoung(storeAgeMs);
  await adoptJob(env, a, result);
  // The rename comes last: until it, the leftover is where it was and the new job publishes nothing.
  if (adoptStrategy(store) === 'rename') await moveLeftover(env, leftoverPath, stagingPath);
  return result;
}

/** The leftover at `leftoverPath`, a directory recognised by its name, then by its listing. */
async function findLeftover(env: StepEnv, leftoverPath: string): Promise<Leftover> {
  const { store } = env;
  const uri = store.toUri(leftoverPath);
  const self = await store.stat(leftoverPath);
  if (!self) throw new UsageError({ reason: 'leftover-missing', leftover: uri });
  if (self.kind === 'symlink') throw new UsageError({ reason: 'leftover-symlink', leftover: uri });
  if (self.kind !== 'dir') throw new UsageError({ reason: 'leftover-not-dir', leftover: uri });
  // The name first: a listing of something else (`adopt /`) could be a walk of the whole store.
  if (kindOfName(posix.basename(leftoverPath)) === null)
    recogniseLeftover(uri, posix.basename(leftoverPath), [], self.mtimeMs);
  return recognised(env, leftoverPath, self.mtimeMs);
}

/** The leftover moves into the staging dir with one rename, which cannot cross filesystems. */
async function checkRenamesInto(
  store: Store,
  leftoverPath: string,
  stagingPath: string,
  targetPath: string,
): Promise<void> {
  if (adoptStrategy(store) !== 'rename') return;
  if (await renamesBetween(store, posix.dirname(leftoverPath), posix.dirname(stagingPath))) return;
  throw new UsageError({
    reason: 'leftover-other-filesystem',
    leftover: store.toUri(leftoverPath),
    stagingDir: store.toUri(stagingPath),
    target: store.toUri(targetPath),
  });
}

/** One adopt's leftover and the job it becomes. */
interface Adoption {
  readonly input: AdoptInput;
  readonly leftover: Leftover;
  readonly leftoverPath: string;
  /** The leftover's age by this machine's clock. */
  readonly ageMs: number;
  readonly targetPath: string;
  readonly stagingPath: string;
  readonly jobId: string;
  /** The task count declared, by --tasks or for the gaps in the numbering. */
  readonly tasks: number | undefined;
  /** One committed claim per task found. */
  readonly claims: readonly Claim[];
}

/** What adopting does (or, in a dry run, would do): the job it makes and the operations on the store. */
function adoptResult(store: Store, a: Adoption): AdoptResult {
  const { leftover, tasks, input } = a;
  const uri = store.toUri(a.leftoverPath);
  const layout = new JobLayout(a.stagingPath);
  const operations: AdoptOperation[] = [
    { op: 'create', path: store.toUri(layout.jobFile) },
    ...a.claims.flatMap((c) =>
      [layout.decisionFile(0, c.taskAttempt), layout.claimFile(0, c.task)].map((p) => ({
        op: 'create' as const,
        path: store.toUri(p),
      })),
    ),
    ...(adoptStrategy(store) === 'rename'
      ? [{ op: 'rename' as const, from: uri, to: store.toUri(posix.join(a.stagingPath, ADOPTED_DIR)) }]
      : []),
  ];
  return {
    dryRun: Boolean(input.dryRun),
    jobId: a.jobId,
    handle: store.toUri(a.stagingPath),
    target: store.toUri(a.targetPath),
    mode: input.mode ?? leftover.defaultMode,
    leftover: {
      path: uri,
      kind: leftover.kind,
      engineJobId: leftover.engineJobId,
      stage: leftover.stage,
      ageSeconds: Math.round(a.ageMs / 1000),
    },
    committedTasks: leftover.tasks,
    tasksDeclared: tasks ?? null,
    tasksDeclaredBy: input.tasks !== undefined ? 'option' : tasks !== undefined ? 'gaps' : null,
    tasksToRun: tasks === undefined ? [] : missingOf(tasks, new Set(leftover.tasks)),
    gaps: leftover.gaps.map(String),
    discarded: leftover.discarded,
    partitionBy: leftover.partitionBy,
    partitions: leftover.partitions,
    files: leftover.files,
    bytes: leftover.bytes,
    operations,
  };
}

/**
 * Stages the adopted job, then decides and claims its tasks as commit-task would: a later
 * `abort --task` of one is refused (protocol.md §5.9). Tasks go at once (one after another,
 * 10,000 tasks took minutes on S3).
 */
async function adoptJob(env: StepEnv, a: Adoption, result: AdoptResult): Promise<void> {
  const { store } = env;
  const { claims } = a;
  const layout = new JobLayout(a.stagingPath);
  const { job } = await stageJob(env, {
    targetPath: a.targetPath,
    stagingPath: a.stagingPath,
    mode: result.mode,
    algorithm: 'v1',
    partition: [],
    partitionBy: a.leftover.partitionBy,
    jobId: a.jobId,
    tasks: a.tasks,
    adopted: { leftover: result.leftover.path, leftoverPath: a.leftoverPath, tasks: claims.length },
  });
  const progress = new Progress(env, 'claiming tasks', claims.length);
  await forEachLimit(claims, env.concurrency, async (c) => {
    await decide(store, layout, 0, {
      taskAttempt: c.taskAttempt,
      outcome: 'commit',
      atMs: env.now(),
      by: `adopt by ${decidedBy(env)}`,
      jobStagedAtMs: job.stagedAtMs,
    });
    await store.createExclusive(layout.claimFile(0, c.task), encodeClaim({ ...c, jobStagedAtMs: job.stagedAtMs }));
    progress.item(c.task);
  });
}

/** One committed claim per task found, its files checked as commit-task checks a task's files. */
function adoptedClaims(
  env: StepEnv,
  uri: string,
  leftover: Leftover,
  jobId: string,
  rootOf: (root: string) => string,
): Claim[] {
  const claims: Claim[] = leftover.sources.map((s) => ({
    task: s.task,
    attempt: 0,
    taskAttempt: taskAttemptName(jobId, s.task, 0),
    appAttempt: 0,
    state: 'committed',
    claimedAtMs: env.now(),
    host: env.host,
    pid: env.pid,
    root: rootOf(s.root),
    files: s.files,
  }));
  for (const f of claims.flatMap((c) => c.files)) {
    try {
      checkRelativePath(f.path, 'task file');
      if (f.path === SUCCESS_FILE)
        throw new Error(`a task wrote '${SUCCESS_FILE}', which would collide with the job's own marker`);
      partitionOfFile(f.path, leftover.partitionBy, '');
    } catch (e) {
      throw new UsageError({ reason: 'leftover-file-invalid', leftover: uri, problem: (e as Error).message });
    }
  }
  return claims;
}

function checkDeclaredTasks(uri: string, leftover: Leftover, tasks: number | undefined): void {
  if (tasks === undefined) return;
  if (!Number.isInteger(tasks) || tasks < 1) throw new UsageError({ reason: 'tasks-invalid', got: String(tasks) });
  if (leftover.jobCommitBegun) {
    throw new UsageError({ reason: 'leftover-tasks-uncountable', leftover: uri });
  }
  const beyond = leftover.tasks.filter((t) => Number(t) >= tasks);
  if (beyond.length) throw new UsageError({ reason: 'leftover-task-beyond', leftover: uri, task: beyond[0]!, tasks });
}

/** One rename; if it fails the half-made job goes (it holds only its own manifests), so that nothing is changed. */
async function moveLeftover(env: StepEnv, leftoverPath: string, stagingPath: string): Promise<void> {
  const { store } = env;
  const dst = posix.join(stagingPath, ADOPTED_DIR);
  try {
    await store.rename(leftoverPath, dst);
  } catch (e) {
    if ((await store.stat(dst)) !== null) throw e;
    await store.delete(stagingPath, true).catch(() => false);
    if ((await store.stat(leftoverPath)) === null) {
      // The loser of two adopts of one leftover: the other one renamed it first.
      throw new BlockedError({
        reason: 'leftover-taken',
        leftover: store.toUri(leftoverPath),
        jobs: store.toUri(posix.dirname(stagingPath)),
      });
    }
    throw e;
  }
}

/** Declared tasks 0…n-1 that the leftover does not hold. */
function missingOf(n: number, held: ReadonlySet<string>): string[] {
  return Array.from({ length: n }, (_, i) => String(i)).filter((t) => !held.has(t));
}
