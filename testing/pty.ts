// Runs the built CLI on a pseudo-terminal of a chosen size (util-linux `script`), as at a terminal.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { BIN } from './cli.js';

export const SCRIPT = '/usr/bin/script';
export const havePty = existsSync(SCRIPT);

export const HIDE_CURSOR = '\x1b[?25l';
export const SHOW_CURSOR = '\x1b[?25h';

export interface PtyResult {
  /** The CLI's exit code (`script -e` passes it on; 128 + n for a death by signal n). */
  readonly code: number | null;
  /** What the terminal showed: stdout and stderr together (after the helper's own pid line). */
  readonly output: string;
  /** How many bytes the terminal received in all. */
  readonly bytes: number;
  readonly ms: number;
  /** The helper killed the CLI: it ran past the timeout or wrote more than maxBytes. */
  readonly stuck: boolean;
}

/** What a test can do to the CLI while it runs. */
export interface PtyControl {
  readonly pid: number;
  /** Types on the terminal (e.g. '\x03', which the terminal turns into SIGINT). */
  type(text: string): void;
}

export interface PtyOptions {
  readonly cols: number;
  readonly rows: number;
  readonly env?: Record<string, string | undefined>;
  readonly timeoutMs?: number;
  readonly maxBytes?: number;
  /** Called on each output; the text so far is everything after the helper's own pid line. */
  onOutput?(text: string, cli: PtyControl): void;
}

function quote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export function underPty(args: readonly string[], opts: PtyOptions): Promise<PtyResult> {
  const { cols, rows, timeoutMs = 10_000, maxBytes = 1 << 20 } = opts;
  // An interactive terminal: no CI marker, a real TERM, colours off to keep assertions simple.
  const env: Record<string, string | undefined> = {
    ...process.env,
    CI: undefined,
    TERM: 'xterm-256color',
    NO_COLOR: '1',
    ...opts.env,
  };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const command = `stty cols ${cols} rows ${rows} && echo "cli-pid=$$" && exec ${[process.execPath, BIN, ...args].map(quote).join(' ')}`;
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(SCRIPT, ['-qefc', command, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const decoder = new StringDecoder('utf8');
    let all = '';
    let bytes = 0;
    let pid = 0;
    let stuck = false;
    const stop = () => {
      stuck = true;
      // The CLI itself: a process spinning in a loop may never act on the hangup `script` sends.
      if (pid) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      child.kill('SIGKILL');
    };
    const timer = setTimeout(stop, timeoutMs);
    const control: PtyControl = {
      get pid() {
        return pid;
      },
      type: (text) => void child.stdin.write(text),
    };
    child.stdout.on('data', (d: Buffer) => {
      bytes += d.length;
      if (bytes > maxBytes) return stuck || stop();
      all += decoder.write(d);
      const m = /cli-pid=(\d+)\r?\n/.exec(all);
      if (!m) return;
      pid = Number(m[1]);
      opts.onOutput?.(all.slice(m.index + m[0].length), control);
    });
    child.stderr.resume();
    child.stdin.on('error', () => {}); // typing after the end
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const m = /cli-pid=\d+\r?\n/.exec(all);
      resolve({ code, output: m ? all.slice(m.index + m[0].length) : all, bytes, ms: Date.now() - started, stuck });
    });
  });
}
