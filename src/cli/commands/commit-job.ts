// commit-job: publish every committed task into the target, all at once.

import { Command } from 'commander';
import { commitJob } from '../../steps/commit-job.js';
import { positiveInt } from '../options.js';
import { renderCommit } from '../render.js';
import type { Run } from '../runtime.js';

export function commitJobCommand(run: Run): Command {
  return new Command('commit-job')
    .description('publish every committed task into the target, all at once')
    .option('--job <job>', 'the job handle')
    .option('--parallelism <n>', 'store operations in flight (default: config concurrency, 32)', positiveInt('--parallelism'))
    .action((o: { job?: string; parallelism?: number }, cmd: Command) =>
      run(async (rt) => {
        const job = await rt.job(o.job);
        const r = await commitJob(rt.stepEnv(job.store, o.parallelism), { stagingPath: job.path });
        await rt.ui.stopSpinner();
        if (rt.global.json) rt.ui.json(r);
        else rt.ui.result(r.success);
        rt.ui.message(renderCommit(r));
      }, cmd),
    );
}
