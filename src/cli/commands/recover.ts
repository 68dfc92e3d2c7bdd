// recover: after a killed run, keep committed tasks, start the next attempt, print the tasks still to run.

import { Command } from 'commander';
import { recover, recoverDryRun, type RecoverDoc } from '../../api/index.js';
import { withHelp } from '../help.js';
import { renderRecoverDryRun, targetAfterAbort } from '../render-dry-run.js';
import type { Run } from '../runtime.js';

function renderRecover(r: RecoverDoc): string {
  if (r.alreadyCommitted)
    return `job ${r.jobId} was already committed (${r.alreadyCommitted.success}, ${r.alreadyCommitted.committedAt}): nothing to do`;
  if (r.state === 'committed') return `job ${r.jobId} was past its commit point: rolled forward to committed`;
  if (r.state === 'aborted')
    return `job ${r.jobId} was aborted: finished removing its staging dir${r.publishedTasks ? `; ${targetAfterAbort(r.publishedTasks)}` : ''}`;
  const extra = [
    r.commitsFinished.length ? `finished ${r.commitsFinished.length} interrupted task commit(s)` : '',
    r.commitsUndone.length ? `undid ${r.commitsUndone.length}` : '',
  ]
    .filter(Boolean)
    .join(', ');
  return `job ${r.jobId}: app attempt ${r.appAttempt}; ${r.committedTasks?.length ?? 0} task(s) kept, ${r.tasksToRun.length} to run${extra ? `; ${extra}` : ''}`;
}

export function recoverCommand(run: Run): Command {
  const cmd = new Command('recover')
    .description('after a killed run: keep committed tasks, start the next attempt, print the tasks still to run')
    .option('--job <job>', 'the job handle (default: $STAGECOMMIT_JOB)')
    .option('--dry-run', 'print what recover would keep, finish or undo, and run again; change nothing')
    .action((o: { job?: string; dryRun?: boolean }, c: Command) =>
      run(async (rt) => {
        if (o.dryRun) {
          const d = await recoverDryRun(rt.session, { job: rt.job(o.job) });
          return rt.output(d, () => rt.ui.result(renderRecoverDryRun(d)));
        }
        const r = await recover(rt.session, { job: rt.job(o.job) });
        await rt.ui.stopSpinner();
        rt.output(r, () => rt.ui.result(r.tasksToRun.join('\n')));
        rt.ui.message(renderRecover(r));
      }, c),
    );
  return withHelp(cmd, {
    examples: [
      'stagecommit recover --job "$JOB" --dry-run',
      'for t in $(stagecommit recover --job "$JOB"); do run-task "$t"; done',
    ],
    exitCodes: [0, 1, 2, 4, 6],
  });
}
