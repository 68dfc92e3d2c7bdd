// A job's committed output, as commit-job reads it: the committed claims of the current app
// attempt, their files gathered into one output tree, and each task's output checked against
// what is really on the store before the commit point (protocol.md §5.9).

import { posix } from 'node:path';
import { BlockedError, ConflictError, CorruptManifestError, IncompleteError, InternalError } from '../errors.js';
import {
  claimRootPath,
  isAdoptedRoot,
  readClaimRecords,
  type Claim,
  type ClaimRecord,
  type TaskFile,
} from '../job/claims.js';
import { VersionDigest } from '../job/claim-files.js';
import { staticPrefix, type JobManifest } from '../job/job.js';
import { ATTEMPT_MARKER } from '../job/layout.js';
import { checkUploadsPending } from '../job/pending-uploads.js';
import { OutputStats, OutputTree, PathClash, type SourceTree } from '../plan/plan.js';
import type { FileInfo } from '../plan/tree.js';
import { compareTasks, isDataName } from '../paths.js';
import type { Entry, Store } from '../store/types.js';
import { forEachInTree } from '../store/walk.js';
import { listsSiblingsAsOne } from '../store/operations.js';
import { isTempName } from '../store/temp-names.js';
import { mapLimit } from '../util/pool.js';
import { checkTaskFile } from './attempt-output.js';
import type { OpenJob } from '../job/open.js';
import { againAdvice, halfMadeAdoption, halfMadeAdvice } from '../job/adoption.js';
import { declaredNotCommitted } from '../job/tasks.js';
import type { StepEnv } from './env.js';

/** Committed claims of the current app attempt; a claim still committing stops the commit. */
export function committedTasks<C extends Omit<Claim, 'files'>>(job: JobManifest, claims: ReadonlyMap<string, C>): C[] {
  const pending = [...claims.values()].filter((c) => c.state !== 'committed');
  if (pending.length) {
    const c = pending[0]!;
    const { task, taskAttempt, host, pid } = c;
    throw new ConflictError({ reason: 'task-still-committing', task, taskAttempt, host, pid });
  }
  const committed = [...claims.values()];
  const missing = declaredNotCommitted(job, claims);
  if (missing.length) {
    throw new IncompleteError({ reason: 'tasks-missing', missing, declared: job.tasks! });
  }
  // An overwrite of nothing empties what it replaces: only a task committed with no files says so on purpose.
  if (committed.length === 0 && job.mode === 'overwrite' && !job.adopted)
    throw new IncompleteError({ reason: 'no-task-committed', jobId: job.jobId });
  return committed.sort((a, b) => compareTasks(a.task, b.task));
}

/** The job's output as read from its committed claims, one claim's files at a time. */
export interface JobOutput {
  readonly claims: readonly ClaimRecord[];
  /** Per claim (same order): the task, and where its files are; `files` is left empty. */
  readonly sources: readonly SourceTree[];
  /**
   * The output tree (v1; v2 published its files already). The planner takes it (takeTree): the
   * step runner holds these reads to the end of the step, and a million files' tree (~100 MB)
   * is not kept while the plan is applied.
   */
  tree: OutputTree | null | undefined;
  readonly stats: OutputStats;
  /** Per claim, how many of its files are in its output dir (not pending uploads). */
  readonly inDir: readonly number[];
  /** The claims' pending uploads (S3). */
  readonly uploads: readonly TaskFile[];
  /**
   * Temp files in the committed output dirs: of a `stage` whose file landed as its attempt was committed. Never data.
   */
  readonly temps: readonly string[];
}

/**
 * The committed claims, checked like input from the command line (protocol.md §5.11) and against
 * what is on the store: a task whose output is gone is never committed (protocol.md §5.9). Each claim's file
 * list goes straight into the output tree and is then let go: nothing holds a list per file.
 */
export async function readOutput(env: StepEnv, open: OpenJob): Promise<JobOutput> {
  const claims = await committedClaims(env, open);
  const { tree, stats, uploads, inDir } = gatherFiles(env, open, claims);
  const sources: SourceTree[] = claims.map((c) => ({ task: c.task, root: c.root ?? '', files: [] }));
  const checks = tree ? await checkOnStore(env, open, { claims, tree, inDir, uploads }) : undefined;
  return { claims, sources, tree, stats, inDir, uploads, temps: checks?.flatMap((c) => c.temps) ?? [] };
}

