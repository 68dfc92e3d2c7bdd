// stage: start a job (--target), put a task attempt's files into it (--job --task FILE…), or
// print the attempt dir for a writer (--job --task --print-path).

import { Command, Option } from 'commander';
import { attemptPath, stage, stageFiles, type FileSource } from '../../api/index.js';
import { UsageError } from '../../errors.js';
import { withHelp } from '../help.js';
import { collect, positiveInt, wholeNumber } from '../options.js';
import type { CliContext, Run, Runtime } from '../runtime.js';

interface StageFlags {
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
  move?: boolean;
}

async function newJob(rt: Runtime, o: StageFlags, files: string[]): Promise<void> {
  if (o.job !== undefined || o.task !== undefined || files.length) {
    throw new UsageError({ reason: 'stage-arguments', problem: 'new-job-extras' });
  }
  // The [files] flags (--attempt, --name, --print-path, --move) are no options of a new job.
  const { job: _j, task: _t, attempt: _a, name: _n, printPath: _p, move: _m, ...flags } = o;
  const r = await stage(rt.session, { ...flags, target: o.target! });
  rt.output(r, () => rt.ui.result(r.handle));
  rt.ui.message(stagedMessage(r));
}

/** What stage --target did: a new job, or the job a rerun's --job-id found. */
function stagedMessage(r: Awaited<ReturnType<typeof stage>>): string {
  if (!r.resumed) return `staged job ${r.jobId} for ${r.target} (${r.mode}, ${r.algorithm})`;
  if (r.state === 'committed')
    return `job ${r.jobId} was already committed into ${r.target}${r.committedAt ? ` (${r.committedAt})` : ''}: nothing to do; its steps say so`;
  if (r.state === 'committing')
    return `job ${r.jobId} is past its commit point: its commit-job finishes it (run commit-job again, or recover if it was killed)`;
  const of = r.tasksDeclared !== null ? ` of ${r.tasksDeclared}` : '';
  const n = r.discarded?.length ?? 0;
  const gone = n ? `; ${n} attempt(s) an earlier run left uncommitted discarded, rerun as new attempts` : '';
  return `resumed job ${r.jobId} for ${r.target} (${r.mode}, ${r.algorithm}): ${r.tasksCommitted}${of} task(s) committed, kept${gone}`;
}

/** FILE arguments → files for the API: paths, or stdin once under --name. */
function filesOf(ctx: CliContext, files: string[], o: StageFlags): FileSource[] {
  if (o.name !== undefined && !files.includes('-'))
    throw new UsageError({ reason: 'stage-arguments', problem: 'name-without-stdin' });
  if (files.filter((f) => f === '-').length > 1)
    throw new UsageError({ reason: 'stage-arguments', problem: 'stdin-twice' });
  if (o.printPath && files.length)
    throw new UsageError({ reason: 'stage-arguments', problem: 'print-path-with-files' });
  return files.map((f) => {
    if (f !== '-') return f;
    if (!o.name) throw new UsageError({ reason: 'stage-arguments', problem: 'stdin-without-name' });
    return { name: o.name, stream: ctx.stdin as never };
  });
}

async function taskFiles(rt: Runtime, o: StageFlags, files: string[]): Promise<void> {
  if (o.task === undefined) throw new UsageError({ reason: 'stage-arguments', problem: 'no-target-or-task' });
  const attempt = { job: rt.job(o.job), task: o.task, attempt: o.attempt, partition: o.partition };
  const list = filesOf(rt.ctx, files, o);
  const r = o.printPath
    ? await attemptPath(rt.session, attempt)
    : await stageFiles(rt.session, { ...attempt, files: list, move: o.move === true });
  rt.output(r, () =>
    o.printPath
      ? rt.ui.result(r.writeDir)
      : rt.ui.message(`staged ${r.files} file(s) for task ${r.task} attempt ${r.attempt}`),
  );
}

