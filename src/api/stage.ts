// stage in its three forms: a new job, task files into an attempt, the attempt dir for a writer.

import { readdir, stat, statfs } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { UsageError } from '../errors.js';
import type { Algorithm, Mode } from '../job/job.js';
import { parsePartitionArg, UNPRINTABLE } from '../paths.js';
import { storeKey } from '../store/resolve.js';
import { pathInStore } from '../store/types.js';
import { stageFiles as stageFilesStep, type StagedSource, type StageFilesResult } from '../steps/stage-files.js';
import { isWriterMarker } from '../steps/attempt-output.js';
import { stageOrResume } from '../steps/stage-job.js';
import {
  either,
  flag,
  handle,
  listOf,
  oneOf,
  operation,
  positiveInt,
  required,
  taskId,
  text,
  texts,
  wholeNumber,
  type OptionTable,
} from './options.js';
import { iso, type Location, type Session } from './session.js';
import { mapLimit } from '../util/pool.js';

/** Local files looked at (stat) at once before staging: the disk waits, not the CPU. */
const LOOKS_AT_ONCE = 32;

export interface StageOptions {
  /** The table directory to write (URI or path). */
  readonly target: string;
  readonly mode?: Mode;
  /** Static partition values in column order, each 'column=value' (raw, escaped as Hive does). */
  readonly partition?: readonly string[];
  /** All partition columns in order: 'dt,region' or ['dt', 'region']. */
  readonly partitionBy?: string | readonly string[];
  readonly stagingDir?: string;
  readonly jobId?: string;
  readonly algorithm?: Algorithm;
  /** Declares tasks 0…N-1 that commit-job must find committed. */
  readonly tasks?: number;
}

const STAGE_OPTIONS: OptionTable<StageOptions> = {
  target: required(text),
  mode: oneOf('create', 'append', 'overwrite'),
  partition: texts,
  partitionBy: either(text, texts),
  stagingDir: text,
  jobId: text,
  algorithm: oneOf('v1', 'v2'),
  tasks: positiveInt,
};

/** `stage --target … --json` */
export interface StageDoc {
  readonly handle: string;
  readonly jobId: string;
  readonly target: string;
  readonly mode: Mode;
  readonly algorithm: Algorithm;
  readonly partitionBy: readonly string[];
  /** Declared task count, null when not declared. */
  readonly tasksDeclared: number | null;
  /** null for a rerun that found its job committed and its staging dir gone. */
  readonly stagedAt: string | null;
  readonly stagedAtMs: number | null;
  /** Whether `--job-id` named a job staged before (a rerun), which this call goes on with. */
  readonly resumed: boolean;
  /** 'staged' (new or resumed), 'committing' (past its commit point: commit-job finishes it), 'committed'. */
  readonly state: 'staged' | 'committing' | 'committed';
  /** Tasks the job has committed (0 for a new job; null when committed and gone). */
  readonly tasksCommitted: number | null;
  /** A resumed job that committed: when (ISO-8601, and epoch milliseconds as status gives them). */
  readonly committedAt?: string;
  readonly committedAtMs?: number;
  /** A resumed staged job: the attempts an earlier run left uncommitted, aborted now (their files never commit). */
  readonly discarded?: readonly string[];
}

/**
 * A new job's target and staging dir must give handles that read back as the same paths. S3 and
 * HDFS URIs are percent-decoded and printed as they are, so a '%' in such a path would print a
 * handle naming another path (another job's, with the same --job-id); a control character is
 * printed escaped. Refused before anything is written.
 */
function checkHandleSafe(loc: Location, raw: string, what: string): void {
  if (loc.uri.scheme !== 'file' && loc.path.includes('%')) {
    throw new UsageError({ reason: 'handle-unsafe-path', what, given: raw, holds: 'percent' });
  }
  // Printed escaped (cli/ui.ts), such a handle would not read back; a newline is refused by parseUri.
  if (UNPRINTABLE.test(loc.path))
    throw new UsageError({ reason: 'handle-unsafe-path', what, given: raw, holds: 'control' });
}

