// What every benchmark needs, once: a step environment, a job staged as writers stage it, the CLI
// run as a process (wall time, peak memory, the step's --json document), baselines' timing, and
// the printed table. Benchmarks import this and src/, never the tests' helpers.

import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { JobLayout, taskAttemptName } from '../src/job/layout.js';
import { InstrumentedStore } from '../src/store/instrumented.js';
import type { Store } from '../src/store/types.js';
import { commitTask } from '../src/steps/commit-task.js';
import { isPidAliveLocal, type StepEnv } from '../src/steps/env.js';
import { stageJob } from '../src/steps/stage-job.js';
import { forEachLimit } from '../src/util/pool.js';

/** The checkout's root (bench files run from dist/bench). */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = path.join(ROOT, 'bin', 'stagecommit.js');
// The CLI processes run the bundle, as the installed package does (the bench scripts build it first).
process.env.STAGECOMMIT_BUNDLE = '1';

export function benchEnv(store: Store, concurrency = 32): StepEnv & { store: InstrumentedStore } {
  const inst = new InstrumentedStore(store);
  return {
    store: inst,
    user: 'bench',
    host: os.hostname(),
    pid: process.pid,
    now: () => Date.now(),
    concurrency,
    leaseTtlMs: 60_000,
    isPidAlive: isPidAliveLocal,
    emit: () => {},
    metrics: () => inst.metrics(),
  };
}

export function seconds(since: bigint): number {
  return Number(process.hrtime.bigint() - since) / 1e9;
}

/** Wall seconds of a synchronous or asynchronous piece of work. */
export async function timed(fn: () => unknown): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return seconds(t);
}

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly seconds: number;
  /** Peak resident memory of the process in MB (from /usr/bin/time), or NaN where not measured. */
  readonly peakMb: number;
}

/**
 * Runs a command as its own process, asynchronously (a test server may answer from this very
 * process). With `peak`, it runs under /usr/bin/time to learn its peak resident memory.
 */
export function run(
  cmd: string,
  args: readonly string[],
  opts: { env?: NodeJS.ProcessEnv; peak?: boolean } = {},
): Promise<RunResult> {
  const marker = '@@peak-kb ';
  const [file, argv] = opts.peak ? ['/usr/bin/time', ['-f', `${marker}%M`, cmd, ...args]] : [cmd, [...args]];
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    const c = spawn(file, argv, { env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    c.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    c.on('error', reject);
    c.on('close', (code) => {
      const wall = seconds(t);
      const at = stderr.lastIndexOf(marker);
      const peakMb = at >= 0 ? Number.parseInt(stderr.slice(at + marker.length), 10) / 1024 : Number.NaN;
      resolve({ code, stdout, stderr: at >= 0 ? stderr.slice(0, at) : stderr, seconds: wall, peakMb });
    });
  });
}

export interface StepRun extends RunResult {
  readonly doc: Record<string, unknown>;
  readonly metrics: Record<string, number>;
}

/** Runs one stagecommit step with --json; a failed step stops the benchmark with its message. */
export async function runStep(
  args: readonly string[],
  opts: { env?: NodeJS.ProcessEnv; peak?: boolean } = {},
): Promise<StepRun> {
  const r = await run(process.execPath, [BIN, ...args, '--json'], opts);
  if (r.code !== 0) throw new Error(`stagecommit ${args[0]} failed (exit ${r.code}): ${r.stderr.trim()}`);
  const doc = JSON.parse(r.stdout) as Record<string, unknown>;
  return { ...r, doc, metrics: (doc.metrics ?? {}) as Record<string, number> };
}

/** One file's name and content in a benchmark tree: partition p, file f. */
export const fileName = (p: number, f: number): string => `part-${p}-${f}.csv`;
const content = (p: number, f: number): string => `row ${p} ${f}\n`;

export interface Shape {
  readonly partitions: number;
  readonly filesPerPartition: number;
  /** How many tasks write into each partition; file f of a partition goes to task f mod this. */
  readonly tasksPerPartition: number;
  /** Groups of tasks, each group writing its share of the partitions (default: partitions / tasksPerPartition). */
  readonly groups?: number;
}

