// The command line: parses options, runs one protocol step, renders its result, maps errors to exit codes.

import { Command, CommanderError, Option } from 'commander';
import chalk from 'chalk';
import os from 'node:os';
import path from 'node:path';
import { ExitCode, StageCommitError, UsageError } from '../errors.js';
import { parsePartitionArg, type PartitionValue } from '../paths.js';
import { InstrumentedStore, type MutationHook } from '../store/instrumented.js';
import { parseUri, storeKey, StoreOpener, type ParsedUri } from '../store/resolve.js';
import type { Store } from '../store/types.js';
import { abort } from '../steps/abort.js';
import { commitJob } from '../steps/commit-job.js';
import { commitTask } from '../steps/commit-task.js';
import { isPidAliveLocal, type StepEnv, type StepEvent } from '../steps/env.js';
import { recover } from '../steps/recover.js';
import { stageFiles, type StagedSource } from '../steps/stage-files.js';
import { stageJob } from '../steps/stage-job.js';
import { status } from '../steps/status.js';
import { loadConfig, type Config } from './config.js';
import { formatBytes, formatOps, renderCommit, renderStatus } from './render.js';
import { cleanOrphansCommand } from './orphans-command.js';
import { adoptCommands, renderAbortDryRun, renderCommitDryRun, renderRecoverDryRun } from './adopt-command.js';

export interface GlobalOptions {
  json?: boolean;
  config?: string;
  quiet?: boolean;
  verbose?: boolean;
  allowUnsignedJob?: boolean;
}

/**
 * ora divides by the terminal's width to know how many lines its last frame took: a width of 0
 * (`script`, some CI runners) makes it clear lines forever, and a busy loop never lets a signal
 * handler run. Spinners need a terminal whose width is known and sane.
 */
const SPINNER_MIN_COLUMNS = 20;

function spinnerTerminal(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv): boolean {
  return Boolean(stream.isTTY) && (stream.columns ?? 0) >= SPINNER_MIN_COLUMNS && env.TERM !== 'dumb';
}

/** Where a command writes: stdout for the result, stderr for the rest; a spinner only on a fit terminal. */
export class Ui {
  private spinner: { text: string; stop(): void; start(): unknown } | undefined;
  private spinnerLoading: Promise<void> | undefined;
  private spinnerText = '';
  /** Set when the spinner is stopped for good, or the terminal stopped being fit for one. */
  private spinnerOver = false;
  constructor(readonly opts: GlobalOptions, private readonly env: NodeJS.ProcessEnv) {
    if (env.NO_COLOR !== undefined || !process.stderr.isTTY) chalk.level = 0;
  }

  get interactive(): boolean {
    return !this.spinnerOver && spinnerTerminal(process.stderr, this.env) && !this.opts.quiet && !this.opts.json && this.env.CI === undefined;
  }

  result(text: string): void {
    if (text) process.stdout.write(text.endsWith('\n') ? text : text + '\n');
  }

  json(doc: unknown): void {
    process.stdout.write(JSON.stringify(doc, null, 2) + '\n');
  }

  message(text: string): void {
    if (this.opts.quiet || this.opts.json) return;
    this.pause(() => process.stderr.write(text + '\n'));
  }

  verbose(text: string): void {
    if (this.opts.verbose && !this.opts.quiet) this.pause(() => process.stderr.write(chalk.dim(text) + '\n'));
  }

  error(text: string): void {
    this.spinnerOver = true;
    this.endSpinner();
    process.stderr.write(`${chalk.red('stagecommit: error:')} ${text}\n`);
  }

  private pause(write: () => void): void {
    if (this.spinner) {
      this.spinner.stop();
      write();
      this.spinner.start();
    } else write();
  }

