// Benchmark: commit-job of 10,000 small files in 100 partitions on the local filesystem, against
// `rsync -a --remove-source-files` on the same files in the same run. The rows that matter are
// appends into existing partitions, with 1, 10 and 100 tasks writing each partition (100: every
// task writes one file into every partition, as a shuffle-then-write job does). BENCH_ALL=1 adds
// absent-target and new-partition rows and a shell loop of one `mv` per file; BENCH_TASKS=100,1
// picks rows by tasks per partition. Not part of the tests.

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../src/store/local.js';
import { listTreeLocal, removeTreeLocal } from '../src/store/local-tree.js';
import { benchEnv, existingPartitions, ROOT, fmt, plainTree, printTable, runStep, stagedJob, timed, type Shape } from './helpers.js';

const PARTITIONS = Number(process.env.BENCH_PARTITIONS ?? 100);
const FILES = Number(process.env.BENCH_FILES ?? 10_000);
const ALL = process.env.BENCH_ALL === '1';

interface Row {
  readonly name: string;
  readonly ours: number;
  readonly rsync: number;
  readonly loop?: number;
  /** Removing only the staging dir's directories (emptied, as the commit leaves them): this filesystem's floor for that part. */
  readonly rmdirFloor: number;
  readonly dirs: number;
  readonly metrics: Record<string, number>;
}

/** Every command starts with the files its set-up wrote on disk, not in the middle of writing them back. */
function settle(): void {
  execFileSync('sync');
}

function rsync(src: string, dst: string): Promise<number> {
  return timed(() => execFileSync('rsync', ['-a', '--remove-source-files', `${src}/`, `${dst}/`]));
}

function mvLoop(src: string, dst: string): Promise<number> {
  // Only mv per file, the directories made beforehand: the loop at its cheapest.
  execFileSync('bash', ['-c', `cd "${src}" && for d in */; do mkdir -p "${dst}/$d"; done`]);
  return timed(() => execFileSync('bash', ['-c', `cd "${src}" && for f in */*; do mv "$f" "${dst}/$f"; done`]));
}

type Target = 'absent' | 'new partitions' | 'existing partitions';

async function scenario(target: Target, tasksPerPartition: number): Promise<Row> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'stagecommit-bench-'));
  const shape: Shape = { partitions: PARTITIONS, filesPerPartition: FILES / PARTITIONS, tasksPerPartition };
  const existing = target === 'existing partitions';
  try {
    const table = path.join(root, 'table');
    if (target !== 'absent') {
      mkdirSync(table, { recursive: true });
      if (existing) existingPartitions(table, PARTITIONS);
      else writeFileSync(path.join(table, 'README'), 'a table\n');
    }
    const mode = target === 'absent' ? 'create' : 'append';
    const staging = await stagedJob(benchEnv(new LocalStore()), { target: table, staging: path.join(root, 'staging'), mode, shape });
    const skeleton = path.join(root, 'skeleton');
    const dirs = (await listTreeLocal(staging)).filter((e) => e.kind === 'dir').map((e) => path.join(skeleton, e.name));
    for (const d of dirs) mkdirSync(d, { recursive: true });
    settle();
    const ours = await runStep(['commit-job', '--job', staging]);
    settle();
    const rmdirFloor = await timed(() => removeTreeLocal(skeleton));

    const [src, dst] = [path.join(root, 'rs-src'), path.join(root, 'rs-dst')];
    plainTree(src, shape);
    if (existing) existingPartitions(dst, PARTITIONS);
    settle();
    const rs = await rsync(src, dst);
    let loop: number | undefined;
    if (ALL) {
      const [lsrc, ldst] = [path.join(root, 'loop-src'), path.join(root, 'loop-dst')];
      plainTree(lsrc, shape);
      if (existing) existingPartitions(ldst, PARTITIONS);
      settle();
      loop = await mvLoop(lsrc, ldst);
    }
    return { name: `${target}, ${tasksPerPartition} task(s)/partition`, ours: ours.seconds, rsync: rs, loop, rmdirFloor, dirs: dirs.length, metrics: ours.metrics };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const peers = spawnSync('bash', [path.join(ROOT, 'scripts', 'bench-peers.sh'), 'rsync'], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (peers.status !== 0) {
    console.error('could not install rsync: run scripts/bench-peers.sh rsync as root');
    process.exit(2);
  }
  console.log(`commit-job of ${FILES} files in ${PARTITIONS} partitions (local filesystem, ${os.cpus().length} cores)\n`);
  const cases: [Target, number][] = [
    ['existing partitions', 100],
    ['existing partitions', 10],
    ['existing partitions', 1],
  ];
  const only = process.env.BENCH_TASKS?.split(',').map(Number);
  if (only) cases.splice(0, cases.length, ...cases.filter(([, tpp]) => only.includes(tpp)));
  if (ALL) cases.push(['absent', 1], ['absent', 10], ['new partitions', 1], ['new partitions', 10]);
  const rows: Row[] = [];
  for (const [target, tpp] of cases) rows.push(await scenario(target, tpp));
  printTable(
    ['scenario', 'stagecommit', 'rsync', 'vs rsync', ...(ALL ? ['mv loop', 'vs loop'] : []), 'dirs', 'rmdir floor', 'renames', 'lists', 'deletes'],
    rows.map((r) => [
      r.name,
      fmt.s(r.ours),
      fmt.s(r.rsync),
      fmt.ratio(r.rsync / r.ours),
      ...(ALL ? [fmt.s(r.loop!), fmt.ratio(r.loop! / r.ours)] : []),
      String(r.dirs),
      fmt.s(r.rmdirFloor),
      String(r.metrics.rename ?? 0),
      String(r.metrics.list ?? 0),
      String(r.metrics.delete ?? 0),
    ]),
  );
  console.log('\n"vs rsync" is rsync\'s time over ours (above 1: we are faster). stagecommit time is the whole');
  console.log('`stagecommit commit-job` process, start-up and removal of the staging dir included; rsync');
  console.log('--remove-source-files leaves its emptied source directories in place. "rmdir floor" is the');
  console.log("removal of an empty copy of the staging dir's directories (\"dirs\"), as the commit removes them,");
  console.log('128 at a time, in-process: what this filesystem charges for that part of the commit alone.');
}

await main();
