// Partition paths (Hive escaping), task ids and task-file paths: nothing may leave the target.
// Keeps protocol.md §5.7 (no path leaves the target) and §5.11 (paths read back are checked alike).

import { UsageError } from './errors.js';
import { compareStrings } from './util/compare.js';

export const HIVE_DEFAULT_PARTITION = '__HIVE_DEFAULT_PARTITION__';

// Hive FileUtils.escapePathName: controls, DEL and these characters become %XX.
const ESCAPED = new Set(['"', '#', '%', "'", '*', '/', ':', '=', '?', '\\', '{', '[', ']', '^', '\u007f']);

function needsEscape(ch: string): boolean {
  const c = ch.charCodeAt(0);
  return c < 0x20 || ESCAPED.has(ch);
}

export function escapePartitionValue(value: string | null | undefined): string {
  if (value === null || value === undefined || value === '') return HIVE_DEFAULT_PARTITION;
  let out = '';
  for (const ch of value) {
    out += needsEscape(ch) ? '%' + ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0') : ch;
  }
  return out;
}

const COLUMN = /^[a-z0-9][a-z0-9_]*$/;

/** Lower-cases and checks a partition column name. */
export function normalizeColumn(raw: string): string {
  const col = raw.trim().toLowerCase();
  if (!COLUMN.test(col)) {
    throw new UsageError({ reason: 'partition-column-invalid', column: raw });
  }
  return col;
}

export interface PartitionValue {
  readonly column: string;
  readonly value: string;
}

/** Parses one `--partition K=V` (V raw, escaped later; the first '=' splits). */
export function parsePartitionArg(arg: string): PartitionValue {
  const eq = arg.indexOf('=');
  if (eq <= 0) throw new UsageError({ reason: 'partition-invalid', partition: arg });
  return { column: normalizeColumn(arg.slice(0, eq)), value: arg.slice(eq + 1) };
}

export function partitionSegment(p: PartitionValue): string {
  return `${p.column}=${escapePartitionValue(p.value)}`;
}

export function partitionPath(values: readonly PartitionValue[]): string {
  return values.map(partitionSegment).join('/');
}

/** A task id: a number, or a token that cannot collide with the layout's `_` names. */
export function checkTaskId(task: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(task)) {
    throw new UsageError({ reason: 'task-id-invalid', task, leadingZeros: false });
  }
  // '01' and '1' would be two claims for one declared task: numbers are written one way only.
  if (/^0\d+$/.test(task)) throw new UsageError({ reason: 'task-id-invalid', task, leadingZeros: true });
  return task;
}

/** Task ids in a person's order: numbers numerically, then tokens alphabetically. */
export function compareTasks(a: string, b: string): number {
  const na = Number(a);
  const nb = Number(b);
  const numA = /^\d+$/.test(a);
  const numB = /^\d+$/.test(b);
  if (numA && numB) return na - nb;
  if (numA !== numB) return numA ? -1 : 1;
  return compareStrings(a, b);
}

export function checkAttempt(raw: string | number | undefined): number {
  const s = raw === undefined ? '0' : String(raw);
  if (!/^\d{1,9}$/.test(s)) throw new UsageError({ reason: 'attempt-invalid', attempt: s });
  return Number(s);
}

/** Checks a relative file path inside a task's output: no '..', no absolute path, no empty name. */
export function checkRelativePath(rel: string, what = 'file path'): string {
  if (rel.startsWith('/') || /^[A-Za-z]:[\\/]/.test(rel)) {
    throw new UsageError({ reason: 'relative-path-invalid', what, path: rel, problem: 'absolute' });
  }
  const segs = rel.split('/');
  for (const s of segs) {
    if (s === '' || s === '.' || s === '..') {
      throw new UsageError({ reason: 'relative-path-invalid', what, path: rel, problem: 'segment' });
    }
    if (s.includes('\0')) throw new UsageError({ reason: 'relative-path-invalid', what, path: rel, problem: 'nul' });
  }
  return rel;
}

/** Names starting with '_' or '.' are never data (Hive and Spark readers skip them). */
export function isDataName(name: string): boolean {
  return !name.startsWith('_') && !name.startsWith('.');
}

/**
 * Checks that a task-relative file path sits under a full partition path of the job
 * (`col=value` for every column, in order, static values as declared) and returns that
 * partition path ('' for an unpartitioned job).
 */
export function partitionOfFile(rel: string, columns: readonly string[], staticPrefix: string): string {
  if (columns.length === 0) return '';
  const segs = rel.split('/');
  if (segs.length <= columns.length) {
    throw new UsageError({ reason: 'file-outside-partitions', path: rel, columns });
  }
  for (let i = 0; i < columns.length; i++) {
    const s = segs[i]!;
    const col = columns[i]!;
    if (!s.startsWith(col + '=') || s.length === col.length + 1) {
      throw new UsageError({ reason: 'file-partition-segment', path: rel, segment: s, column: col, columns });
    }
  }
  const part = segs.slice(0, columns.length).join('/');
  if (staticPrefix && part !== staticPrefix && !part.startsWith(staticPrefix + '/')) {
    throw new UsageError({ reason: 'file-outside-static-partition', path: rel, staticPartition: staticPrefix });
  }
  return part;
}

/** An absolute store path as the tool writes it: '/', no empty, '.' or '..' segment, no NUL. */
export function checkStorePath(p: string): string {
  if (!p.startsWith('/')) throw new Error(`'${p}' is not an absolute path`);
  if (p !== '/') checkRelativePath(p.slice(1), 'path');
  return p;
}

/** Each proper ancestor of a relative path, shortest first ('a/b/c' → 'a', 'a/b'). */
export function* ancestorsOf(p: string): Generator<string> {
  for (let i = p.indexOf('/'); i >= 0; i = p.indexOf('/', i + 1)) yield p.slice(0, i);
}

/**
 * The directories some of these relative paths are inside: asked once per directory, not a scan of the paths each time.
 */
export function dirsHolding(paths: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const p of paths) for (const a of ancestorsOf(p)) out.add(a);
  return out;
}

/**
 * Characters a line printed for a terminal shows escaped (cli/ui.ts printable): C0 controls but
 * tab and newline, DEL and the C1 controls, the line and paragraph separators and the
 * bidirectional overrides. A location holding one cannot be printed as a handle that reads back.
 */
export const UNPRINTABLE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