const FORMS = `Forms:
  stage --target URI [--mode M] [--partition K=V]… [--partition-by COLS] [--tasks N] …
      start a job; prints its handle (JOB)
  stage --job JOB --task T [--attempt N] [--partition K=V]… FILE…   (FILE - reads stdin, with --name)
      put files into task T's attempt N
  stage --job JOB --task T [--attempt N] [--partition K=V]… DIR
      put a local tree into task T's attempt N as it is laid out: its k=v dirs are the partition
      columns after the --partition values given (checked against --partition-by; exit 2 naming a
      dir that is not); _SUCCESS markers and every name starting with _ or . (_temporary/,
      .spark-staging-*, .crc) are left out with a warning; a symbolic link is refused (exit 2)
  stage --job JOB --task T [--attempt N] [--partition K=V]… --print-path
      create and print the attempt dir, for a writer that writes there itself
  stage --job JOB --task T … --move FILE…|DIR
      the files become the job's: on the staging dir's filesystem each is renamed into the attempt
      (one rename, no copy); elsewhere (another filesystem, S3, HDFS) copied, then removed once
      all are staged. A failed stage renames them back; a killed one leaves those renamed in the
      attempt (stage --print-path names the dir) and the rest in place. abort, and a commit-job
      that leaves the attempt out, delete them with the staging dir: keep a copy to run again.
      A DIR's dirs, and its names starting with _ or ., stay where they are.`;

export function stageCommand(run: Run): Command {
  const cmd = new Command('stage')
    .description("start a job (--target), or put a task attempt's files into it (--job --task)")
    .usage(
      '--target URI [options]  |  --job JOB --task T [--attempt N] [--partition K=V]… FILE…|DIR  |  --job JOB --task T --print-path',
    )
    .option('--target <uri>', '[new job] the table directory to write')
    .addOption(
      new Option('--mode <mode>', '[new job] what the commit does to the target')
        .choices(['create', 'append', 'overwrite'])
        .default('create'),
    )
    .option(
      '--partition-by <cols>',
      '[new job] all partition columns in order, for dynamic partitions (e.g. dt,region)',
    )
    .option('--staging-dir <uri>', "[new job] where the job's files wait (same store as the target)")
    .option(
      '--job-id <id>',
      '[new job] the job id (default: a fresh UUID); run again with the same id and parameters, stage goes on with that job',
    )
    .addOption(
      new Option('--algorithm <alg>', '[new job] v1: visible at commit-job; v2: each task at commit-task')
        .choices(['v1', 'v2'])
        .default('v1'),
    )
    .option('--tasks <n>', '[new job] declare tasks 0…N-1 that commit-job must find committed', positiveInt('--tasks'))
    .option(
      '--partition <k=v>',
      'a partition value (repeat, in column order); raw value, escaped as Hive does',
      collect,
    )
    .option('--job <job>', '[files] the job handle printed by stage --target (default: $STAGECOMMIT_JOB)')
    .option('--task <t>', '[files] the task id (a number or a token)')
    .option(
      '--attempt <n>',
      "[files] the task attempt (default: the task's newest while undecided, else the next)",
      wholeNumber('--attempt'),
    )
    .option('--name <name>', '[files] the file name for data read from stdin (FILE -)')
    .option('--print-path', '[files] print the attempt dir for a writer that writes there itself')
    .option('--move', '[files] consume the local files: renamed into the attempt (no copy), or removed once staged')
    .argument('[files...]', 'files to stage, or one directory (its tree); - reads stdin')
    .action((files: string[], o: StageFlags, c: Command) =>
      run((rt) => (o.target !== undefined ? newJob(rt, o, files) : taskFiles(rt, o, files)), c),
    );
  return withHelp(cmd, {
    before: FORMS,
    examples: [
      'JOB=$(stagecommit stage --target s3://lake/wh/sales --mode overwrite --partition-by dt --tasks 2)',
      'stagecommit stage --job "$JOB" --task 0 --partition dt=2026-11-30 part-0.parquet',
      'gzip -c log.txt | stagecommit stage --job "$JOB" --task 1 --partition dt=2026-11-30 --name log.txt.gz -',
      'stagecommit stage --job "$JOB" --task 2 out/   # out/dt=2026-11-30/part-0.parquet, …',
      'DIR=$(stagecommit stage --job "$JOB" --task 1 --print-path)   # a writer writes into $DIR',
      'JOB=$(stagecommit stage --target /data/sales --mode overwrite --partition-by dt --job-id "sales-$DT")   # a rerun goes on with it',
    ],
    exitCodes: [0, 1, 2, 3, 4, 6],
  });
}
