// completion: prints a shell completion script for bash, zsh or fish.

import { Argument, Command } from 'commander';
import { SHELLS, type Shell } from '../completion.js';
import { withHelp } from '../help.js';
import type { Run } from '../runtime.js';

export function completionCommand(run: Run): Command {
  const cmd = new Command('completion')
    .description('print a shell completion script (bash, zsh or fish)')
    .addArgument(new Argument('<shell>', 'the shell').choices(Object.keys(SHELLS)))
    .action((shell: Shell, _o: unknown, c: Command) =>
      run(async (rt) => {
        const script = SHELLS[shell](c.parent!);
        rt.output({ ok: true, shell, script }, () => rt.ui.result(script));
      }, c),
    );
  return withHelp(cmd, {
    examples: [
      'eval "$(stagecommit completion bash)"          # in ~/.bashrc',
      'stagecommit completion zsh > "${fpath[1]}/_stagecommit"',
      'stagecommit completion fish > ~/.config/fish/completions/stagecommit.fish',
    ],
    exitCodes: [0, 2],
  });
}
