// Where a command writes: stdout for the result, stderr for the rest; a spinner only on a fit terminal.

import chalk from 'chalk';
import os from 'node:os';
import type { StepEvent } from '../steps/env.js';

/** What the CLI prints on: process.stdout/stderr, or any writable stream in an in-process test. */
export type UiStream = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

export interface UiStreams {
  readonly stdout: UiStream;
  readonly stderr: UiStream;
}

export interface UiOptions {
  readonly json?: boolean;
  readonly quiet?: boolean;
  readonly verbose?: boolean;
}

/**
 * ora divides by the terminal's width to know how many lines its last frame took: a width of 0
 * (`script`, some CI runners) makes it clear lines forever, and a busy loop never lets a signal
 * handler run. Spinners need a terminal whose width is known and sane.
 */
const SPINNER_MIN_COLUMNS = 20;

function spinnerTerminal(stream: UiStream, env: NodeJS.ProcessEnv): boolean {
  return Boolean(stream.isTTY) && (stream.columns ?? 0) >= SPINNER_MIN_COLUMNS && env.TERM !== 'dumb';
}

export class Ui {
  private spinner: { text: string; stop(): void; start(): unknown } | undefined;
  private spinnerLoading: Promise<void> | undefined;
  private spinnerText = '';
  /** Set when the spinner is stopped for good, or the terminal stopped being fit for one. */
  private spinnerOver = false;
  private readonly out: UiStream;
  private readonly err: UiStream;

  constructor(readonly opts: UiOptions, private readonly env: NodeJS.ProcessEnv, streams?: UiStreams) {
    this.out = streams?.stdout ?? process.stdout;
    this.err = streams?.stderr ?? process.stderr;
    if (env.NO_COLOR !== undefined || !this.err.isTTY) chalk.level = 0;
  }

  get interactive(): boolean {
    return !this.spinnerOver && spinnerTerminal(this.err, this.env) && !this.opts.quiet && !this.opts.json && this.env.CI === undefined;
  }

  result(text: string): void {
    if (text) this.out.write(text.endsWith('\n') ? text : text + '\n');
  }

  json(doc: unknown): void {
    this.out.write(JSON.stringify(doc, null, 2) + '\n');
  }

  /** Text for stderr as it is (commander's help and usage messages). */
  raw(text: string, to: 'stdout' | 'stderr'): void {
    (to === 'stdout' ? this.out : this.err).write(text);
  }

  message(text: string): void {
    if (this.opts.quiet || this.opts.json) return;
    this.pause(() => this.err.write(text + '\n'));
  }

  verbose(text: string): void {
    if (this.opts.verbose && !this.opts.quiet) this.pause(() => this.err.write(chalk.dim(text) + '\n'));
  }

  error(text: string): void {
    this.spinnerOver = true;
    this.endSpinner();
    this.err.write(`${chalk.red('stagecommit: error:')} ${text}\n`);
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
      this.spinner = ora({ text: this.spinnerText, stream: this.err as NodeJS.WriteStream, discardStdin: false }).start();
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
    if (spinnerTerminal(this.err, this.env)) return;
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
    this.err.write(`stagecommit: stopped by ${signal}; the step is safe to run again\n`);
    process.exit(128 + (os.constants.signals[signal] ?? 0));
  };

  private watchWhileSpinning(on: boolean): void {
    if (on) {
      this.err.on('resize', this.resized);
      process.on('SIGINT', this.interrupted);
      process.on('SIGTERM', this.interrupted);
    } else {
      this.err.off('resize', this.resized);
      process.off('SIGINT', this.interrupted);
      process.off('SIGTERM', this.interrupted);
    }
  }
}
