// recover: after a killed run, keep committed tasks, start the next attempt, print the tasks still to run.

import { Command } from 'commander';
import { recover, type RecoverResult } from '../../steps/recover.js';
import type { Run } from '../runtime.js';

function renderRecover(r: RecoverResult): string {
  if (r.state === 'committed') return `job ${r.jobId} was past its commit point: rolled forward to committed`;
  if (r.state === 'aborted') return `job ${r.jobId} was aborted: finished removing its staging dir`;
  const extra = [r.finished.length ? `finished ${r.finished.length} interrupted task commit(s)` : '', r.undone.length ? `undid ${r.undone.length}` : ''].filter(Boolean).join(', ');
  return `job ${r.jobId}: app attempt ${r.appAttempt}; ${r.committedTasks.length} task(s) kept, ${r.tasksToRun.length} to run${extra ? `; ${extra}` : ''}`;
}

export function recoverCommand(run: Run): Command {
  return new Command('recover')
    .description('after a killed run: keep committed tasks, start the next attempt, print the tasks still to run')
    .option('--job <job>', 'the job handle')
    .action((o: { job?: string }, cmd: Command) =>
      run(async (rt) => {
        const job = await rt.job(o.job);
        const r = await recover(rt.stepEnv(job.store), { stagingPath: job.path });
        await rt.ui.stopSpinner();
        if (rt.global.json) rt.ui.json(r);
        else rt.ui.result(r.tasksToRun.join('\n'));
        rt.ui.message(renderRecover(r));
      }, cmd),
    );
}
