// Runs the CLI's main() in this process with stdout and stderr captured (no child process).

import { PassThrough } from 'node:stream';
import { main } from '../src/cli/main.js';
import { cliEnv, type CliOptions, type CliResult } from './cli.js';
import { checkJsonOutput } from './schemas.js';

/** Runs main() with captured stdout and stderr. */
export async function runMain(
  args: string[],
  env: Record<string, string> = {},
  input = '',
): Promise<{ code: number; stdout: string; stderr: string }> {
  return inProcess(args, { env, input });
}

/**
 * main() called as cli() calls the installed command: the same parsing, exit code, stdout and
 * stderr (cli-main.test.ts), without the start-up of a process. For the steps that set a test up
 * or are judged by their outcome alone; races and kills need real processes (cli()). Its
 * `--json` output is checked against the published schema.
 */
export async function inProcess(args: readonly string[], opts: CliOptions = {}): Promise<CliResult & { code: number }> {
  const env = cliEnv(opts);
  if (env.STAGECOMMIT_TEST_KILL_AT)
    throw new Error('STAGECOMMIT_TEST_KILL_AT would kill the test process: run that step with cli()');
  const capture = () => {
    const s = new PassThrough();
    let text = '';
    s.setEncoding('utf8').on('data', (d: string) => (text += d));
    return { stream: s, text: () => text };
  };
  const out = capture();
  const err = capture();
  const stdin = new PassThrough();
  stdin.end(opts.input ?? '');
  const code = await main([...args], {
    cwd: opts.cwd ?? process.cwd(),
    env,
    stdin,
    stdout: out.stream,
    stderr: err.stream,
  });
  await new Promise((r) => setImmediate(r));
  checkJsonOutput(args, code, out.text());
  return { code, signal: null, stdout: out.text(), stderr: err.text() };
}

/** inProcess(), failing with its stderr unless it exits 0; returns stdout trimmed. */
export async function okInProcess(args: readonly string[], opts: CliOptions = {}): Promise<string> {
  const r = await inProcess(args, opts);
  if (r.code !== 0) throw new Error(`stagecommit ${args.join(' ')} (in-process) exited ${r.code}: ${r.stderr}`);
  return r.stdout.trim();
}
