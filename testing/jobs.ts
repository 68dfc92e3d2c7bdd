// Scenario helpers: stage a job, its tasks' files and commits through the CLI. The helpers that
// set a test up (stage, stageTask, prepare, runJob) run main() in this process: the same command
// line without a process start-up each. The ones a test judges (commitTask, commitJob) start the
// command as a process, as a user would. Races pass `cli` to run every step as a process.

import { mkdtemp, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { cli, type CliOptions, type CliResult } from './cli.js';
import { inProcess } from './main.js';
import type { StoreSandbox } from './stores.js';

/** How a helper runs a command line: `inProcess` (main() here) or `cli` (a child process). */
export type Runner = (args: readonly string[], opts?: CliOptions) => Promise<CliResult>;

async function must(run: Runner, args: readonly string[], opts: CliOptions): Promise<string> {
  const r = await run(args, opts);
  if (r.code !== 0) throw new Error(`stagecommit ${args.join(' ')} exited ${r.code ?? r.signal}: ${r.stderr}`);
  return r.stdout.trim();
}

export interface TaskSpec {
  readonly task: string;
  readonly attempt?: number;
  readonly partition?: readonly string[];
  /** File name → content. */
  readonly files: Record<string, string>;
  /** Written into the attempt dir by an outside writer (`stage --print-path`), not by `stage FILE`. */
  readonly writer?: boolean;
}

export interface JobSpec {
  readonly target: string;
  readonly mode?: 'create' | 'append' | 'overwrite';
  readonly algorithm?: 'v1' | 'v2';
  readonly partition?: readonly string[];
  readonly partitionBy?: string;
  readonly tasks?: number;
  readonly stagingDir?: string;
  readonly jobId?: string;
}

let inputs: string | undefined;

/** Writes local input files for staging; returns their paths. */
export async function localFiles(files: Record<string, string>): Promise<string[]> {
  inputs ??= await mkdtemp(path.join(os.tmpdir(), 'stagecommit-input-'));
  const dir = await mkdtemp(path.join(inputs, 'f-'));
  const out: string[] = [];
  for (const [name, content] of Object.entries(files)) {
    const p = path.join(dir, name);
    await mkdir(path.dirname(p), { recursive: true });
    await writeFile(p, content);
    out.push(p);
  }
  return out;
}

export function stageArgs(sb: StoreSandbox, spec: JobSpec): string[] {
  const args = ['stage', '--target', sb.uri(spec.target), '--mode', spec.mode ?? 'create'];
  if (spec.algorithm) args.push('--algorithm', spec.algorithm);
  for (const p of spec.partition ?? []) args.push('--partition', p);
  if (spec.partitionBy) args.push('--partition-by', spec.partitionBy);
  if (spec.tasks !== undefined) args.push('--tasks', String(spec.tasks));
  if (spec.stagingDir) args.push('--staging-dir', sb.uri(spec.stagingDir));
  if (spec.jobId) args.push('--job-id', spec.jobId);
  return args;
}

/** Stages a new job; returns its handle. */
export async function stage(sb: StoreSandbox, spec: JobSpec, run: Runner = inProcess): Promise<string> {
  return must(run, stageArgs(sb, spec), { env: sb.env });
}

export async function stageTask(sb: StoreSandbox, job: string, t: TaskSpec, run: Runner = inProcess): Promise<void> {
  const args = ['stage', '--job', job, '--task', t.task, '--attempt', String(t.attempt ?? 0)];
  for (const p of t.partition ?? []) args.push('--partition', p);
  args.push(...(await localFiles(t.files)));
  await must(run, args, { env: sb.env });
}

export function commitTask(
  sb: StoreSandbox,
  job: string,
  task: string,
  attempt = 0,
  run: Runner = cli,
): Promise<CliResult> {
  return run(['commit-task', '--job', job, '--task', task, '--attempt', String(attempt)], { env: sb.env });
}

/** Stages a job and its tasks, commits each task; returns the handle (commit-job not run). */
export async function prepare(
  sb: StoreSandbox,
  spec: JobSpec,
  tasks: readonly TaskSpec[],
  run: Runner = inProcess,
): Promise<string> {
  const job = await stage(sb, spec, run);
  for (const t of tasks) {
    await stageTask(sb, job, t, run);
    await must(run, ['commit-task', '--job', job, '--task', t.task, '--attempt', String(t.attempt ?? 0)], {
      env: sb.env,
    });
  }
  return job;
}

export function commitJob(sb: StoreSandbox, job: string, extra: string[] = [], run: Runner = cli): Promise<CliResult> {
  return run(['commit-job', '--job', job, ...extra], { env: sb.env });
}

/** Stages, commits every task and the job; fails unless all exit 0. */
export async function runJob(
  sb: StoreSandbox,
  spec: JobSpec,
  tasks: readonly TaskSpec[],
  run: Runner = inProcess,
): Promise<string> {
  const job = await prepare(sb, spec, tasks, run);
  await must(run, ['commit-job', '--job', job], { env: sb.env });
  return job;
}