/** The committed claims of the job's app attempt, in task order: a half-made adoption commits nothing. */
async function committedClaims(env: StepEnv, { job, layout }: OpenJob): Promise<ClaimRecord[]> {
  const { store } = env;
  // A claim made for an earlier job of this id (staged again after an abort) stops the commit (exit 4).
  const read = await readClaimRecords(
    store,
    layout,
    { jobId: job.jobId, appAttempt: job.appAttempt, jobStagedAtMs: job.stagedAtMs },
    env.concurrency,
  );
  // A half-made adoption would commit nothing (or part of the leftover) and write a _SUCCESS.
  const halfMade = await halfMadeAdoption(store, layout, job, read);
  if (halfMade !== null)
    throw new BlockedError({
      reason: 'half-made-adoption',
      jobId: job.jobId,
      what: halfMade,
      advice: halfMadeAdvice(job),
    });
  const claims = committedTasks(job, read);
  env.emit({ type: 'output', files: claims.reduce((n, c) => n + c.fileCount, 0) });
  return claims;
}

/** Every claim's files, read once each: checked, into the output tree (v1) or against the others (v2). */
function gatherFiles(env: StepEnv, { job, layout }: OpenJob, claims: readonly ClaimRecord[]) {
  const tree = job.algorithm === 'v1' ? new OutputTree(claims.map((c) => c.task)) : null;
  // v2: the tasks published already; two of them that wrote one path left the target with one of them.
  const published = job.algorithm === 'v2' ? new OutputTree(claims.map((c) => c.task)) : null;
  const stats = new OutputStats(job.partitionBy.length);
  const uploads: TaskFile[] = [];
  const inDir: number[] = [];
  const prefix = staticPrefix(job);
  claims.forEach((c, si) => {
    let n = 0;
    c.eachFile((f) => {
      try {
        checkTaskFile(job, f.path, prefix, true);
        tree?.add(si, f.path, f.size, f.upload);
        if (published) addPublished(published, si, f.path);
      } catch (e) {
        // Two tasks with one path are a conflict; anything else is the claim's own damage.
        if (e instanceof ConflictError) throw finalClash(e, job);
        throw CorruptManifestError.badField(
          env.store.toUri(layout.claimFile(job.appAttempt, c.task)),
          'files',
          (e as Error).message,
        );
      }
      stats.add(f.path, f.size);
      if (f.upload) uploads.push(f);
      else n++;
    });
    inDir.push(n);
  });
  return { tree, stats, uploads, inDir };
}

/**
 * Each committed task's output dir holds what its claim lists, and every pending upload is still
 * pending (listed at the same time as the output dirs).
 */
async function checkOnStore(
  env: StepEnv,
  { job, layout }: OpenJob,
  read: {
    claims: readonly ClaimRecord[];
    tree: OutputTree;
    inDir: readonly number[];
    uploads: readonly TaskFile[];
  },
): Promise<OutputCheck[]> {
  const { store } = env;
  const { claims, tree, inDir } = read;
  const checks = claims.map(
    (c, si) =>
      new OutputCheck(tree, {
        root: claimRootPath(layout, job.targetPath, c.root!),
        si,
        expected: inDir[si]!,
        adopted: isAdoptedRoot(c.root!),
        versionDigest: c.versionDigest ?? null,
      }),
  );
  const pending = checkUploadsPending(store, job.targetPath, read.uploads);
  pending.catch(() => undefined); // awaited below
  await listOutputs(store, checks, env.concurrency);
  const problems = await mapLimit(checks, env.concurrency, (c) => c.problem(store));
  const i = problems.findIndex((p) => p !== null);
  if (i >= 0) {
    const c = claims[i]!;
    throw new BlockedError({
      reason: 'output-damaged',
      task: c.task,
      taskAttempt: c.taskAttempt,
      dir: store.toUri(claimRootPath(layout, job.targetPath, c.root!)),
      problem: problems[i]!,
      advice: againAdvice(job, 'abort the job and run it again'),
    });
  }
  const lost = await pending;
  if (lost !== null)
    throw new BlockedError({
      reason: 'upload-gone',
      path: lost,
      advice: againAdvice(job, 'abort the job and run it again'),
    });
  return checks;
}

/** The output's tree, let go by `output` (see JobOutput.tree); once only. */
export function takeTree(output: JobOutput): OutputTree | null {
  const { tree } = output;
  if (tree === undefined) throw new InternalError('the output tree was taken already');
  output.tree = undefined;
  return tree;
}

/**
 * Committed tasks whose paths clash: a commit is final (no attempt of a committed task commits
 * again), so the way out is the whole job's, not a task's (the advice "rename one and commit
 * that task again" would end in exit 3 or exit 4).
 */
function finalClash(e: ConflictError, job: JobManifest): ConflictError {
  if (!(e instanceof PathClash)) return e;
  const advice = againAdvice(job, 'abort the job and run it again with distinct file names');
  return new BlockedError({ ...e.detail, when: 'job', advice }, { cause: e });
}

/** A v2 task's file, checked against the other tasks' (they were published at commit-task). */
function addPublished(published: OutputTree, si: number, path: string): void {
  try {
    published.add(si, path, 0);
  } catch (e) {
    if (!(e instanceof PathClash)) throw e;
    throw new BlockedError({ ...e.detail, when: 'v2-published' }, { cause: e });
  }
}

