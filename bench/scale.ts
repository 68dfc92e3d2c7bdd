// Benchmark: peak memory and time per file of commit-task and commit-job as the file count grows
// (DESIGN §9: memory stays flat). Local filesystem, 100 partitions, 4 tasks, an absent target;
// every step runs as its own process under /usr/bin/time. BENCH_SCALE=100000,1000000 (default)
// picks the sizes. Not part of the tests.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../src/store/local.js';
import { benchEnv, fmt, printTable, runStep, stagedJob, taskFiles, type Shape } from './helpers.js';

const SIZES = (process.env.BENCH_SCALE ?? '100000,1000000').split(',').map(Number);
const PARTITIONS = 100;
const TASKS = 4;

interface Figures {
  readonly files: number;
  readonly taskPeakMb: number;
  readonly taskSeconds: number;
  readonly jobPeakMb: number;
  readonly jobSeconds: number;
}

async function measure(files: number): Promise<Figures> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'stagecommit-scale-'));
  try {
    const shape: Shape = { partitions: PARTITIONS, filesPerPartition: files / PARTITIONS, tasksPerPartition: 1, groups: TASKS };
    const staging = await stagedJob(benchEnv(new LocalStore()), { target: path.join(root, 'table'), staging: path.join(root, 'staging'), mode: 'create', shape, commit: false });
    execFileSync('sync');
    let taskPeakMb = 0;
    let taskSeconds = 0;
    for (const t of taskFiles(shape)) {
      const r = await runStep(['commit-task', '--job', staging, '--task', t.task], { peak: true });
      taskPeakMb = Math.max(taskPeakMb, r.peakMb);
      taskSeconds += r.seconds;
    }
    execFileSync('sync');
    const job = await runStep(['commit-job', '--job', staging], { peak: true });
    if (job.doc.files !== files) throw new Error(`commit-job published ${String(job.doc.files)} files, expected ${files}`);
    return { files, taskPeakMb, taskSeconds, jobPeakMb: job.peakMb, jobSeconds: job.seconds };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log(`commit-task and commit-job by file count (local filesystem, ${PARTITIONS} partitions, ${TASKS} tasks, ${os.cpus().length} cores)\n`);
  const rows: Figures[] = [];
  for (const n of SIZES) rows.push(await measure(n));
  const us = (s: number, n: number) => (s * 1e6) / n;
  printTable(
    ['files', 'commit-task peak', 'commit-task µs/file', 'commit-job peak', 'commit-job µs/file', 'job µs/file vs first row'],
    rows.map((r) => [
      String(r.files),
      fmt.mb(r.taskPeakMb),
      fmt.us(us(r.taskSeconds, r.files)),
      fmt.mb(r.jobPeakMb),
      fmt.us(us(r.jobSeconds, r.files)),
      fmt.ratio(us(r.jobSeconds, r.files) / us(rows[0]!.jobSeconds, rows[0]!.files)),
    ]),
  );
  console.log('\nPeak is the largest resident set of one step process (the largest of the tasks for commit-task);');
  console.log('time is wall time of the processes, start-up included (commit-task: all tasks, one after another).');
  console.log('Goals (issue 10): peak ≤ 150 MB at 100,000 files and ≤ 300 MB at 1,000,000; µs/file at 1M ≤ 1.5× that at 100k.');
}

await main();