/** The staging dir given (stagingDir, else the config's stagingRoot), checked to be on the target's store. */
async function stagingOf(
  s: Session,
  o: StageOptions,
  target: Location,
): Promise<{ stagingPath?: string; stagingRoot?: string }> {
  const raw = o.stagingDir ?? s.config.stagingRoot;
  if (!raw) return {};
  const what = o.stagingDir ? '--staging-dir' : 'stagingRoot';
  const loc = await s.location(raw);
  checkHandleSafe(loc, raw, what);
  const targetKey = storeKey(target.uri);
  // The same cluster in another spelling (its name service, one of its name nodes) is the same store.
  const path = storeKey(loc.uri) === targetKey ? loc.path : pathInStore(target.store, loc.store.toUri(loc.path));
  if (path === null) {
    throw new UsageError({ reason: 'staging-dir-other-store', what, given: raw, store: targetKey });
  }
  return o.stagingDir ? { stagingPath: path } : { stagingRoot: path };
}

export const stage = operation('stage', STAGE_OPTIONS, async (s: Session, o: StageOptions): Promise<StageDoc> => {
  const mode: Mode = o.mode ?? 'create';
  const algorithm: Algorithm = o.algorithm ?? 'v1';
  const target = await s.location(o.target);
  checkHandleSafe(target, o.target, '--target');
  const staging = await stagingOf(s, o, target);
  const partitionBy =
    typeof o.partitionBy === 'string' ? o.partitionBy.split(',').filter((c) => c !== '') : o.partitionBy;
  const r = await stageOrResume(s.stepEnv(target.store), {
    targetPath: target.path,
    ...staging,
    mode,
    algorithm,
    partition: (o.partition ?? []).map(parsePartitionArg),
    partitionBy,
    jobId: o.jobId,
    tasks: o.tasks,
  });
  const j = r.job;
  const found = r.found;
  const done = found?.state === 'committed' ? found.committed : undefined;
  return {
    handle: r.handle,
    jobId: r.jobId,
    target: j?.target ?? target.store.toUri(target.path),
    mode: j?.mode ?? mode,
    algorithm: j?.algorithm ?? algorithm,
    partitionBy: j?.partitionBy ?? partitionBy ?? [],
    tasksDeclared: j ? (j.tasks ?? null) : (o.tasks ?? null),
    stagedAt: j ? iso(j.stagedAtMs) : null,
    stagedAtMs: j ? j.stagedAtMs : null,
    resumed: found !== undefined,
    state: found?.state === 'committed' || found?.state === 'committing' ? found.state : 'staged',
    tasksCommitted: !found ? 0 : found.state === 'committed' ? null : found.tasksCommitted,
    ...(done ? { committedAt: done.committedAt, committedAtMs: done.committedAtMs } : {}),
    ...(found?.state === 'staged' ? { discarded: found.discarded ?? [] } : {}),
  };
});

/** A file to stage: a local path, or data under a name. */
export type FileSource =
  | string
  | { readonly name: string; readonly stream: Readable }
  | { readonly name: string; readonly data: Buffer | string };

export interface AttemptOptions {
  /** The job handle (what stage returned as `handle`). */
  readonly job: string;
  readonly task: string | number;
  readonly attempt?: number;
  /** The task's partition values, 'column=value', in column order after the job's static ones. */
  readonly partition?: readonly string[];
}

export interface StageFilesOptions extends AttemptOptions {
  readonly files: readonly FileSource[];
  /**
   * The local files may be consumed: renamed into the attempt where the staging dir is on their
   * filesystem, else copied and removed once staged (docs/commands.md, stage --move).
   */
  readonly move?: boolean;
}

const ATTEMPT_OPTIONS: OptionTable<AttemptOptions> = {
  job: required(handle),
  task: required(taskId),
  attempt: wholeNumber,
  partition: texts,
};

function isFileSource(f: unknown): boolean {
  if (typeof f === 'string') return f !== '';
  if (
    f === null ||
    typeof f !== 'object' ||
    typeof (f as { name?: unknown }).name !== 'string' ||
    (f as { name: string }).name === ''
  )
    return false;
  const { stream, data } = f as { stream?: { pipe?: unknown }; data?: unknown };
  return typeof stream?.pipe === 'function' || typeof data === 'string' || Buffer.isBuffer(data);
}

