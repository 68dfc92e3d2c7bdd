// Where a command writes: stdout for the result, stderr for the rest; a spinner only on a fit terminal.
// Keeps protocol.md §5.13 (progress output never keeps a step from ending).

import chalk from 'chalk';
import os from 'node:os';
import { UNPRINTABLE } from '../paths.js';
import type { StepEvent } from '../steps/env.js';
import { formatBytes } from './render.js';

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

const ESCAPED = new RegExp(`\\x1b\\[[0-9;]*m|${UNPRINTABLE.source}`, 'g');

/**
 * Text for a terminal: control characters a name may carry (an outside writer's key can hold ESC
 * or BEL) are written as \\u escapes, so that no message can clear the screen or retitle the
 * window; so are the C1 controls (U+009B is CSI to some terminals, U+0085 a line break), the
 * line and paragraph separators (no one-line message breaks in a log) and the bidirectional
 * overrides (no path shows in an order other than its own). Newlines, tabs and our own colours
 * (SGR sequences) pass.
 */
export function printable(text: string): string {
  return text.replace(ESCAPED, (m) => (m.length > 1 ? m : `\\u${m.charCodeAt(0).toString(16).padStart(4, '0')}`));
}

export class Ui {
  private spinner: { text: string; stop(): void; start(): unknown } | undefined;
  private spinnerLoading: Promise<void> | undefined;
  private spinnerText = '';
  /** Set when the spinner is stopped for good, or the terminal stopped being fit for one. */
  private spinnerOver = false;
  private readonly out: UiStream;
  private readonly err: UiStream;

  constructor(
    readonly opts: UiOptions,
    private readonly env: NodeJS.ProcessEnv,
    streams?: UiStreams,
  ) {
    this.out = streams?.stdout ?? process.stdout;
    this.err = streams?.stderr ?? process.stderr;
    if (env.NO_COLOR !== undefined || !this.err.isTTY) chalk.level = 0;
  }

  get interactive(): boolean {
    return (
      !this.spinnerOver &&
      spinnerTerminal(this.err, this.env) &&
      !this.opts.quiet &&
      !this.opts.json &&
      this.env.CI === undefined
    );
  }

  result(text: string): void {
    if (text) this.out.write(printable(text.endsWith('\n') ? text : text + '\n'));
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
    this.pause(() => this.err.write(printable(text) + '\n'));
  }

  verbose(text: string): void {
    if (this.opts.verbose && !this.opts.quiet) this.pause(() => this.err.write(chalk.dim(printable(text)) + '\n'));
  }

  error(text: string): void {
    this.spinnerOver = true;
    this.endSpinner();
    this.err.write(`${chalk.red('stagecommit: error:')} ${printable(text)}\n`);
  }

  private pause(write: () => void): void {
    if (this.spinner) {
      this.spinner.stop();
      write();
      this.spinner.start();
    } else write();
  }

  /** The phase running and when it began (--verbose prints each phase's time when the next begins). */
  private phase: { label: string; startMs: number } | undefined;
  /** The first progress count of the phase, and when: the rate is counted from there. */
  private progressStart: { done: number; bytes: number; atMs: number } | undefined;

  /** Progress from the steps: a spinner on a TTY, lines with --verbose, nothing otherwise. */
  event(e: StepEvent): void {
    if (e.type === 'warn') return this.message(chalk.yellow(`warning: ${e.message}`));
    if (e.type === 'output') return;
    if (e.type === 'phase') this.startPhase(e.label);
    const text = e.type === 'progress' ? this.progressText(e) : e.label;
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
      this.spinner = ora({
        text: this.spinnerText,
        stream: this.err as NodeJS.WriteStream,
        discardStdin: false,
      }).start();
      this.watchWhileSpinning(true);
    });
  }

  private startPhase(label: string): void {
    this.endPhase();
    this.phase = { label, startMs: Date.now() };
    this.progressStart = undefined;
  }

  /** Under --verbose: how long the phase that just ended took. */
  private endPhase(): void {
    if (this.phase) this.verbose(`  ${this.phase.label}: ${((Date.now() - this.phase.startMs) / 1000).toFixed(1)}s`);
    this.phase = undefined;
  }

  /**
   * `publishing 1024/4000, 310/s, about 10s left`, or where bytes move `staging files 3/40,
   * 12.0 MiB/96.0 MiB, 4.1 MiB/s, about 21s left`: the rate and time left once counts move (by
   * bytes when their total is known).
   */
  private progressText(e: Extract<StepEvent, { type: 'progress' }>): string {
    const now = Date.now();
    const bytes = e.bytes ?? 0;
    this.progressStart ??= { done: e.done, bytes, atMs: now };
    const secs = (now - this.progressStart.atMs) / 1000;
    const counts = `${e.label} ${e.done}/${e.total}`;
    if (e.bytes === undefined) {
      const rate = secs > 0.5 ? (e.done - this.progressStart.done) / secs : 0;
      if (rate <= 0 || e.done >= e.total) return counts;
      return `${counts}, ${Math.round(rate)}/s, about ${Math.ceil((e.total - e.done) / rate)}s left`;
    }
    const moved =
      e.bytesTotal !== undefined ? `${formatBytes(bytes)}/${formatBytes(e.bytesTotal)}` : formatBytes(bytes);
    const rate = secs > 0.5 ? (bytes - this.progressStart.bytes) / secs : 0;
    if (rate <= 0 || e.done >= e.total) return `${counts}, ${moved}`;
    const left =
      e.bytesTotal !== undefined && e.bytesTotal > bytes
        ? `, about ${Math.ceil((e.bytesTotal - bytes) / rate)}s left`
        : '';
    return `${counts}, ${moved}, ${formatBytes(Math.round(rate))}/s${left}`;
  }

  /** The step is done (its result is next): the spinner goes for good, and none starts after. */
  endProgress(): void {
    this.endPhase();
    this.spinnerOver = true;
    this.endSpinner();
  }

  async stopSpinner(): Promise<void> {
    this.endPhase();
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
