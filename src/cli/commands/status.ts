// status: show a job's state, tasks, files, bytes, age and owner.

import { Command } from 'commander';
import { status } from '../../steps/status.js';
import { renderStatus } from '../render.js';
import type { Run } from '../runtime.js';

export function statusCommand(run: Run): Command {
  return new Command('status')
    .description('show a job: state, tasks, files, bytes, age, owner')
    .option('--job <job>', 'the job handle')
    .action((o: { job?: string }, cmd: Command) =>
      run(async (rt) => {
        const job = await rt.job(o.job);
        const r = await status(rt.stepEnv(job.store), { stagingPath: job.path });
        if (rt.global.json) rt.ui.json(r);
        else rt.ui.result(renderStatus(r));
      }, cmd),
    );
}
