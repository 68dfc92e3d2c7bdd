// The command line's entry point: parse, run one command, turn its outcome into an exit code.

import { ExitCode } from '../errors.js';
import { buildProgram } from './program.js';
import { reportError, Runtime, uiFor, wantsJson, type CliContext, type GlobalOptions } from './runtime.js';
import type { Ui } from './ui.js';
import { versionReport } from './version.js';

export type { CliContext, GlobalOptions } from './runtime.js';
export { v8FlagsChanged } from './heap.js';

/** Runs one command line; prints on ctx.stdout/ctx.stderr (default: the process's) and returns the exit code. */
export async function main(argv: string[], ctx: CliContext): Promise<number> {
  let globals: GlobalOptions = {};
  let ui: Ui | undefined;
  const program = buildProgram(async (fn, cmd) => {
    globals = cmd.optsWithGlobals() as GlobalOptions;
    const rt = new Runtime(ctx, globals);
    ui = rt.ui;
    await fn(rt);
    await rt.ui.stopSpinner();
    rt.opsLine();
  }, wantsJson(argv));
  const out = uiFor(ctx, {});
  program.exitOverride();
  program.configureOutput({
    writeOut: (s) => out.raw(s, 'stdout'),
    writeErr: (s) => out.raw(s, 'stderr'),
    outputError: (s, write) => write(s),
  });
  for (const c of program.commands) {
    c.exitOverride();
    c.configureOutput(program.configureOutput());
  }
  try {
    if (isVersionCheck(argv)) {
      out.result(versionReport());
      return ExitCode.ok;
    }
    await program.parseAsync(argv, { from: 'user' });
    return ExitCode.ok;
  } catch (e) {
    // A usage error stops commander before the global options are known: --json still holds.
    const opts = { ...globals, json: globals.json ?? wantsJson(argv) };
    return reportError(e, ui ?? uiFor(ctx, opts), opts);
  }
}

/** `--version --verbose` (or -V -v) alone: the install check. */
function isVersionCheck(argv: readonly string[]): boolean {
  const set = new Set(argv);
  return (set.has('--version') || set.has('-V')) && (set.has('--verbose') || set.has('-v')) && set.size === 2;
}