const STAGE_FILES_OPTIONS: OptionTable<StageFilesOptions> = {
  ...ATTEMPT_OPTIONS,
  files: required(listOf('files (a path, { name, data } or { name, stream })', isFileSource)),
  move: flag,
};

/** `stage --job … --task … FILE… --json` and `stage … --print-path --json` */
export interface StageFilesDoc {
  readonly handle: string;
  readonly jobId: string;
  readonly task: string;
  readonly attempt: number;
  /** The task attempt's own dir (URI). */
  readonly attemptDir: string;
  /** Where the files went, or where a writer writes: attemptDir plus the partition path. */
  readonly writeDir: string;
  /** How many files were staged. */
  readonly files: number;
  /** Their bytes. */
  readonly bytes: number;
  /** Their table-relative paths. */
  readonly fileList: readonly string[];
}

async function sourceOf(s: Session, f: FileSource, kinds: FilesystemKinds): Promise<StagedSource> {
  if (typeof f !== 'string') {
    if ('stream' in f) return f;
    const { Readable } = await import('node:stream');
    return { name: f.name, stream: Readable.from([Buffer.from(f.data)]) };
  }
  const localPath = path.resolve(s.init.cwd, f);
  await checkLocal(localPath, kinds);
  return { localPath, name: path.basename(f) };
}

/** The kind of filesystem (statfs f_type) of each device seen: asked once a device, not once a file. */
type FilesystemKinds = Map<number, Promise<number>>;

/** A local path to stage: there, a regular file, not on a kernel filesystem. */
async function checkLocal(localPath: string, kinds: FilesystemKinds): Promise<void> {
  const st = await stat(localPath).catch(() => null);
  // A name that is not valid UTF-8 reaches Node's argv with U+FFFD in it: a name no file has.
  if (!st) throw new UsageError({ reason: 'source-missing', file: localPath, notUtf8: localPath.includes('\uFFFD') });
  if (!st.isFile()) throw new UsageError({ reason: 'source-not-file', file: localPath });
  let kind = kinds.get(st.dev);
  if (!kind)
    kinds.set(
      st.dev,
      (kind = statfs(localPath).then(
        (f) => f.type,
        () => 0,
      )),
    );
  const pseudo = PSEUDO_FILESYSTEMS.get(await kind);
  if (pseudo) throw new UsageError({ reason: 'source-pseudo-fs', path: localPath, filesystem: pseudo, dir: false });
}

/**
 * A local directory's files (stage DIR), named by their paths inside it; a writer's markers
 * (`_SUCCESS` and the like) are left out, as commit-task leaves them out of an attempt dir, and
 * so is every other name starting with '_' or '.' (its dir whole), said in one warning. A
 * symbolic link is refused, not followed: it may point outside the tree or back up it (a copy
 * that never ends), and what it names depends on where the tree is read; rclone too copies none
 * unless told (-L). Nothing is staged until every entry has passed.
 */
async function treeSources(root: string): Promise<{ sources: StagedSource[]; hidden: string[] }> {
  const out: StagedSource[] = [];
  const hidden: string[] = [];
  const walk = async (dir: string, rel: string): Promise<void> => {
    const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const e of entries) {
      const local = path.join(dir, e.name);
      const name = rel ? `${rel}/${e.name}` : e.name;
      if (isWriterMarker(e.name)) continue;
      // Hidden from readers, as Hadoop's FileInputFormat hides it (and a writer's leftovers:
      // _temporary, .spark-staging-*, .hive-staging*, __magic): never published, not looked into.
      if (e.name.startsWith('_') || e.name.startsWith('.')) {
        hidden.push(e.isDirectory() ? `${name}/` : name);
        continue;
      }
      if (e.isSymbolicLink()) throw new UsageError({ reason: 'source-symlink', file: local });
      if (e.isDirectory()) await walk(local, name);
      else if (!e.isFile()) throw new UsageError({ reason: 'source-special', file: local });
      else out.push({ localPath: local, name });
    }
  };
  await walk(root, '');
  if (out.length === 0) throw new UsageError({ reason: 'source-dir-empty', dir: root });
  return { sources: out, hidden };
}

