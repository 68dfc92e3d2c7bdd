// commit-task: claim the task for this attempt (first claim wins) and promote its files.

import { Command } from 'commander';
import { commitTask } from '../../api/index.js';
import { withHelp } from '../help.js';
import { wholeNumber } from '../options.js';
import { formatBytes } from '../render.js';
import type { Run } from '../runtime.js';

export function commitTaskCommand(run: Run): Command {
  const cmd = new Command('commit-task')
    .description('claim the task for this attempt (first claim wins) and promote its files')
    .option('--job <job>', 'the job handle (default: $STAGECOMMIT_JOB)')
    .requiredOption('--task <t>', 'the task id')
    .option(
      '--attempt <n>',
      "the task attempt (default: the one the task's claim names, else its newest)",
      wholeNumber('--attempt'),
    )
    .action((o: { job?: string; task: string; attempt?: number }, c: Command) =>
      run(async (rt) => {
        const r = await commitTask(rt.session, { ...o, job: rt.job(o.job) });
        rt.output(r, () => undefined);
        rt.ui.message(
          `${r.outcome === 'already' ? 'already committed' : 'committed'} task ${r.task} (${r.taskAttempt}): ${r.files} file(s), ${formatBytes(r.bytes)}`,
        );
      }, c),
    );
  return withHelp(cmd, {
    before:
      'While a commit-job, recover or abort of the job runs, commit-task waits for it (up to 30 s, once\n' +
      'its claim is made and once it is committed): a commit that read the tasks before this one leaves\n' +
      "it out, and commit-task then exits 4 (nothing of it kept); exit 0 means the job's commit includes\n" +
      'the task.',
    examples: [
      'stagecommit commit-task --job "$JOB" --task 0',
      'stagecommit commit-task --job "$JOB" --task 3 --attempt 1 || echo "another attempt won (exit 3)"',
    ],
    exitCodes: [0, 1, 2, 3, 4, 6],
  });
}
