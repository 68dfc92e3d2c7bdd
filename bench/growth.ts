// Benchmark: how the in-memory work of a step grows with the job, at 2,000, 20,000 and 100,000
// items (BENCH_GROWTH_SIZES), for the code that once grew with the square of it: the table-log
// conflict check between two jobs' partitions, the plan of a dynamic-partition overwrite of which
// half the partitions exist, reading a Hadoop `_temporary` and a Hive staging leftover for
// adopt, and ordering a local tree's removals in turns by parent. Prints each time and the time per item against the
// smallest size (linear: about 1×; the
// square of it: 50× at 100,000). No store is involved: what is timed is only this code.

import { overlap } from '../src/job/table-log.js';
import { byParentInTurns } from '../src/store/local-tree.js';
import { recogniseLeftover } from '../src/leftover/recognise.js';
import type { ListedEntry } from '../src/leftover/types.js';
import { planCommit, type PlanInput } from '../src/plan/plan.js';

const sizes = (process.env.BENCH_GROWTH_SIZES ?? '2000,20000,100000').split(',').map(Number);

function ms(fn: () => unknown): number {
  const t = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

const pad = (i: number) => String(i).padStart(7, '0');

const cases: [string, (n: number) => () => unknown][] = [
  [
    "table-log check: n partitions against another job's n",
    (n) => {
      const a = Array.from({ length: n }, (_, i) => `dt=2026-01-01/id=${pad(i)}`);
      const b = Array.from({ length: n }, (_, i) => `dt=2026-01-02/id=${pad(i)}`);
      return () => overlap(a, b);
    },
  ],
  [
    'plan: overwrite of n partitions, half of them in the target',
    (n) => {
      const parts = Array.from({ length: n }, (_, i) => `dt=${pad(i)}`);
      const sources = Array.from({ length: 10 }, (_, t) => ({
        task: String(t),
        root: `_temporary/0/${t}`,
        files: [] as { path: string; size: number }[],
      }));
      parts.forEach((p, i) => sources[i % 10]!.files.push({ path: `${p}/part-${i}.parquet`, size: 1 }));
      const root = new Map<string, 'dir' | 'file'>();
      const dirs = new Map<string, Map<string, 'dir' | 'file'>>([['', root]]);
      parts.slice(0, n / 2).forEach((p, i) => {
        root.set(p, 'dir');
        dirs.set(p, new Map([[`old-${i}.parquet`, 'file']]));
      });
      const input = {
        mode: 'overwrite',
        replaceUnits: parts,
        strategy: 'rename',
        sources,
        target: { exists: true, dirs },
      } as unknown as PlanInput;
      return () => planCommit(input, 1);
    },
  ],
  [
    'adopt: a Hadoop _temporary of n files, 10 a task',
    (n) => {
      const entries: ListedEntry[] = [{ path: '0', kind: 'dir', size: 0, mtimeMs: 1 }];
      for (let t = 0; t < n / 10; t++) {
        const dir = `0/task_202601010000_0001_m_${String(t).padStart(6, '0')}`;
        entries.push({ path: dir, kind: 'dir', size: 0, mtimeMs: 1 });
        for (let f = 0; f < 10; f++)
          entries.push({ path: `${dir}/part-${t}-${f}.parquet`, kind: 'file', size: 10, mtimeMs: 1 });
      }
      return () => recogniseLeftover('x', '_temporary', entries, 1);
    },
  ],
  [
    'adopt: a Hive staging dir of n files',
    (n) => {
      const entries: ListedEntry[] = [{ path: '-ext-10000', kind: 'dir', size: 0, mtimeMs: 1 }];
      const parts = Math.max(1, n / 100);
      for (let p = 0; p < parts; p++) entries.push({ path: `-ext-10000/dt=${p}`, kind: 'dir', size: 0, mtimeMs: 1 });
      for (let i = 0; i < n; i++)
        entries.push({ path: `-ext-10000/dt=${i % parts}/part-${i}.parquet`, kind: 'file', size: 10, mtimeMs: 1 });
      return () => recogniseLeftover('x', '.hive-staging_hive_1', entries, 1);
    },
  ],
  [
    'local removal order: n/2 parents of one child and one parent of n/2 children',
    (n) => {
      const paths = Array.from({ length: n / 2 }, (_, i) => `/s/one-${pad(i)}/x`);
      for (let i = 0; i < n / 2; i++) paths.push(`/s/many/${pad(i)}`);
      return () => byParentInTurns(paths);
    },
  ],
];

console.log(`=== growth of in-memory work, ${new Date().toISOString()} (time; time per item against n=${sizes[0]})`);
for (const [label, make] of cases) {
  const row: string[] = [];
  let base = 0;
  for (const n of sizes) {
    const t = ms(make(n));
    base ||= t / n;
    row.push(`n=${n.toLocaleString('en')} ${t.toFixed(0)} ms (${(t / n / base).toFixed(1)}×)`);
  }
  console.log(`${label}\n  ${row.join('   ')}`);
}
