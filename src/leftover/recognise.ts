// Recognises what a killed Hadoop, Spark or Hive job left, from its name and a listing of it:
// the output still to publish, as committed tasks, and what goes. Pure: no store.

import { UsageError } from '../errors.js';
import { isDataName, normalizeColumn } from '../paths.js';
import { gapsIn, NotLayoutError, readHadoopTree, type HadoopTree } from './hadoop-tree.js';
import type { Discarded, Leftover, LeftoverKind, LeftoverSource, ListedEntry } from './types.js';

export const SPARK_STAGING = /^\.spark-staging-(.+)$/;
export const HIVE_STAGING = /^\.hive-staging(?:_hive_)?(.*)$/;
/** Hive's final output dir for the first file sink of a query. */
export const HIVE_OUTPUT = '-ext-10000';

/** The kind a leftover's name says it is, or null. */
export function kindOfName(name: string): LeftoverKind | null {
  if (name === '_temporary') return 'hadoop-temporary';
  if (SPARK_STAGING.test(name)) return 'spark-staging';
  if (HIVE_STAGING.test(name)) return 'hive-staging';
  return null;
}

interface Parts {
  engineJobId: string | null;
  stage: string;
  jobCommitBegun: boolean;
  sources: LeftoverSource[];
  discarded: Discarded[];
  appAttempts: readonly number[];
}

/**
 * `label` names the leftover in messages (its URI). Throws UsageError (exit 2) naming what was
 * found when the name or the content is not a layout these engines write, or holds nothing to adopt.
 */
export function recogniseLeftover(
  label: string,
  name: string,
  entries: readonly ListedEntry[],
  ownMtimeMs: number,
): Leftover {
  const kind = kindOfName(name);
  if (!kind) {
    throw new UsageError({ reason: 'not-a-leftover', leftover: label });
  }
  if (entries.length === 0) throw new UsageError({ reason: 'leftover-empty', leftover: label, stage: null });
  const { parts, sources, discarded } = committedParts(label, kind, name, entries);
  if (sources.every((s) => s.files.length === 0)) {
    throw new UsageError({ reason: 'leftover-empty', leftover: label, stage: parts.stage });
  }
  const partitionBy = partitionColumns(label, sources);
  // A dynamic partition overwrite always writes partitions: unpartitioned output would become an
  // overwrite of the whole table, which the engine never meant.
  if (kind === 'spark-staging' && partitionBy.length === 0) {
    const file = sources.flatMap((s) => s.files)[0]!.path;
    throw new UsageError({ reason: 'leftover-unpartitioned', leftover: label, file });
  }
  const all = sources.flatMap((s) => s.files);
  const partitions = partitionBy.length
    ? [...new Set(all.map((f) => f.path.split('/').slice(0, partitionBy.length).join('/')))].sort()
    : [];
  const tasks = sources.filter((s) => /^\d+$/.test(s.task)).map((s) => s.task);
  // A live Spark driver in its job commit only changes directories (it moves partition dirs out):
  // the leftover's own time and every directory's count as much as every file's.
  const newestMtimeMs = entries.reduce((a, e) => Math.max(a, e.mtimeMs), ownMtimeMs);
  return {
    kind,
    engineJobId: parts.engineJobId,
    stage: parts.stage,
    jobCommitBegun: parts.jobCommitBegun,
    defaultMode: kind === 'spark-staging' ? 'overwrite' : 'append',
    sources,
    discarded,
    appAttempts: parts.appAttempts,
    tasks,
    gaps: parts.jobCommitBegun ? [] : gapsIn(tasks),
    partitionBy,
    partitions,
    files: all.length,
    bytes: all.reduce((a, f) => a + f.size, 0),
    newestMtimeMs,
  };
}

/** The engine's committed output in a leftover, before any check of how it could be published. */
function committedParts(
  label: string,
  kind: LeftoverKind,
  name: string,
  entries: readonly ListedEntry[],
): { parts: Parts; sources: LeftoverSource[]; discarded: Discarded[] } {
  let parts: Parts;
  try {
    parts =
      kind === 'hadoop-temporary'
        ? hadoopParts(entries)
        : kind === 'spark-staging'
          ? sparkParts(label, name, entries)
          : hiveParts(label, name, entries);
  } catch (e) {
    if (e instanceof NotLayoutError)
      throw new UsageError({ reason: 'leftover-layout', leftover: label, engine: ENGINE[kind], problem: e.message });
    throw e;
  }
  return { parts, ...splitNonOutput(parts.sources, parts.discarded) };
}

