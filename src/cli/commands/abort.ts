// abort: throw away one task attempt (--task) or the whole job.

import { Command } from 'commander';
import { abort, abortDryRun, type AbortDoc } from '../../api/index.js';
import { withHelp } from '../help.js';
import { wholeNumber } from '../options.js';
import { renderAbortDryRun, targetAfterAbort } from '../render-dry-run.js';
import type { Run } from '../runtime.js';

function renderAbort(r: AbortDoc): string {
  if (r.outcome === 'nothing') return 'nothing to abort: no job at that handle (finished, aborted or never staged)';
  if (r.scope === 'job')
    return `aborted job ${r.jobId}: its staged data is gone${r.leftoverGivenBack ? `, the adopted leftover is back at ${r.leftoverGivenBack}` : ''}; ${targetAfterAbort(r.publishedTasks)}`;
  return `aborted ${r.taskAttempt}${r.wasDenied ? ' (another attempt had won the task)' : ''}`;
}

export function abortCommand(run: Run): Command {
  const cmd = new Command('abort')
    .description(
      "throw away one task attempt (--task) or the whole job (an adopted job's leftover is given back, not thrown away); a handle that names no job any more is nothing to abort (exit 0), a committed job is refused (exit 2: it is finished), a job past its commit point too (exit 6: commit-job or recover finishes it)",
    )
    .option('--job <job>', 'the job handle (default: $STAGECOMMIT_JOB)')
    .option('--task <t>', 'abort only this task attempt')
    .option(
      '--attempt <n>',
      "the task attempt (default: the one the task's claim names, else its newest)",
      wholeNumber('--attempt'),
    )
    .option('--dry-run', 'print what would be thrown away; change nothing')
    .action(({ dryRun, ...o }: { job?: string; task?: string; attempt?: number; dryRun?: boolean }, c: Command) =>
      run(async (rt) => {
        if (dryRun) {
          const d = await abortDryRun(rt.session, { ...o, job: rt.job(o.job) });
          return rt.output(d, () => rt.ui.result(renderAbortDryRun(d)));
        }
        const r = await abort(rt.session, { ...o, job: rt.job(o.job) });
        rt.output(r, () => undefined);
        rt.ui.message(renderAbort(r));
      }, c),
    );
  return withHelp(cmd, {
    examples: [
      'stagecommit abort --job "$JOB"                       # the whole job; the target is not touched (v1)',
      'stagecommit abort --job "$JOB" --task 3 --attempt 0   # one attempt',
    ],
    exitCodes: [0, 1, 2, 4, 6],
  });
}
