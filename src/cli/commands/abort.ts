// abort: throw away one task attempt (--task) or the whole job.

import { Command } from 'commander';
import { UsageError } from '../../errors.js';
import { abort, type AbortResult } from '../../steps/abort.js';
import { wholeNumber } from '../options.js';
import type { Run } from '../runtime.js';

function renderAbort(r: AbortResult): string {
  if (r.outcome === 'nothing') return 'nothing to abort: no job at that handle (finished, aborted or never staged)';
  if (r.scope === 'job') return `aborted job ${r.jobId}: its staged data is gone, the target was not touched`;
  return `aborted ${r.taskAttempt}${r.wasDenied ? ' (another attempt had won the task)' : ''}`;
}

export function abortCommand(run: Run): Command {
  return new Command('abort')
    .description('throw away one task attempt (--task) or the whole job')
    .option('--job <job>', 'the job handle')
    .option('--task <t>', 'abort only this task attempt')
    .option('--attempt <n>', 'the task attempt (default 0)', wholeNumber('--attempt'))
    .action((o: { job?: string; task?: string; attempt?: number }, cmd: Command) =>
      run(async (rt) => {
        const job = await rt.job(o.job);
        if (o.attempt !== undefined && o.task === undefined) throw new UsageError('--attempt needs --task: it names one attempt of one task');
        const r = await abort(rt.stepEnv(job.store), { stagingPath: job.path, task: o.task, attempt: o.attempt });
        if (rt.global.json) rt.ui.json(r);
        rt.ui.message(renderAbort(r));
      }, cmd),
    );
}