/**
 * The task ids and, per task, where its files go. With several tasks per partition every task
 * writes into every partition it shares (a shuffle-then-write job): task t of group g writes
 * partitions g·k … where k = partitions / groups; with tasksPerPartition = partitions every task
 * writes one file into every partition.
 */
export function taskFiles(shape: Shape): { task: string; files: { partition: number; file: number }[] }[] {
  const { partitions, filesPerPartition, tasksPerPartition } = shape;
  const tasks: { task: string; files: { partition: number; file: number }[] }[] = [];
  const groups = shape.groups ?? Math.max(1, Math.floor(partitions / tasksPerPartition));
  const perGroup = Math.ceil(partitions / groups);
  for (let g = 0; g < groups; g++) {
    for (let t = 0; t < tasksPerPartition; t++) {
      const files: { partition: number; file: number }[] = [];
      for (let p = g * perGroup; p < Math.min(partitions, (g + 1) * perGroup); p++) {
        for (let f = t; f < filesPerPartition; f += tasksPerPartition) files.push({ partition: p, file: f });
      }
      tasks.push({ task: String(tasks.length), files });
    }
  }
  return tasks;
}

/**
 * Stages a job with dynamic partitions `dt` whose tasks wrote their attempt dirs themselves (as
 * --print-path writers do; `localPathOf` maps a store path to the local directory holding it),
 * then commits every task in this process (unless `commit` is false). Returns the staging path.
 */
export async function stagedJob(
  env: StepEnv,
  opts: {
    target: string;
    staging?: string;
    mode: 'create' | 'append';
    shape: Shape;
    localPathOf?: (p: string) => string;
    taskConcurrency?: number;
    commit?: boolean;
  },
): Promise<string> {
  const { stagingPath, job } = await stageJob(env, {
    targetPath: opts.target,
    stagingPath: opts.staging,
    mode: opts.mode,
    algorithm: 'v1',
    partition: [],
    partitionBy: ['dt'],
  });
  const layout = new JobLayout(stagingPath);
  const local = opts.localPathOf ?? ((p: string) => p);
  const tasks = taskFiles(opts.shape);
  for (const t of tasks) {
    const dir = local(layout.attemptDir(0, taskAttemptName(job.jobId, t.task, 0)));
    const made = new Set<number>();
    for (const { partition, file } of t.files) {
      const d = path.join(dir, `dt=${partition}`);
      if (!made.has(partition)) (mkdirSync(d, { recursive: true }), made.add(partition));
      writeFileSync(path.join(d, fileName(partition, file)), content(partition, file));
    }
  }
  if (opts.commit === false) return stagingPath;
  await forEachLimit(tasks, opts.taskConcurrency ?? 4, (t) =>
    commitTask(env, { stagingPath, task: t.task }).then(() => undefined),
  );
  return stagingPath;
}

/** The same files as a plain tree under `dir`, for the baselines. */
export function plainTree(dir: string, shape: Pick<Shape, 'partitions' | 'filesPerPartition'>): void {
  for (let p = 0; p < shape.partitions; p++) {
    const d = path.join(dir, `dt=${p}`);
    mkdirSync(d, { recursive: true });
    for (let f = 0; f < shape.filesPerPartition; f++) writeFileSync(path.join(d, fileName(p, f)), content(p, f));
  }
}

/** Partitions that already hold a file: the target of an append into existing partitions. */
export function existingPartitions(target: string, partitions: number): void {
  for (let p = 0; p < partitions; p++) {
    mkdirSync(path.join(target, `dt=${p}`), { recursive: true });
    writeFileSync(path.join(target, `dt=${p}`, 'old.csv'), 'old\n');
  }
}

/** Prints rows as a table with a header, columns padded to their widest cell. */
export function printTable(header: readonly string[], rows: readonly (readonly string[])[]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(header));
  for (const r of rows) console.log(line(r));
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(xs: readonly number[]): number {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
}

export const fmt = {
  s: (x: number): string => `${x.toFixed(3)} s`,
  ratio: (x: number): string => `${x.toFixed(2)}x`,
  mb: (x: number): string => (Number.isNaN(x) ? '-' : `${x.toFixed(0)} MB`),
  us: (x: number): string => `${x.toFixed(1)} µs`,
};