/** The warning for the names stage DIR left out, the first few named. */
function hiddenWarning(root: string, hidden: readonly string[]): string {
  const shown = hidden.slice(0, 5).join(', ');
  const more = hidden.length > 5 ? ` and ${hidden.length - 5} more` : '';
  return `left out of ${root} ${hidden.length} name(s) starting with '_' or '.', which readers of the table skip (as Hadoop's FileInputFormat does) and which may be a writer's leftovers: ${shown}${more}; rename what is data`;
}

/** The one directory among the files given (stage DIR), or null; a directory beside other files is refused. */
async function treeGiven(s: Session, files: readonly FileSource[]): Promise<string | null> {
  const paths = files.filter((f): f is string => typeof f === 'string').map((f) => path.resolve(s.init.cwd, f));
  const isDir = await mapLimit(paths, LOOKS_AT_ONCE, async (p) => (await stat(p).catch(() => null))?.isDirectory());
  const dirs = paths.filter((_, i) => isDir[i]);
  if (dirs.length === 0) return null;
  if (files.length > 1) throw new UsageError({ reason: 'source-dir-with-others', dir: dirs[0]! });
  const pseudo = PSEUDO_FILESYSTEMS.get((await statfs(dirs[0]!).catch(() => null))?.type ?? 0);
  if (pseudo) throw new UsageError({ reason: 'source-pseudo-fs', path: dirs[0]!, filesystem: pseudo, dir: true });
  return dirs[0]!;
}

/**
 * Linux filesystems whose files the kernel makes up as they are read (statfs f_type): /proc's say
 * size 0 and copy as nothing; /sys's say 4096 and a copy of one spun for ever.
 */
const PSEUDO_FILESYSTEMS = new Map<number, string>([
  [0x9fa0, 'procfs'],
  [0x62656572, 'sysfs'],
  [0x64626720, 'debugfs'],
  [0x74726163, 'tracefs'],
  [0x27e0eb, 'cgroupfs'],
  [0x63677270, 'cgroup2fs'],
  [0x73636673, 'securityfs'],
  [0x62656570, 'configfs'],
  [0xde5e81e4, 'efivarfs'],
  [0xcafe4a11, 'bpffs'],
]);

async function stageInto(
  s: Session,
  o: AttemptOptions,
  files: readonly StagedSource[],
  form: { readonly printPath?: boolean; readonly tree?: boolean; readonly move?: boolean },
): Promise<StageFilesDoc> {
  const job = await s.job(o.job);
  const r: StageFilesResult = await stageFilesStep(s.stepEnv(job.store), {
    stagingPath: job.path,
    task: String(o.task),
    attempt: o.attempt,
    partition: (o.partition ?? []).map(parsePartitionArg),
    files,
    ...form,
  });
  return {
    handle: job.store.toUri(job.path),
    jobId: r.jobId,
    task: r.task,
    attempt: r.attempt,
    attemptDir: r.attemptDir,
    writeDir: r.writeDir,
    files: r.files.length,
    bytes: r.bytes,
    fileList: r.files,
  };
}

export const stageFiles = operation(
  'stageFiles',
  STAGE_FILES_OPTIONS,
  async (s: Session, o: StageFilesOptions): Promise<StageFilesDoc> => {
    const tree = await treeGiven(s, o.files);
    if (tree !== null) {
      const { sources, hidden } = await treeSources(tree);
      if (hidden.length) s.warn(hiddenWarning(tree, hidden));
      return stageInto(s, o, sources, { tree: true, move: o.move });
    }
    // Each checked (its first failure, in the order given, is the one told), many at a time.
    const kinds: FilesystemKinds = new Map();
    const looked = await mapLimit(o.files, LOOKS_AT_ONCE, (f) =>
      sourceOf(s, f, kinds).then(
        (src) => ({ src }),
        (error: unknown) => ({ error }),
      ),
    );
    const bad = looked.find((l) => 'error' in l);
    if (bad && 'error' in bad) throw bad.error;
    const sources = looked.map((l) => (l as { src: StagedSource }).src);
    return stageInto(s, o, sources, { move: o.move });
  },
);

/** The attempt dir for a writer that writes there itself (`stage --print-path`); creates it. */
export const attemptPath = operation(
  'attemptPath',
  ATTEMPT_OPTIONS,
  async (s: Session, o: AttemptOptions): Promise<StageFilesDoc> => {
    return stageInto(s, o, [], { printPath: true });
  },
);
