// Leftovers laid out exactly as Hadoop's FileOutputCommitter (v1), Spark's dynamic partition
// overwrite and Hive write them, killed at each stage of their own commit; with what the table
// holds before, and what the uninterrupted engine job leaves in it (data and checksum files).

import type { Tree } from './tree.js';

const JT = '20261130221500';
const JOBNUM = '0003';
export const SPARK_JOB = '5f1c2a3e-8d4b-4c61-9e0f-2b7a6c1d9e42';
const UUID = 'c0ffee00-1234-4abc-8def-001122334455';

const pad = (n: number, w: number) => String(n).padStart(w, '0');
export const taskDir = (t: number, kind = 'm') => `task_${JT}_${JOBNUM}_${kind}_${pad(t, 6)}`;
export const attemptDir = (t: number, a: number, kind = 'm') => `attempt_${JT}_${JOBNUM}_${kind}_${pad(t, 6)}_${a}`;

/** A data file and the `.name.crc` Hadoop's local ChecksumFileSystem writes beside it. */
function withCrc(dir: string, name: string, content: string): Tree {
  const p = dir ? `${dir}/` : '';
  return { [`${p}${name}`]: content, [`${p}.${name}.crc`]: `crc:${content.length}` };
}

export type SparkStage = 'tasks-running' | 'tasks-committed' | 'merging' | 'merged' | 'replacing';
export const SPARK_STAGES: readonly SparkStage[] = [
  'tasks-running',
  'tasks-committed',
  'merging',
  'merged',
  'replacing',
];

export interface EngineCase {
  /** Table-relative path of the leftover. */
  readonly leftover: string;
  /** The table before the (killed) job, leftover included. */
  readonly before: Tree;
  /** Data (and .crc) files of the table after the uninterrupted job; _SUCCESS and leftovers aside. */
  readonly after: Tree;
}

const OLD: Tree = {
  ...withCrc('dt=2026-11-27', 'part-00000-old.c000.snappy.parquet', 'keep-27'),
  ...withCrc('dt=2026-11-28', 'part-00000-old.c000.snappy.parquet', 'old-28'),
  ...withCrc('dt=2026-11-29', 'part-00000-old.c000.snappy.parquet', 'old-29'),
};
/** Task t's output: partitions written by each of the three tasks. */
const SPARK_TASKS: Record<number, string[]> = {
  0: ['2026-11-28', '2026-11-29'],
  1: ['2026-11-29', '2026-11-30'],
  2: ['2026-11-30'],
};
const sparkFile = (t: number) => `part-${pad(t, 5)}-${UUID}.c000.snappy.parquet`;
const sparkTask = (t: number): Tree =>
  Object.assign({}, ...SPARK_TASKS[t]!.map((d) => withCrc(`dt=${d}`, sparkFile(t), `new-${t}-${d}`)));

function prefixed(prefix: string, tree: Tree): Tree {
  return Object.fromEntries(Object.entries(tree).map(([k, v]) => [`${prefix}/${k}`, v]));
}

/** A Spark `INSERT OVERWRITE … PARTITION (dt)` with dynamic partitions, killed at `stage`. */
export function sparkOverwrite(stage: SparkStage): EngineCase {
  const staging = `.spark-staging-${SPARK_JOB}`;
  const tmp = `${staging}/_temporary/0`;
  const committed = (ts: number[]) =>
    Object.assign({}, ...ts.map((t) => prefixed(`${tmp}/${taskDir(t)}`, sparkTask(t))));
  const merged = (ts: number[]) => prefixed(staging, Object.assign({}, ...ts.map(sparkTask)));
  const newParts = Object.assign({}, ...[0, 1, 2].map(sparkTask)) as Tree;
  const after: Tree = { ...withCrc('dt=2026-11-27', 'part-00000-old.c000.snappy.parquet', 'keep-27'), ...newParts };
  const loser = prefixed(`${tmp}/_temporary/${attemptDir(1, 0)}`, { 'dt=2026-11-29/part-00001-half.parquet': 'half' });
  let before: Tree;
  switch (stage) {
    case 'tasks-running':
      before = { ...OLD, ...committed([0, 1]), ...prefixed(`${tmp}/_temporary/${attemptDir(2, 0)}`, sparkTask(2)) };
      break;
    case 'tasks-committed':
      before = { ...OLD, ...committed([0, 1, 2]), ...loser };
      break;
    case 'merging':
      before = { ...OLD, ...merged([0]), ...committed([1, 2]), ...loser };
      break;
    case 'merged':
      before = { ...OLD, ...merged([0, 1, 2]), [`${staging}/_SUCCESS`]: '', [`${staging}/._SUCCESS.crc`]: 'crc:0' };
      break;
    case 'replacing': {
      // dt=28 already replaced, dt=29 deleted from the table and not yet moved, dt=30 still staged.
      const inTable = Object.fromEntries(Object.entries(newParts).filter(([k]) => k.startsWith('dt=2026-11-28/')));
      const staged = Object.fromEntries(Object.entries(newParts).filter(([k]) => !k.startsWith('dt=2026-11-28/')));
      before = {
        ...withCrc('dt=2026-11-27', 'part-00000-old.c000.snappy.parquet', 'keep-27'),
        ...inTable,
        ...prefixed(staging, staged),
        [`${staging}/_SUCCESS`]: '',
      };
      break;
    }
  }
  return { leftover: staging, before, after };
}

/** A Hadoop MapReduce v1 job (map-only, unpartitioned, appending) killed after app attempt 1 committed its tasks. */
export function hadoopV1(): EngineCase {
  const out = (t: number, v: string) => withCrc('', `part-m-${pad(t, 5)}`, v);
  const before: Tree = {
    ...withCrc('', 'part-m-00000-earlier', 'earlier'),
    ...prefixed(`_temporary/0/${taskDir(1)}`, out(1, 'first-run-1')),
    ...prefixed(`_temporary/0/_temporary/${attemptDir(2, 0)}`, out(2, 'half')),
    ...prefixed(`_temporary/1/${taskDir(0)}`, out(0, 'task-0')),
    ...prefixed(`_temporary/1/${taskDir(1)}`, out(1, 'rerun-1')),
    ...prefixed(`_temporary/1/${taskDir(2)}`, out(2, 'task-2')),
    '_temporary/1/_temporary/': '',
  };
  const after: Tree = {
    ...withCrc('', 'part-m-00000-earlier', 'earlier'),
    ...out(0, 'task-0'),
    ...out(1, 'rerun-1'),
    ...out(2, 'task-2'),
  };
  return { leftover: '_temporary', before, after };
}

export const HIVE_STAGING = '.hive-staging_hive_2026-11-30_22-15-03_123_4567890123456789012-1';

/** A Hive INSERT INTO whose query finished writing `-ext-10000` but whose move task never ran. */
export function hiveInsert(): EngineCase {
  const before: Tree = {
    ...withCrc('', '000000_0', 'old'),
    ...prefixed(`${HIVE_STAGING}/-ext-10000`, {
      ...withCrc('', '000000_0_copy_1', 'new-0'),
      '000001_0_copy_1': 'new-1',
    }),
    [`${HIVE_STAGING}/-ext-10002/stats`]: 's',
  };
  const after: Tree = {
    ...withCrc('', '000000_0', 'old'),
    ...withCrc('', '000000_0_copy_1', 'new-0'),
    '000001_0_copy_1': 'new-1',
  };
  return { leftover: HIVE_STAGING, before, after };
}
