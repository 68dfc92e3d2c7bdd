// Benchmark: peak memory and time per file of commit-task and commit-job as the file count grows
// (protocol.md §9.2: memory stays flat). Local filesystem, 100 partitions, 4 tasks, an absent target;
// every step runs as its own process under /usr/bin/time. BENCH_SCALE=100000,1000000 (default)
// picks the sizes; BENCH_SCALE_MERGED=1 has every task write every partition. BENCH_SCALE_RECOVER=1 adds, per size,
// `recover` of a commit-job killed while it
// publishes a plan of one move per file (every task writes every partition), the on-call
// engineer's step. Not part of the tests.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../src/store/local.js';
import { BIN, benchEnv, fmt, printTable, run, runStep, stagedJob, taskFiles, type Shape } from './helpers.js';

const SIZES = (process.env.BENCH_SCALE ?? '100000,1000000').split(',').map(Number);
const PARTITIONS = 100;
const TASKS = 4;

interface Figures {
  readonly files: number;
  readonly taskPeakMb: number;
  readonly taskSeconds: number;
  readonly jobPeakMb: number;
  readonly jobSeconds: number;
  readonly recover?: { readonly peakMb: number; readonly seconds: number };
}

async function measure(files: number): Promise<Figures> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'stagecommit-scale-'));
  try {
    // BENCH_SCALE_MERGED=1: every task writes a quarter of every partition (a plan of one move per file).
    const merged = process.env.BENCH_SCALE_MERGED === '1';
    const shape: Shape = {
      partitions: PARTITIONS,
      filesPerPartition: files / PARTITIONS,
      tasksPerPartition: merged ? TASKS : 1,
      groups: merged ? 1 : TASKS,
    };
    const staging = await stagedJob(benchEnv(new LocalStore()), {
      target: path.join(root, 'table'),
      staging: path.join(root, 'staging'),
      mode: 'create',
      shape,
      commit: false,
    });
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
    if (job.doc.files !== files)
      throw new Error(`commit-job published ${String(job.doc.files)} files, expected ${files}`);
    const recover = process.env.BENCH_SCALE_RECOVER === '1' ? await recoverAfterKill(root, files) : undefined;
    return { files, taskPeakMb, taskSeconds, jobPeakMb: job.peakMb, jobSeconds: job.seconds, recover };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/**
 * A job whose four tasks each write a quarter of every partition (its plan moves each file on its
 * own), committed in-process; commit-job killed at its 8th store mutation, past its commit point
 * (lease, log entry, plan, `committing`, then the moves); then `recover` as a process.
 */
async function recoverAfterKill(root: string, files: number): Promise<{ peakMb: number; seconds: number }> {
  const shape: Shape = {
    partitions: PARTITIONS,
    filesPerPartition: files / PARTITIONS,
    tasksPerPartition: TASKS,
    groups: 1,
  };
  const target = path.join(root, 'merged');
  const staging = await stagedJob(benchEnv(new LocalStore()), {
    target,
    staging: path.join(root, 'staging-merged'),
    mode: 'create',
    shape,
  });
  execFileSync('sync');
  const killed = await run(process.execPath, [BIN, 'commit-job', '--job', staging], {
    env: { ...process.env, STAGECOMMIT_TEST_KILL_AT: '8' },
  });
  if (killed.code === 0) throw new Error('commit-job was not killed past its commit point');
  const r = await runStep(['recover', '--job', staging], { peak: true });
  const published = Number(
    execFileSync('sh', ['-c', `find '${target}' -type f -name 'part-*' | wc -l`], { encoding: 'utf8' }),
  );
  if (published !== files) throw new Error(`recover left ${published} files in the target, expected ${files}`);
  return { peakMb: r.peakMb, seconds: r.seconds };
}

async function main(): Promise<void> {
  console.log(
    `commit-task and commit-job by file count (local filesystem, ${PARTITIONS} partitions, ${TASKS} tasks, ${os.cpus().length} cores)\n`,
  );
  const rows: Figures[] = [];
  for (const n of SIZES) rows.push(await measure(n));
  const us = (s: number, n: number) => (s * 1e6) / n;
  printTable(
    [
      'files',
      'commit-task peak',
      'commit-task µs/file',
      'commit-job peak',
      'commit-job µs/file',
      'job µs/file vs first row',
    ],
    rows.map((r) => [
      String(r.files),
      fmt.mb(r.taskPeakMb),
      fmt.us(us(r.taskSeconds, r.files)),
      fmt.mb(r.jobPeakMb),
      fmt.us(us(r.jobSeconds, r.files)),
      fmt.ratio(us(r.jobSeconds, r.files) / us(rows[0]!.jobSeconds, rows[0]!.files)),
    ]),
  );
  const recovered = rows.filter((r) => r.recover);
  if (recovered.length) {
    console.log(
      '\nrecover of a commit-job killed while it moved every file on its own (4 tasks write every partition)',
    );
    printTable(
      ['files', 'recover peak', 'recover µs/file'],
      recovered.map((r) => [String(r.files), fmt.mb(r.recover!.peakMb), fmt.us(us(r.recover!.seconds, r.files))]),
    );
  }
  console.log('\nPeak is the largest resident set of one step process (the largest of the tasks for commit-task);');
  console.log('time is wall time of the processes, start-up included (commit-task: all tasks, one after another).');
  console.log(
    'Goals (issue 10): peak ≤ 150 MB at 100,000 files and ≤ 300 MB at 1,000,000; µs/file at 1M ≤ 1.5× that at 100k.',
  );
}

await main();