/**
 * What a leftover holds that its engine committed, whether or not adopt can publish it: its stage,
 * whether the engine's job commit had begun, and how many output files. Null when it holds none.
 */
export function committedOutput(
  label: string,
  name: string,
  entries: readonly ListedEntry[],
): { stage: string; jobCommitBegun: boolean; files: number } | null {
  const kind = kindOfName(name);
  if (!kind) return null;
  const { parts, sources } = committedParts(label, kind, name, entries);
  const files = sources.reduce((a, s) => a + s.files.length, 0);
  return files ? { stage: parts.stage, jobCommitBegun: parts.jobCommitBegun, files } : null;
}

const ENGINE: Record<LeftoverKind, string> = {
  'hadoop-temporary': "Hadoop's FileOutputCommitter",
  'spark-staging': "Spark's dynamic partition overwrite",
  'hive-staging': 'Hive',
};

function hadoopParts(entries: readonly ListedEntry[]): Parts {
  const tree = readHadoopTree(entries, '');
  const stage = tree.sources.length
    ? `${tree.sources.length} task(s) committed, the job commit not begun or not finished`
    : 'no task committed (a v2 job publishes each task as it commits: its committed work is already in the table)';
  return { ...fromTree(tree), stage, jobCommitBegun: false };
}

function fromTree(tree: HadoopTree): Omit<Parts, 'stage' | 'jobCommitBegun'> {
  return {
    engineJobId: tree.engineJobId,
    sources: [...tree.sources],
    discarded: [...tree.discarded],
    appAttempts: tree.appAttempts,
  };
}

/**
 * Spark writes task output through a FileOutputCommitter into `_temporary` under the staging dir;
 * its job commit merges it up into partition dirs beside `_temporary` (then deletes that and
 * writes `_SUCCESS`), then replaces each target partition with its staged one, one at a time.
 */
function sparkParts(label: string, name: string, entries: readonly ListedEntry[]): Parts {
  const engineJobId = SPARK_STAGING.exec(name)![1]!;
  const top = new Set(entries.map((e) => e.path.split('/')[0]!));
  for (const t of top) {
    if (t !== '_temporary' && t !== '_SUCCESS' && t !== '._SUCCESS.crc' && !isDataName(t))
      throw new NotLayoutError(`'${t}' is not a partition dir, '_temporary' or '_SUCCESS'`);
  }
  // Spark's absolute-path partition files (`newTaskTempFileAbsPath`: custom partition locations)
  // sit flat in the staging dir as `<uuid>-<file>`; where each goes lived only in the driver.
  const flat = entries
    .filter((e) => e.kind === 'file' && !e.path.includes('/') && isDataName(e.path))
    .map((e) => e.path)
    .sort();
  if (flat.length) {
    throw new UsageError({
      reason: 'leftover-custom-locations',
      leftover: label,
      count: flat.length,
      files: flat.slice(0, 3),
    });
  }
  const tree = top.has('_temporary') ? readHadoopTree(entries, '_temporary') : null;
  const mergedFiles = entries
    .filter((e) => e.kind === 'file' && isDataName(e.path.split('/')[0]!))
    .map((e) => ({ path: e.path, size: e.size }));
  const merged: LeftoverSource[] = mergedFiles.length
    ? [{ task: 'merged', root: '', files: mergedFiles, bytes: mergedFiles.reduce((a, f) => a + f.size, 0) }]
    : [];
  const sources = [...merged, ...(tree?.sources ?? [])];
  const stage =
    merged.length === 0
      ? `killed before its job commit: ${tree?.sources.length ?? 0} task(s) committed`
      : tree && tree.sources.length
        ? 'killed in its job commit, while merging task output into the staging dir'
        : `killed in its job commit, while replacing partitions of the table: ${new Set(mergedFiles.map((f) => f.path.split('/').slice(0, -1).join('/'))).size} partition dir(s) still staged`;
  return {
    engineJobId,
    stage,
    jobCommitBegun: merged.length > 0,
    sources,
    discarded: [...(tree?.discarded ?? [])],
    appAttempts: tree?.appAttempts ?? [],
  };
}

