// Help text every subcommand shares: its examples, its exit codes, the global options.

import type { Command } from 'commander';

/** What each exit code means; a command lists the ones it can end with. */
export const EXIT_MEANINGS: Record<number, string> = {
  0: 'done',
  1: 'failed: a store error or a damaged manifest; nothing changed, unless the message says the job is past its commit point (recover finishes it)',
  2: 'bad usage or input, or a handle naming no job or a finished (committed) one; nothing changed',
  3: 'commit denied: another attempt won the task, or it was aborted',
  4: 'retry later: locked by a live step, or another job is still committing the same partitions',
  5: 'incomplete: declared tasks are not committed',
  6: 'blocked: will never pass as it is (append clash, create target appeared, two tasks wrote one path, a partition replaced by another job, wrong state); do what the message says',
};

export interface CommandHelp {
  readonly examples: readonly string[];
  readonly exitCodes: readonly number[];
  /** Extra sections (e.g. stage's forms), shown before the examples. */
  readonly before?: string;
}

/** Adds examples, exit codes and the global options to a subcommand's --help. */
export function withHelp(cmd: Command, help: CommandHelp): Command {
  const codes = help.exitCodes.map((c) => `  ${c}  ${EXIT_MEANINGS[c]}`);
  const text = [
    help.before ? `\n${help.before}` : '',
    '\nExamples:',
    ...help.examples.map((e) => `  ${e}`),
    '\nExit codes:',
    ...codes,
    '  130/143  stopped by SIGINT/SIGTERM: the step is safe to run again',
  ].join('\n');
  return cmd.configureHelp({ showGlobalOptions: true }).addHelpText('after', text);
}
