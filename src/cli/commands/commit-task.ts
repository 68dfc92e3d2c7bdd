// commit-task: claim the task for this attempt (first claim wins) and promote its files.

import { Command } from 'commander';
import { commitTask } from '../../steps/commit-task.js';
import { wholeNumber } from '../options.js';
import { formatBytes } from '../render.js';
import type { Run } from '../runtime.js';

export function commitTaskCommand(run: Run): Command {
  return new Command('commit-task')
    .description('claim the task for this attempt (first claim wins) and promote its files')
    .option('--job <job>', 'the job handle')
    .requiredOption('--task <t>', 'the task id')
    .option('--attempt <n>', 'the task attempt (default 0)', wholeNumber('--attempt'))
    .action((o: { job?: string; task: string; attempt?: number }, cmd: Command) =>
      run(async (rt) => {
        const job = await rt.job(o.job);
        const r = await commitTask(rt.stepEnv(job.store), { stagingPath: job.path, task: o.task, attempt: o.attempt });
        if (rt.global.json) rt.ui.json(r);
        rt.ui.message(`${r.outcome === 'already' ? 'already committed' : 'committed'} task ${r.task} (${r.taskAttempt}): ${r.files} file(s), ${formatBytes(r.bytes)}`);
      }, cmd),
    );
}
