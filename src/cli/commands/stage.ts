// stage: start a job (--target), or put a task attempt's files into it (--job --task [--print-path]).

import { Command, Option } from 'commander';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { UsageError } from '../../errors.js';
import { parsePartitionArg } from '../../paths.js';
import { storeKey } from '../../store/resolve.js';
import { stageFiles, type StagedSource } from '../../steps/stage-files.js';
import { stageJob } from '../../steps/stage-job.js';
import { collect, positiveInt, wholeNumber } from '../options.js';
import type { CliContext, Run, Runtime } from '../runtime.js';

interface StageOptions {
  target?: string;
  mode: 'create' | 'append' | 'overwrite';
  partition?: string[];
  partitionBy?: string;
  stagingDir?: string;
  jobId?: string;
  algorithm: 'v1' | 'v2';
  tasks?: number;
  job?: string;
  task?: string;
  attempt?: number;
  name?: string;
  printPath?: boolean;
}

/** The staging dir given (--staging-dir, else the config's stagingRoot), checked to be on the target's store. */
async function stagingOf(rt: Runtime, o: StageOptions, targetKey: string): Promise<{ stagingPath?: string; stagingRoot?: string }> {
  const raw = o.stagingDir ?? rt.config.stagingRoot;
  if (!raw) return {};
  const what = o.stagingDir ? '--staging-dir' : 'stagingRoot';
  const s = await rt.location(raw);
  if (storeKey(s.uri) !== targetKey) {
    throw new UsageError(`${what} ${raw} is not on the target's store (${targetKey}): the staging dir must be on the same store, bucket or namespace`);
  }
  return o.stagingDir ? { stagingPath: s.path } : { stagingRoot: s.path };
}

async function stageNewJob(rt: Runtime, o: StageOptions, files: string[]): Promise<void> {
  if (o.job !== undefined || o.task !== undefined || files.length) {
    throw new UsageError('stage --target starts a new job and takes no --job, --task or files: stage files in a second call with --job');
  }
  const target = await rt.location(o.target!);
  const staging = await stagingOf(rt, o, storeKey(target.uri));
  const r = await stageJob(rt.stepEnv(target.store), {
    targetPath: target.path,
    ...staging,
    mode: o.mode,
    algorithm: o.algorithm,
    partition: (o.partition ?? []).map(parsePartitionArg),
    partitionBy: o.partitionBy === undefined ? undefined : String(o.partitionBy).split(',').filter((c) => c !== ''),
    jobId: o.jobId,
    tasks: o.tasks,
  });
  if (rt.global.json) rt.ui.json({ jobId: r.jobId, handle: r.handle, target: r.job.target, mode: r.job.mode, algorithm: r.job.algorithm, partitionBy: r.job.partitionBy });
  else rt.ui.result(r.handle);
  rt.ui.message(`staged job ${r.jobId} for ${r.job.target} (${r.job.mode}, ${r.job.algorithm})`);
}

/** FILE arguments → sources for the step: local regular files, or stdin once under --name. */
async function sourcesOf(ctx: CliContext, files: string[], o: StageOptions): Promise<StagedSource[]> {
  if (o.name !== undefined && !files.includes('-')) throw new UsageError('--name names the data read from stdin: give FILE - as well');
  if (files.filter((f) => f === '-').length > 1) throw new UsageError('stdin (-) can be read once per call');
  if (o.printPath && files.length) throw new UsageError('--print-path takes no files: either print the dir or stage files');
  const sources: StagedSource[] = [];
  for (const f of files) {
    if (f === '-') {
      if (!o.name) throw new UsageError('reading stdin (FILE -) needs --name NAME for the file it becomes');
      sources.push({ stream: ctx.stdin as never, name: o.name });
      continue;
    }
    const localPath = path.resolve(ctx.cwd, f);
    const st = await stat(localPath).catch(() => null);
    if (!st) throw new UsageError(`cannot read ${localPath}: no such file; nothing was staged`);
    if (!st.isFile()) throw new UsageError(`${localPath} is not a regular file: stage files, or use --print-path and write into the dir`);
    sources.push({ localPath, name: path.basename(f) });
  }
  return sources;
}

async function stageTaskFiles(rt: Runtime, o: StageOptions, files: string[]): Promise<void> {
  if (o.task === undefined) throw new UsageError('stage needs --target URI (new job) or --job JOB --task T (task files)');
  const job = await rt.job(o.job);
  const sources = await sourcesOf(rt.ctx, files, o);
  const r = await stageFiles(rt.stepEnv(job.store), {
    stagingPath: job.path,
    task: o.task,
    attempt: o.attempt,
    partition: (o.partition ?? []).map(parsePartitionArg),
    files: sources,
    printPath: o.printPath,
  });
  if (rt.global.json) rt.ui.json(r);
  else if (o.printPath) rt.ui.result(r.attemptDir);
  else rt.ui.message(`staged ${r.files.length} file(s) for task ${r.task} attempt ${r.attempt}`);
}

export function stageCommand(run: Run): Command {
  return new Command('stage')
    .description("start a job (--target), or put a task attempt's files into it (--job --task)")
    .usage('--target URI [options]  |  --job JOB --task T [--attempt N] [--partition K=V]… FILE…  |  --job JOB --task T --print-path')
    .option('--target <uri>', 'the table directory to write (new job)')
    .addOption(new Option('--mode <mode>', 'what the commit does to the target').choices(['create', 'append', 'overwrite']).default('create'))
    .option('--partition <k=v>', 'a partition value (repeat, in column order); raw value, escaped as Hive does', collect)
    .option('--partition-by <cols>', 'all partition columns in order, for dynamic partitions (e.g. dt,region)')
    .option('--staging-dir <uri>', "where the job's files wait (same store as the target)")
    .option('--job-id <id>', 'the job id (default: a fresh UUID)')
    .addOption(new Option('--algorithm <alg>', 'v1: visible at commit-job; v2: each task at commit-task').choices(['v1', 'v2']).default('v1'))
    .option('--tasks <n>', 'declare tasks 0…N-1 that commit-job must find committed', positiveInt('--tasks'))
    .option('--job <job>', 'the job handle printed by stage --target')
    .option('--task <t>', 'the task id (a number or a token)')
    .option('--attempt <n>', 'the task attempt (default 0)', wholeNumber('--attempt'))
    .option('--name <name>', 'the file name for data read from stdin (FILE -)')
    .option('--print-path', 'print the attempt dir for a writer that writes there itself')
    .argument('[files...]', 'files to stage; - reads stdin')
    .action((files: string[], o: StageOptions, cmd: Command) =>
      run((rt) => (o.target !== undefined ? stageNewJob(rt, o, files) : stageTaskFiles(rt, o, files)), cmd),
    );
}