  /** Progress from the steps: a spinner on a TTY, lines with --verbose, nothing otherwise. */
  event(e: StepEvent): void {
    if (e.type === 'warn') return this.message(chalk.yellow(`warning: ${e.message}`));
    const text = e.type === 'progress' ? `${e.label} ${e.done}/${e.total}` : e.type === 'phase' ? e.label : e.message;
    if (e.type !== 'progress') this.verbose(text);
    if (!this.interactive) return;
    this.spinnerText = text;
    if (this.spinner) {
      this.spinner.text = text;
      return;
    }
    this.spinnerLoading ??= import('ora').then(({ default: ora }) => {
      if (!this.interactive) return; // stopped, or the terminal changed, while ora loaded
      // stdin stays as it is: `stage … -` may read it, and the terminal turns Ctrl-C into SIGINT.
      this.spinner = ora({ text: this.spinnerText, stream: process.stderr, discardStdin: false }).start();
      this.watchWhileSpinning(true);
    });
  }

  async stopSpinner(): Promise<void> {
    this.spinnerOver = true;
    await this.spinnerLoading;
    this.endSpinner();
  }

  private endSpinner(): void {
    this.watchWhileSpinning(false);
    this.spinner?.stop();
    this.spinner = undefined;
  }

  /** A terminal made narrower than a spinner can draw on gets plain output from then on. */
  private readonly resized = (): void => {
    if (spinnerTerminal(process.stderr, this.env)) return;
    this.spinnerOver = true;
    this.endSpinner();
  };

  /**
   * A spinner hides the cursor and keeps a timer: SIGINT and SIGTERM restore the cursor and end
   * the step at once, with the shell's code for the signal (130, 143). Every step is safe to
   * run again after it.
   */
  private readonly interrupted = (signal: NodeJS.Signals): void => {
    this.spinnerOver = true;
    this.endSpinner();
    process.stderr.write(`stagecommit: stopped by ${signal}; the step is safe to run again\n`);
    process.exit(128 + (os.constants.signals[signal] ?? 0));
  };

  private watchWhileSpinning(on: boolean): void {
    if (on) {
      process.stderr.on('resize', this.resized);
      process.on('SIGINT', this.interrupted);
      process.on('SIGTERM', this.interrupted);
    } else {
      process.stderr.off('resize', this.resized);
      process.off('SIGINT', this.interrupted);
      process.off('SIGTERM', this.interrupted);
    }
  }
}

export interface CliContext {
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  readonly stdin: NodeJS.ReadableStream;
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function positiveInt(name: string) {
  return (v: string): number => {
    if (!/^\d+$/.test(v) || Number(v) < 1) throw new UsageError(`${name} must be a positive whole number, got '${v}'`);
    return Number(v);
  };
}

function wholeNumber(name: string) {
  return (v: string): number => {
    if (!/^\d{1,9}$/.test(v)) throw new UsageError(`${name} must be a whole number (0, 1, …), got '${v}'`);
    return Number(v);
  };
}

/**
 * Test hooks (crash and race tests): STAGECOMMIT_TEST_KILL_AT=k SIGKILLs this process before its
 * k-th store mutation; STAGECOMMIT_TEST_DELAY_MS=n waits n ms before each mutation.
 */
function testHooks(env: NodeJS.ProcessEnv): MutationHook | undefined {
  const killAt = Number(env.STAGECOMMIT_TEST_KILL_AT ?? 0);
  const kill: MutationHook | undefined = killAt ? (n) => void (n >= killAt && process.kill(process.pid, 'SIGKILL')) : undefined;
  const delay = Number(env.STAGECOMMIT_TEST_DELAY_MS ?? 0);
  if (!kill && !delay) return undefined;
  return async (n, op, p) => {
    if (delay) await new Promise((r) => setTimeout(r, delay));
    kill?.(n, op, p);
  };
}

export class Runtime {
  private readonly opener: StoreOpener;
  readonly config: Config;
  readonly ui: Ui;
  private instrumented: InstrumentedStore | undefined;

  constructor(readonly ctx: CliContext, readonly global: GlobalOptions) {
    this.ui = new Ui(global, ctx.env);
    this.config = loadConfig(global.config ?? ctx.env.STAGECOMMIT_CONFIG);
    this.opener = new StoreOpener({ config: this.config.raw, env: ctx.env });
  }

