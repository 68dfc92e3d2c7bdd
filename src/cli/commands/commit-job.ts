// commit-job: publish every committed task into the target, all at once.

import { Command } from 'commander';
import { commitJob } from '../../api/index.js';
import { withHelp } from '../help.js';
import { positiveInt } from '../options.js';
import { renderCommit } from '../render.js';
import type { Run } from '../runtime.js';

export function commitJobCommand(run: Run): Command {
  const cmd = new Command('commit-job')
    .description('publish every committed task into the target, all at once')
    .option('--job <job>', 'the job handle (default: $STAGECOMMIT_JOB)')
    .option('--parallelism <n>', 'store operations in flight (default: config concurrency, 32)', positiveInt('--parallelism'))
    .action((o: { job?: string; parallelism?: number }, c: Command) =>
      run(async (rt) => {
        const r = await commitJob(rt.session, { ...o, job: rt.job(o.job) });
        await rt.ui.stopSpinner();
        rt.output(r, () => rt.ui.result(r.success));
        rt.ui.message(renderCommit(r));
      }, c),
    );
  return withHelp(cmd, {
    examples: ['stagecommit commit-job --job "$JOB"', 'stagecommit --json commit-job --job "$JOB" --parallelism 64 | jq .files'],
    exitCodes: [0, 1, 2, 4, 5],
  });
}