/** Hive renames `_tmp.-ext-10000` to `-ext-10000` when the query's tasks are done: only that is final. */
function hiveParts(label: string, name: string, entries: readonly ListedEntry[]): Parts {
  const engineJobId = HIVE_STAGING.exec(name)![1] || null;
  const tops = [...new Set(entries.map((e) => e.path.split('/')[0]!))].sort();
  if (!tops.includes(HIVE_OUTPUT)) {
    const writing = tops.some((t) => t.startsWith('_tmp.'));
    throw new UsageError({ reason: 'leftover-hive-unfinished', leftover: label, output: HIVE_OUTPUT, tops, writing });
  }
  const files = entries
    .filter((e) => e.kind === 'file' && e.path.startsWith(HIVE_OUTPUT + '/'))
    .map((e) => ({ path: e.path.slice(HIVE_OUTPUT.length + 1), size: e.size }));
  const discarded = tops
    .filter((t) => t !== HIVE_OUTPUT)
    .map((t) => {
      const fs = entries.filter((e) => e.kind === 'file' && (e.path === t || e.path.startsWith(t + '/')));
      return { path: t, reason: 'not the query output', files: fs.length, bytes: fs.reduce((a, f) => a + f.size, 0) };
    });
  const source = { task: 'hive', root: HIVE_OUTPUT, files, bytes: files.reduce((a, f) => a + f.size, 0) };
  return {
    engineJobId,
    stage: `the query finished writing '${HIVE_OUTPUT}' but it was never moved into the table`,
    jobCommitBegun: true,
    sources: [source],
    discarded,
    appAttempts: [],
  };
}

/** Files under a directory whose name is not data (`_…`, `.…`) are never output: they are discarded. */
function splitNonOutput(
  sources: readonly LeftoverSource[],
  discarded: readonly Discarded[],
): { sources: LeftoverSource[]; discarded: Discarded[] } {
  const out: LeftoverSource[] = [];
  const dropped: Discarded[] = [...discarded];
  for (const s of sources) {
    const isOutput = (f: { path: string }) => f.path.split('/').slice(0, -1).every(isDataName);
    const keep = s.files.filter(isOutput);
    const drop = s.files.filter((f) => !isOutput(f));
    if (drop.length)
      dropped.push({
        path: s.root,
        reason: 'files inside directories that are not data',
        files: drop.length,
        bytes: drop.reduce((a, f) => a + f.size, 0),
      });
    out.push({ ...s, files: keep, bytes: keep.reduce((a, f) => a + f.size, 0) });
  }
  return { sources: out, discarded: dropped };
}

/**
 * The partition columns the `k=v` directory names give; every file must sit at the same depth under the same columns.
 */
function partitionColumns(label: string, sources: readonly LeftoverSource[]): string[] {
  let columns: string[] | null = null;
  let first = '';
  for (const f of sources.flatMap((s) => s.files)) {
    const dirs = f.path.split('/').slice(0, -1);
    const cols = dirs.map((d) => /^([^=]+)=./.exec(d)?.[1] ?? '');
    const bad = dirs.find((d, i) => cols[i] === '' || normalizeColumnOrNull(cols[i]!) !== cols[i]);
    if (bad !== undefined)
      throw new UsageError({ reason: 'leftover-not-partition', leftover: label, file: f.path, dir: bad });
    if (columns === null) {
      columns = cols;
      first = f.path;
    } else if (columns.join('/') !== cols.join('/')) {
      throw new UsageError({
        reason: 'leftover-mixed-partitions',
        leftover: label,
        first,
        file: f.path,
        columns,
        others: cols,
      });
    }
  }
  return columns ?? [];
}

function normalizeColumnOrNull(c: string): string | null {
  try {
    return normalizeColumn(c);
  } catch {
    return null;
  }
}
