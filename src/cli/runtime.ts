// What every command runs with: the global options, the config, store opening, the step
// environment, and the one place where an error becomes an exit code (and a JSON error doc).

import { CommanderError, type Command } from 'commander';
import { errorDoc, errorExitCode, errorKind } from '../api/errors.js';
import { Session } from '../api/session.js';
import { ExitCode, UsageError } from '../errors.js';
import type { MutationHook } from '../store/instrumented.js';
import { loadConfig } from './config.js';
import { tightenHeapFor } from './heap.js';
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
  const kill: MutationHook | undefined = killAt
    ? (n) => void (n >= killAt && process.kill(process.pid, 'SIGKILL'))
    : undefined;
  const delay = Number(env.STAGECOMMIT_TEST_DELAY_MS ?? 0);
  if (!kill && !delay) return undefined;
  return async (n, op, p) => {
    if (delay) await new Promise((r) => setTimeout(r, delay));
    await kill?.(n, op, p);
  };
}

/** One command line's UI and API session: progress from the steps goes to the UI. */
export class Runtime {
  readonly ui: Ui;
  readonly session: Session;

  constructor(
    readonly ctx: CliContext,
    readonly global: GlobalOptions,
  ) {
    this.ui = uiFor(ctx, global);
    this.session = new Session({
      config: loadConfig(global.config ?? ctx.env.STAGECOMMIT_CONFIG, ctx.env),
      env: ctx.env,
      cwd: ctx.cwd,
      onProgress: (e) => {
        if (e.type === 'output') tightenHeapFor(e.files);
        this.ui.event(e);
      },
      allowUnsignedJob: global.allowUnsignedJob,
      beforeMutation: testHooks(ctx.env),
    });
  }

  /** --job, else $STAGECOMMIT_JOB (the API says what to do when neither is given). */
  job(opt: string | undefined): string {
    return opt ?? this.ctx.env.STAGECOMMIT_JOB ?? '';
  }

  /** Prints the document under --json (every one has `ok: true`), else the text a person reads. */
  output<D extends { readonly ok: true }>(doc: D, text: () => void): void {
    // The result is the step's last word: no spinner frame is drawn after it.
    this.ui.endProgress();
    if (this.global.json) this.ui.json(doc);
    else text();
  }

  opsLine(): void {
    const counts = this.session.counts;
    if (counts) this.ui.verbose(`store operations: ${formatOps(counts)}`);
  }
}

/** Under --json: asked for before the command could be parsed (usage errors). */
export function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).includes('--json');
}

/**
 * The one place an error becomes an exit code: one line on stderr, and under --json the error
 * document on stdout. Commander has printed its own usage errors already.
 */
export async function reportError(e: unknown, ui: Ui, globals: GlobalOptions): Promise<number> {
  await ui.stopSpinner();
  if (e instanceof CommanderError) {
    if (e.exitCode === 0) return ExitCode.ok;
    if (globals.json)
      ui.json(errorDoc(new UsageError({ reason: 'command-line', problem: e.message.replace(/^error: /, '') })));
    return ExitCode.usage;
  }
  ui.error(((e as Error)?.message ?? String(e)).replace(/\n/g, ' '));
  if (errorKind(e) === 'InternalError' && globals.verbose && e instanceof Error && e.stack)
    ui.raw(e.stack + '\n', 'stderr');
  if (globals.json) ui.json(errorDoc(e));
  return errorExitCode(e);
}
