// Runs the CLI's main() in this process with stdout and stderr captured (no child process).

import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.js';

/** Runs main() with captured stdout and stderr. */
export async function runMain(args: string[], env: Record<string, string> = {}, input = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  const capture = () => {
    const s = new PassThrough();
    let text = '';
    s.setEncoding('utf8').on('data', (d: string) => (text += d));
    return { stream: s, text: () => text };
  };
  const out = capture();
  const err = capture();
  const stdin = new PassThrough();
  stdin.end(input);
  const code = await main(args, { cwd: process.cwd(), env: { ...process.env, NO_COLOR: '1', ...env }, stdin, stdout: out.stream, stderr: err.stream });
  await new Promise((r) => setImmediate(r));
  return { code, stdout: out.text(), stderr: err.text() };
}
