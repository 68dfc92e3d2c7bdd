// Benchmark: clean-orphans (dry run) over a generated tree of 100,000 directories, against
// `find ROOT -name …` for the same leftover names over the same tree in the same run.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runStep, timed } from './helpers.js';

const DIRS = Number(process.env.BENCH_DIRS ?? 100_000);

/** Tables × dates × regions × buckets of partitions, a few leftovers among them, one file per leaf. */
function generate(root: string): number {
  let dirs = 0;
  const tables = 10;
  const perTable = DIRS / tables;
  const dates = Math.ceil(Math.sqrt(perTable / 10));
  for (let t = 0; t < tables && dirs < DIRS; t++) {
    for (let d = 0; d < dates && dirs < DIRS; d++) {
      for (let r = 0; r < 10 && dirs < DIRS; r++) {
        for (let b = 0; b < dates && dirs < DIRS; b++) {
          const leaf = path.join(root, `table${t}`, `dt=2026-01-${d}`, `region=r${r}`, `bucket=${b}`);
          mkdirSync(leaf, { recursive: true });
          writeFileSync(path.join(leaf, 'part-0.parquet'), 'x');
          dirs++;
        }
      }
      if (d % 7 === 0)
        mkdirSync(
          path.join(root, `table${t}`, `dt=2026-01-${d}`, '.hive-staging_hive_2026-01-01_00-00-00_1_1-1', '-ext-10000'),
          { recursive: true },
        );
    }
    mkdirSync(path.join(root, `table${t}`, '_temporary', '0', '_temporary', 'attempt_1'), { recursive: true });
    mkdirSync(
      path.join(root, `table${t}`, `.spark-staging-${String(t).padStart(8, '0')}-0000-4000-8000-000000000000`, 'dt=1'),
      { recursive: true },
    );
  }
  return dirs;
}

const root = mkdtempSync(path.join(os.tmpdir(), 'stagecommit-orphans-bench-'));
try {
  const n = generate(root);
  const findArgs = [
    root,
    '(',
    '-name',
    '.spark-staging-*',
    '-o',
    '-name',
    '_temporary',
    '-o',
    '-name',
    '.hive-staging*',
    '-o',
    '-name',
    '__magic*',
    '-o',
    '-name',
    '_job.yaml',
    ')',
    '-prune',
    '-print',
  ];
  execFileSync('find', [root], { stdio: 'ignore' }); // warm the dentry cache for both
  const runs = 3;
  let findBest = Infinity;
  let oursBest = Infinity;
  let found = 0;
  let findCount = 0;
  for (let i = 0; i < runs; i++) {
    findBest = Math.min(
      findBest,
      await timed(() => (findCount = execFileSync('find', findArgs, { encoding: 'utf8' }).trim().split('\n').length)),
    );
    const ours = await runStep(['clean-orphans', root, '--older-than', '0s']);
    oursBest = Math.min(oursBest, ours.seconds);
    found = (ours.doc.leftovers as unknown[]).length;
  }
  console.log(`tree: ${n} partition directories (plus leftovers) under ${root}`);
  console.log(`find -name … -prune:          ${findBest.toFixed(3)} s  (${findCount} paths)`);
  console.log(
    `stagecommit clean-orphans:    ${oursBest.toFixed(3)} s  (${found} leftovers, measured with files, bytes and age)`,
  );
  console.log(`ratio stagecommit / find:     ${(oursBest / findBest).toFixed(2)}x  (best of ${runs}; goal: within 3x)`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