  /** A URI or path → its store and the path inside it. */
  async location(raw: string): Promise<{ uri: ParsedUri; store: Store; path: string }> {
    const uri = parseUri(raw, this.ctx.cwd);
    return { uri, ...(await this.opener.open(uri)) };
  }

  /** The step environment around one store; every call goes through the counting wrapper. */
  stepEnv(store: Store, concurrency?: number): StepEnv {
    const hook = testHooks(this.ctx.env);
    const inst = new InstrumentedStore(store, hook);
    this.instrumented = inst;
    return {
      store: inst,
      user: this.ctx.env.USER ?? os.userInfo().username,
      host: os.hostname(),
      pid: process.pid,
      now: () => Date.now(),
      concurrency: concurrency ?? this.config.concurrency,
      leaseTtlMs: this.config.leaseTtlSeconds * 1000,
      isPidAlive: isPidAliveLocal,
      emit: (e) => this.ui.event(e),
      metrics: () => inst.metrics(),
      allowUnsignedJob: this.global.allowUnsignedJob,
    };
  }

  async job(opt: string | undefined): Promise<{ store: Store; path: string }> {
    const handle = opt ?? this.ctx.env.STAGECOMMIT_JOB;
    if (!handle) throw new UsageError("no job given: pass --job HANDLE (what 'stagecommit stage --target …' printed) or set STAGECOMMIT_JOB");
    return this.location(handle);
  }