/**
 * What is wrong with a committed task's output on the store, or null: it must hold exactly the
 * files its claim lists (a directory rename publishes whatever is there), with their sizes where
 * the listing tells them. The claim's files are source `si` of the tree (`expected` of them in
 * the dir); the listing is compared entry by entry as it comes, never held.
 */
class OutputCheck {
  private found = 0;
  private odd: string | null = null;
  private extra: string | null = null;
  private resized: string | null = null;
  private readonly versions = new VersionDigest();
  /** Temp files seen (store paths): a stage's, never data; removed before the commit point. */
  readonly temps: string[] = [];

  readonly root: string;
  /** The claim's source index in the tree. */
  readonly si: number;
  /** How many of the claim's files are in the dir (not pending uploads). */
  private readonly expected: number;
  private readonly adopted: boolean;
  private readonly versionDigest: string | null;

  constructor(
    private readonly tree: OutputTree,
    claimed: { root: string; si: number; expected: number; adopted: boolean; versionDigest: string | null },
  ) {
    this.root = claimed.root;
    this.si = claimed.si;
    this.expected = claimed.expected;
    this.adopted = claimed.adopted;
    this.versionDigest = claimed.versionDigest;
  }

  private listed(path: string): FileInfo | undefined {
    const f = this.tree.at(path)?.file;
    return f && f.source === this.si && !f.upload ? f : undefined;
  }

  /** One entry of the output dir, `name` relative to it. */
  see(e: Entry): void {
    // An engine's own markers and work dirs sit beside the output it had merged (adopt, protocol.md §6.2).
    const top = e.name.split('/', 1)[0]!;
    if (this.adopted && !isDataName(top) && !this.listed(top)) return;
    if (e.kind === 'file') {
      if (e.name === ATTEMPT_MARKER) return;
      if (isTempName(posix.basename(e.name))) return void this.temps.push(posix.join(this.root, e.name));
      const f = this.listed(e.name);
      if (!f) this.extra ??= `holds '${e.name}', which its claim does not list`;
      else {
        this.found++;
        // A sha256 per file only where the claim has a digest to compare with.
        if (this.versionDigest !== null) this.versions.add(e.name, e.version);
        if (e.size >= 0 && e.size !== f.size)
          this.resized ??= `has '${e.name}' at ${e.size} bytes, the claim recorded ${f.size}`;
      }
    } else if (e.kind !== 'dir') this.odd ??= e.name;
  }

  async problem(store: Store): Promise<string | null> {
    if (this.odd !== null) return `holds '${this.odd}', which is not a regular file`;
    if (this.found < this.expected) return `has lost '${await lostFile(store, this.root, this.tree, this.si)}'`;
    if (this.resized ?? this.extra) return this.resized ?? this.extra;
    // Same names, same sizes: a file written again since commit-task still shows in its version.
    if (this.versionDigest !== null && this.versions.value() !== this.versionDigest)
      return 'has a file written again since its commit-task (same name and size, another version)';
    return null;
  }
}

/**
 * Lists every committed task's output dir into its check. On an object store the attempt dirs
 * of one parent are listed as one paged listing (a request per 1,000 files, not one per task);
 * elsewhere a listing costs a request per directory anyway, so each dir is walked alone.
 */
async function listOutputs(store: Store, checks: readonly OutputCheck[], concurrency: number): Promise<void> {
  const byParent = new Map<string, Map<string, OutputCheck>>();
  const alone: OutputCheck[] = [];
  if (!listsSiblingsAsOne(store)) alone.push(...checks);
  else {
    for (const c of checks) {
      const parent = posix.dirname(c.root);
      (byParent.get(parent) ?? byParent.set(parent, new Map()).get(parent)!).set(posix.basename(c.root), c);
    }
    for (const [parent, members] of byParent) {
      if (members.size > 1) continue;
      alone.push(...members.values());
      byParent.delete(parent);
    }
  }
  await Promise.all([
    mapLimit([...byParent], concurrency, ([parent, members]) =>
      forEachInTree(store, parent, {}, (e) => {
        const slash = e.name.indexOf('/');
        const check = slash > 0 ? members.get(e.name.slice(0, slash)) : undefined;
        check?.see({ ...e, name: e.name.slice(slash + 1) });
      }),
    ),
    mapLimit(alone, concurrency, (c) => forEachInTree(store, c.root, {}, (e) => c.see(e))),
  ]);
}

/** The first file of source `si` that its output dir no longer has (only on the error path). */
async function lostFile(store: Store, root: string, tree: OutputTree, si: number): Promise<string> {
  const there = new Set<string>();
  await forEachInTree(store, root, {}, (e) => e.kind === 'file' && there.add(e.name));
  let lost = '';
  tree.forEachFile((path, f) => {
    if (lost === '' && f.source === si && !f.upload && !there.has(path)) lost = path;
  });
  return lost;
}
