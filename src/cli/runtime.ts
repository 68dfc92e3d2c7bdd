// What every command runs with: the global options, the config, store opening, the step
// environment, and the one place where an error becomes an exit code (and a JSON error doc).

import { CommanderError, type Command } from 'commander';
import os from 'node:os';
import { ExitCode, StageCommitError, UsageError } from '../errors.js';
import { InstrumentedStore, type MutationHook } from '../store/instrumented.js';
import { parseUri, StoreOpener, type ParsedUri } from '../store/resolve.js';
import type { Store } from '../store/types.js';
import { isPidAliveLocal, type StepEnv } from '../steps/env.js';
import { loadConfig, type Config } from './config.js';
import { formatOps } from './render.js';
import { Ui, type UiStream } from './ui.js';

export interface GlobalOptions {
  json?: boolean;
  config?: string;
  quiet?: boolean;
  verbose?: boolean;
  allowUnsignedJob?: boolean;
}

/** The process around a CLI run; stdout and stderr default to the process's own. */
export interface CliContext {
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  readonly stdin: NodeJS.ReadableStream;
  readonly stdout?: UiStream;
  readonly stderr?: UiStream;
}

/** How a command's action runs its body: with a Runtime, errors handled by main(). */
export type Run = (fn: (rt: Runtime) => Promise<void>, cmd: Command) => Promise<void>;

export function uiFor(ctx: CliContext, opts: GlobalOptions): Ui {
  return new Ui(opts, ctx.env, ctx.stdout && ctx.stderr ? { stdout: ctx.stdout, stderr: ctx.stderr } : undefined);
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
    this.ui = uiFor(ctx, global);
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
    const inst = new InstrumentedStore(store, testHooks(this.ctx.env));
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

/** The one place an error becomes an exit code: a message on stderr, and under --json a document on stdout. */
export async function reportError(e: unknown, ui: Ui, globals: GlobalOptions): Promise<number> {
  await ui.stopSpinner();
  if (e instanceof CommanderError) return e.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
  let exitCode: number;
  if (e instanceof StageCommitError) {
    exitCode = e.exitCode;
    ui.error(e.message.replace(/\n/g, ' '));
  } else {
    exitCode = ExitCode.failed;
    ui.error((e as Error)?.message ?? String(e));
    if (globals.verbose) ui.raw(String((e as Error)?.stack) + '\n', 'stderr');
  }
  if (globals.json) ui.json({ error: { exitCode, kind: (e as Error)?.name ?? 'Error', message: (e as Error)?.message ?? String(e) } });
  return exitCode;
}