  opsLine(): void {
    if (this.instrumented) this.ui.verbose(`store operations: ${formatOps(this.instrumented.counts)}`);
  }
}

export function buildProgram(ctx: CliContext, run: (fn: (rt: Runtime) => Promise<void>, cmd: Command) => Promise<void>): Command {
  const program = new Command('stagecommit')
    .description('All-or-nothing batch writes into table directories (local filesystem, S3, HDFS).')
    .version('0.1.0')
    .option('--json', 'print the result as one JSON document on stdout')
    .option('--config <file>', 'YAML config file (default: $STAGECOMMIT_CONFIG)')
    .option('-q, --quiet', 'print nothing but the result and errors')
    .option('-v, --verbose', 'print each phase and the store operation counts on stderr')
    .option('--allow-unsigned-job', "accept a hand-written _job.yaml without its 'end:' check line")
    .showSuggestionAfterError()
    .addHelpText(
      'after',
      `
Targets: /data/sales, file:///data/sales, s3://bucket/wh/sales, hdfs://nn:9870/wh/sales,
webhdfs://…, swebhdfs://…, hdfs://NAMESERVICE/… (name nodes listed in the config).

Example:
  JOB=$(stagecommit stage --target /data/sales --mode overwrite --partition-by dt --tasks 1)
  stagecommit stage --job "$JOB" --task 0 --partition dt=2026-11-30 part-0.parquet
  stagecommit commit-task --job "$JOB" --task 0 && stagecommit commit-job --job "$JOB"

Exit codes: 0 done, 1 failed (store error, damaged manifest: nothing changed), 2 bad usage or input,
3 commit denied (another attempt won, or it was aborted), 4 conflict (locked, wrong state,
target changed, another job replaced or is still committing the same partitions),
5 incomplete (declared tasks missing), 130/143 stopped by SIGINT/SIGTERM (run the step
again). JOB defaults to $STAGECOMMIT_JOB.`,
    );

  program
    .command('stage')
    .description('start a job (--target), or put a task attempt\'s files into it (--job --task)')
    .usage('--target URI [options]  |  --job JOB --task T [--attempt N] [--partition K=V]… FILE…  |  --job JOB --task T --print-path')
    .option('--target <uri>', 'the table directory to write (new job)')
    .addOption(new Option('--mode <mode>', 'what the commit does to the target').choices(['create', 'append', 'overwrite']).default('create'))
    .option('--partition <k=v>', 'a partition value (repeat, in column order); raw value, escaped as Hive does', collect)
    .option('--partition-by <cols>', 'all partition columns in order, for dynamic partitions (e.g. dt,region)')
    .option('--staging-dir <uri>', 'where the job\'s files wait (same store as the target)')
    .option('--job-id <id>', 'the job id (default: a fresh UUID)')
    .addOption(new Option('--algorithm <alg>', 'v1: visible at commit-job; v2: each task at commit-task').choices(['v1', 'v2']).default('v1'))
    .option('--tasks <n>', 'declare tasks 0…N-1 that commit-job must find committed', positiveInt('--tasks'))
    .option('--job <job>', 'the job handle printed by stage --target')
    .option('--task <t>', 'the task id (a number or a token)')
    .option('--attempt <n>', 'the task attempt (default 0)', wholeNumber('--attempt'))
    .option('--name <name>', 'the file name for data read from stdin (FILE -)')
    .option('--print-path', 'print the attempt dir for a writer that writes there itself')
    .argument('[files...]', 'files to stage; - reads stdin')
    .action((files: string[], o, cmd: Command) =>
      run(async (rt) => {
        if (o.target !== undefined) {
          if (o.job !== undefined || o.task !== undefined || files.length) {
            throw new UsageError('stage --target starts a new job and takes no --job, --task or files: stage files in a second call with --job');
          }
          const target = await rt.location(o.target);
          if (target.uri.scheme === 's3' && target.uri.path === '/') {
            throw new UsageError(`the target ${o.target} is a whole bucket: give a table prefix under it, e.g. s3://${target.uri.authority}/warehouse/sales`);
          }
          const stagingRaw = o.stagingDir ?? undefined;
          let stagingPath: string | undefined;
          let stagingRoot: string | undefined;
          const check = async (raw: string, what: string) => {
            const s = await rt.location(raw);
            if (storeKey(s.uri) !== storeKey(target.uri)) {
              throw new UsageError(`${what} ${raw} is not on the target's store (${storeKey(target.uri)}): the staging dir must be on the same store, bucket or namespace`);
            }
            return s.path;
          };
          if (stagingRaw) stagingPath = await check(stagingRaw, '--staging-dir');
          else if (rt.config.stagingRoot) stagingRoot = await check(rt.config.stagingRoot, 'stagingRoot');
          const partition: PartitionValue[] = (o.partition ?? []).map(parsePartitionArg);
          const env = rt.stepEnv(target.store);
          const r = await stageJob(env, {
            targetPath: target.path,
            stagingPath,
            stagingRoot,
            mode: o.mode,
            algorithm: o.algorithm,
            partition,
            partitionBy: o.partitionBy === undefined ? undefined : String(o.partitionBy).split(',').filter((c: string) => c !== ''),
            jobId: o.jobId,
            tasks: o.tasks,
          });
          if (rt.global.json) rt.ui.json({ jobId: r.jobId, handle: r.handle, target: r.job.target, mode: r.job.mode, algorithm: r.job.algorithm, partitionBy: r.job.partitionBy });
          else rt.ui.result(r.handle);
          rt.ui.message(`staged job ${r.jobId} for ${r.job.target} (${r.job.mode}, ${r.job.algorithm})`);
          return;
        }
        if (o.task === undefined) throw new UsageError('stage needs --target URI (new job) or --job JOB --task T (task files)');
        const job = await rt.job(o.job);
        if (o.name !== undefined && !files.includes('-')) throw new UsageError('--name names the data read from stdin: give FILE - as well');
        const sources: StagedSource[] = files.map((f) => {
          if (f === '-') {
            if (!o.name) throw new UsageError('reading stdin (FILE -) needs --name NAME for the file it becomes');
            return { stream: ctx.stdin as never, name: o.name as string };
          }
          return { localPath: path.resolve(ctx.cwd, f), name: path.basename(f) };
        });
        if (files.filter((f) => f === '-').length > 1) throw new UsageError('stdin (-) can be read once per call');
        if (o.printPath && files.length) throw new UsageError('--print-path takes no files: either print the dir or stage files');
        for (const s of sources) {
          if ('localPath' in s) {
            const st = await import('node:fs/promises').then((fs) => fs.stat(s.localPath).catch(() => null));
            if (!st) throw new UsageError(`cannot read ${s.localPath}: no such file; nothing was staged`);
            if (!st.isFile()) throw new UsageError(`${s.localPath} is not a regular file: stage files, or use --print-path and write into the dir`);
          }
        }
        const env = rt.stepEnv(job.store);
        const r = await stageFiles(env, { stagingPath: job.path, task: o.task, attempt: o.attempt, partition: (o.partition ?? []).map(parsePartitionArg), files: sources, printPath: o.printPath });
        if (rt.global.json) rt.ui.json(r);
        else if (o.printPath) rt.ui.result(r.attemptDir);
        else rt.ui.message(`staged ${r.files.length} file(s) for task ${r.task} attempt ${r.attempt}`);
      }, cmd),
    );

  program
    .command('commit-task')
    .description('claim the task for this attempt (first claim wins) and promote its files')
    .option('--job <job>', 'the job handle')
    .requiredOption('--task <t>', 'the task id')
    .option('--attempt <n>', 'the task attempt (default 0)', wholeNumber('--attempt'))
    .action((o, cmd: Command) =>
      run(async (rt) => {
        const job = await rt.job(o.job);
        const r = await commitTask(rt.stepEnv(job.store), { stagingPath: job.path, task: o.task, attempt: o.attempt });
        if (rt.global.json) rt.ui.json(r);
        rt.ui.message(`${r.outcome === 'already' ? 'already committed' : 'committed'} task ${r.task} (${r.taskAttempt}): ${r.files} file(s), ${formatBytes(r.bytes)}`);
      }, cmd),
    );

  program
    .command('commit-job')
    .description('publish every committed task into the target, all at once')
    .option('--job <job>', 'the job handle')
    .option('--parallelism <n>', 'store operations in flight (default: config concurrency, 32)', positiveInt('--parallelism'))
    .option('--dry-run', 'print the plan (files, partitions, what an overwrite displaces, store operations); change nothing')
    .action((o, cmd: Command) =>
      run(async (rt) => {
        const job = await rt.job(o.job);
        if (o.dryRun) return dryRun(rt, await import('../steps/dry-run.js').then((m) => m.commitJobDryRun(rt.stepEnv(job.store, o.parallelism), { stagingPath: job.path })), renderCommitDryRun);
        const r = await commitJob(rt.stepEnv(job.store, o.parallelism), { stagingPath: job.path });
        await rt.ui.stopSpinner();
        if (rt.global.json) rt.ui.json(r);
        else rt.ui.result(r.success);
        rt.ui.message(renderCommit(r));
      }, cmd),
    );

  program
    .command('abort')
    .description('throw away one task attempt (--task) or the whole job')
    .option('--job <job>', 'the job handle')
    .option('--task <t>', 'abort only this task attempt')
    .option('--attempt <n>', 'the task attempt (default 0)', wholeNumber('--attempt'))
    .option('--dry-run', 'print what would be thrown away; change nothing')
    .action((o, cmd: Command) =>
      run(async (rt) => {
        const job = await rt.job(o.job);
        if (o.attempt !== undefined && o.task === undefined) throw new UsageError('--attempt needs --task: it names one attempt of one task');
        if (o.dryRun) return dryRun(rt, await import('../steps/dry-run.js').then((m) => m.abortDryRun(rt.stepEnv(job.store), { stagingPath: job.path, task: o.task, attempt: o.attempt })), renderAbortDryRun);
        const r = await abort(rt.stepEnv(job.store), { stagingPath: job.path, task: o.task, attempt: o.attempt });
        if (rt.global.json) rt.ui.json(r);
        rt.ui.message(
          r.outcome === 'nothing'
            ? 'nothing to abort: no job at that handle (finished, aborted or never staged)'
            : r.scope === 'job'
              ? `aborted job ${r.jobId}: its staged data is gone, the target was not touched`
              : `aborted ${r.taskAttempt}${r.wasDenied ? ' (another attempt had won the task)' : ''}`,
        );
      }, cmd),
    );

  program
    .command('recover')
    .description('after a killed run: keep committed tasks, start the next attempt, print the tasks still to run')
    .option('--job <job>', 'the job handle')
    .option('--dry-run', 'print what recover would keep, finish and run again; change nothing')
    .action((o, cmd: Command) =>
      run(async (rt) => {
        const job = await rt.job(o.job);
        if (o.dryRun) return dryRun(rt, await import('../steps/dry-run.js').then((m) => m.recoverDryRun(rt.stepEnv(job.store), { stagingPath: job.path })), renderRecoverDryRun);
        const r = await recover(rt.stepEnv(job.store), { stagingPath: job.path });
        await rt.ui.stopSpinner();
        if (rt.global.json) rt.ui.json(r);
        else rt.ui.result(r.tasksToRun.join('\n'));
        if (r.state === 'committed') rt.ui.message(`job ${r.jobId} was past its commit point: rolled forward to committed`);
        else if (r.state === 'aborted') rt.ui.message(`job ${r.jobId} was aborted: finished removing its staging dir`);
        else {
          const extra = [r.finished.length ? `finished ${r.finished.length} interrupted task commit(s)` : '', r.undone.length ? `undid ${r.undone.length}` : ''].filter(Boolean).join(', ');
          rt.ui.message(`job ${r.jobId}: app attempt ${r.appAttempt}; ${r.committedTasks.length} task(s) kept, ${r.tasksToRun.length} to run${extra ? `; ${extra}` : ''}`);
        }
      }, cmd),
    );

  program
    .command('status')
    .description('show a job: state, tasks, files, bytes, age, owner')
    .option('--job <job>', 'the job handle')
    .action((o, cmd: Command) =>
      run(async (rt) => {
        const job = await rt.job(o.job);
        const r = await status(rt.stepEnv(job.store), { stagingPath: job.path });
        if (rt.global.json) rt.ui.json(r);
        else rt.ui.result(renderStatus(r));
      }, cmd),
    );

  cleanOrphansCommand(program, run);
  adoptCommands(program, run);
  return program;
}

/** A dry run's result: the same document as the real step's, or its plan as text, on stdout. */
function dryRun<T>(rt: Runtime, r: T, render: (r: T) => string): void {
  if (rt.global.json) rt.ui.json(r);
  else rt.ui.result(render(r));
}

export async function main(argv: string[], ctx: CliContext): Promise<number> {
  let exitCode: number = ExitCode.ok;
  let globals: GlobalOptions = {};
  let rtUi: Ui | undefined;
  const program = buildProgram(ctx, async (fn, cmd) => {
    globals = cmd.optsWithGlobals() as GlobalOptions;
    const rt = new Runtime(ctx, globals);
    rtUi = rt.ui;
    await fn(rt);
    await rt.ui.stopSpinner();
    rt.opsLine();
  });
  program.exitOverride();
  program.configureOutput({ writeErr: (s) => process.stderr.write(s), outputError: (s, write) => write(s) });
  for (const c of program.commands) c.exitOverride();
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (e) {
    const ui = rtUi ?? new Ui(globals, ctx.env);
    await ui.stopSpinner();
    if (e instanceof CommanderError) {
      return e.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    if (e instanceof StageCommitError) {
      exitCode = e.exitCode;
      ui.error(e.message.replace(/\n/g, ' '));
    } else {
      exitCode = ExitCode.failed;
      ui.error((e as Error)?.message ?? String(e));
      if (globals.verbose) process.stderr.write(String((e as Error)?.stack) + '\n');
    }
    if (globals.json) ui.json({ error: { exitCode, kind: (e as Error)?.name ?? 'Error', message: (e as Error)?.message ?? String(e) } });
  }
  return exitCode;
}
