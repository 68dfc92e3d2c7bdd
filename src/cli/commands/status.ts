// status: show a job's state, tasks, files, bytes, age and owner.

import { Command } from 'commander';
import { status } from '../../api/index.js';
import { UsageError } from '../../errors.js';
import { withHelp } from '../help.js';
import { renderStatus } from '../render.js';
import type { Run } from '../runtime.js';

export function statusCommand(run: Run): Command {
  const cmd = new Command('status')
    .description('show a job: state, tasks, files, bytes, age, owner')
    .option('--job <job>', 'the job handle (default: $STAGECOMMIT_JOB)')
    .option(
      '--tasks-to-run',
      'print only the tasks still to run, one a line (none once the job is committing, committed or aborted); needs a job staged with --tasks',
    )
    .action((o: { job?: string; tasksToRun?: boolean }, c: Command) =>
      run(async (rt) => {
        const r = await status(rt.session, { job: rt.job(o.job) });
        // A loop over a list that leaves out tasks never started would commit without them.
        if (o.tasksToRun && 'job' in r && r.job.tasksDeclared === null && r.state === 'staged')
          throw new UsageError({ reason: 'tasks-not-declared', jobId: r.jobId });
        rt.output(r, () => rt.ui.result(o.tasksToRun ? r.tasksToRun.join('\n') : renderStatus(r)));
      }, c),
    );
  return withHelp(cmd, {
    examples: [
      'stagecommit status --job "$JOB"',
      'for t in $(stagecommit status --job "$JOB" --tasks-to-run); do ./run-task.sh "$t"; done',
      'stagecommit --json status --job "$JOB" | jq .tasksToRun',
    ],
    exitCodes: [0, 1, 2],
  });
}
