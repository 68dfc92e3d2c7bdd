// Benchmark: commit-job of 10,000 small files in 100 partitions on the local filesystem,
// against what operators use today on the same data in the same run: a shell loop of one
// `mv` per file, and `rsync -a --remove-source-files`. Prints times, ratios and store
// operation counts. Not part of the tests.

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalStore } from '../src/store/local.js';
import { testEnv } from '../test/helpers/lib.js';
import { stageJob } from '../src/steps/stage-job.js';
import { commitTask } from '../src/steps/commit-task.js';
import { JobLayout, taskAttemptName } from '../src/job/layout.js';

const BIN = fileURLToPath(new URL('../../bin/stagecommit.js', import.meta.url));
const PARTITIONS = Number(process.env.BENCH_PARTITIONS ?? 100);
const FILES = Number(process.env.BENCH_FILES ?? 10_000);
const PER_PARTITION = FILES / PARTITIONS;

const env = () => testEnv(new LocalStore(), undefined, { concurrency: 32 });

/** Writes the job's files straight into the attempt dirs (as --print-path writers do) and commits each task. */
async function stagedJob(root: string, target: string, mode: 'create' | 'append', tasksPerPartition: number): Promise<string> {
  const e = env();
  const { stagingPath, job } = await stageJob(e, { targetPath: target, stagingPath: path.join(root, 'staging'), mode, algorithm: 'v1', partition: [], partitionBy: ['dt'] });
  const layout = new JobLayout(stagingPath);
  const tasks: string[] = [];
  for (let p = 0; p < PARTITIONS; p++) {
    for (let t = 0; t < tasksPerPartition; t++) {
      const task = String(p * tasksPerPartition + t);
      tasks.push(task);
      const dir = path.join(layout.attemptDir(0, taskAttemptName(job.jobId, task, 0)), `dt=${p}`);
      mkdirSync(dir, { recursive: true });
      for (let f = t; f < PER_PARTITION; f += tasksPerPartition) writeFileSync(path.join(dir, `part-${p}-${f}.csv`), `row ${p} ${f}\n`);
    }
  }
  for (const task of tasks) await commitTask(e, { stagingPath, task });
  return stagingPath;
}

/** The same files as a plain tree, for the baselines. */
function plainTree(dir: string): void {
  for (let p = 0; p < PARTITIONS; p++) {
    const d = path.join(dir, `dt=${p}`);
    mkdirSync(d, { recursive: true });
    for (let f = 0; f < PER_PARTITION; f++) writeFileSync(path.join(d, `part-${p}-${f}.csv`), `row ${p} ${f}\n`);
  }
}

function existingPartitions(target: string): void {
  for (let p = 0; p < PARTITIONS; p++) {
    mkdirSync(path.join(target, `dt=${p}`), { recursive: true });
    writeFileSync(path.join(target, `dt=${p}`, 'old.csv'), 'old\n');
  }
}

function time(fn: () => void): number {
  const t = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t) / 1e9;
}

function commitJobCli(staging: string): { seconds: number; metrics: Record<string, number> } {
  let out = '';
  const seconds = time(() => {
    const r = spawnSync(process.execPath, [BIN, 'commit-job', '--job', staging, '--json'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`commit-job failed: ${r.stderr}`);
    out = r.stdout;
  });
  return { seconds, metrics: JSON.parse(out).metrics };
}

function mvLoopPlain(src: string, dst: string): number {
  // Only mv per file, the directories made beforehand: the loop at its cheapest.
  execFileSync('bash', ['-c', `cd "${src}" && for d in */; do mkdir -p "${dst}/$d"; done`]);
  return time(() => execFileSync('bash', ['-c', `cd "${src}" && for f in */*; do mv "$f" "${dst}/$f"; done`]));
}

function rsync(src: string, dst: string): number {
  return time(() => execFileSync('rsync', ['-a', '--remove-source-files', `${src}/`, `${dst}/`]));
}

interface Row {
  name: string;
  ours: number;
  loop: number;
  rsync: number;
  metrics: Record<string, number>;
}

async function scenario(name: string, mode: 'create' | 'append', tasksPerPartition: number, existing: boolean): Promise<Row> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'stagecommit-bench-'));
  try {
    const target = path.join(root, 'table');
    if (mode === 'append') {
      mkdirSync(target, { recursive: true });
      if (existing) existingPartitions(target);
      else writeFileSync(path.join(target, 'README'), 'a table\n');
    }
    const staging = await stagedJob(root, target, mode, tasksPerPartition);
    const ours = commitJobCli(staging);

    const loopSrc = path.join(root, 'loop-src');
    const loopDst = path.join(root, 'loop-dst');
    plainTree(loopSrc);
    if (existing) existingPartitions(loopDst);
    const loop = mvLoopPlain(loopSrc, loopDst);

    const rsSrc = path.join(root, 'rs-src');
    const rsDst = path.join(root, 'rs-dst');
    plainTree(rsSrc);
    if (existing) existingPartitions(rsDst);
    const rs = rsync(rsSrc, rsDst);
    return { name, ours: ours.seconds, loop, rsync: rs, metrics: ours.metrics };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (!existsSync('/usr/bin/rsync') && spawnSync('rsync', ['--version']).status !== 0) {
    console.error('rsync is not installed: apt-get install -y rsync');
    process.exit(2);
  }
  console.log(`commit-job of ${FILES} files in ${PARTITIONS} partitions (local filesystem, ${os.cpus().length} cores)\n`);
  const rows = [
    await scenario('absent target, 1 task/partition', 'create', 1, false),
    await scenario('absent target, 10 tasks/partition', 'create', 10, false),
    await scenario('new partitions, 1 task/partition', 'append', 1, false),
    await scenario('new partitions, 10 tasks/partition', 'append', 10, false),
    await scenario('existing partitions, 1 task/partition', 'append', 1, true),
    await scenario('existing partitions, 10 tasks/partition', 'append', 10, true),
  ];
  const pad = (s: string, n: number) => s.padEnd(n);
  console.log(`${pad('scenario', 42)} ${pad('stagecommit', 12)} ${pad('mv loop', 9)} ${pad('rsync', 8)} ${pad('vs loop', 8)} ${pad('vs rsync', 9)} renames  ops`);
  for (const r of rows) {
    const ops = Object.values(r.metrics).reduce((a, v) => a + v, 0);
    console.log(
      `${pad(r.name, 42)} ${pad(r.ours.toFixed(3) + 's', 12)} ${pad(r.loop.toFixed(2) + 's', 9)} ${pad(r.rsync.toFixed(3) + 's', 8)} ${pad((r.loop / r.ours).toFixed(1) + 'x', 8)} ${pad((r.rsync / r.ours).toFixed(1) + 'x', 9)} ${String(r.metrics.rename ?? 0).padStart(7)}  ${ops}`,
    );
  }
  console.log('\nstagecommit time is the whole `stagecommit commit-job` process (start-up included).');
}

await main();
