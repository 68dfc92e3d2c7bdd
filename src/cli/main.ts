// The command line's entry point: parse, run one command, turn its outcome into an exit code.

import { ExitCode } from '../errors.js';
import { buildProgram } from './program.js';
import { reportError, Runtime, uiFor, wantsJson, type CliContext, type GlobalOptions } from './runtime.js';
import type { Ui } from './ui.js';
import { CommanderError } from 'commander';
import { versionCheck, versionReport } from './version.js';

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
  const json = wantsJson(argv);
  // Under --json, what commander prints on stdout (help, the version) is held: help becomes a document.
  let held = '';
  program.exitOverride();
  program.configureOutput({
    writeOut: (s) => (json ? void (held += s) : out.raw(s, 'stdout')),
    writeErr: (s) => out.raw(s, 'stderr'),
    outputError: (s, write) => write(s),
  });
  for (const c of program.commands) {
    c.exitOverride();
    c.configureOutput(program.configureOutput());
  }
  try {
    if (isVersionCheck(argv)) {
      if (json) out.json({ ok: true, ...versionCheck() });
      else out.result(versionReport());
      return ExitCode.ok;
    }
    await program.parseAsync(argv, { from: 'user' });
    out.raw(held, 'stdout');
    return ExitCode.ok;
  } catch (e) {
    if (json && e instanceof CommanderError && e.exitCode === 0 && HELP_CODES.has(e.code)) {
      out.json({ ok: true, help: held });
      return ExitCode.ok;
    }
    out.raw(held, 'stdout');
    // A usage error stops commander before the global options are known: --json still holds.
    const opts = { ...globals, json: globals.json ?? wantsJson(argv) };
    return reportError(e, ui ?? uiFor(ctx, opts), opts);
  }
}

/** How commander ends when it printed help (--help, `help CMD`, a command given no subcommand). */
const HELP_CODES = new Set(['commander.helpDisplayed', 'commander.help']);

/** `--version --verbose` (or -V -v) alone, or with --json: the install check. */
function isVersionCheck(argv: readonly string[]): boolean {
  const set = new Set(argv);
  set.delete('--json');
  return (set.has('--version') || set.has('-V')) && (set.has('--verbose') || set.has('-v')) && set.size === 2;
}
