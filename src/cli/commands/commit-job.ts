// commit-job: publish every committed task into the target, all at once.

import { Command } from 'commander';
import { commitJob, commitJobDryRun } from '../../api/index.js';
import { withHelp } from '../help.js';
import { positiveInt } from '../options.js';
import { renderCommit } from '../render.js';
import { renderCommitDryRun } from '../render-dry-run.js';
import type { Run } from '../runtime.js';

export function commitJobCommand(run: Run): Command {
  const cmd = new Command('commit-job')
    .description('publish every committed task into the target, all at once')
    .option('--job <job>', 'the job handle (default: $STAGECOMMIT_JOB)')
    .option(
      '--parallelism <n>',
      'store operations in flight (default: config concurrency, 32)',
      positiveInt('--parallelism'),
    )
    .option(
      '--dry-run',
      'print the plan (files, partitions, what an overwrite displaces, store operations); change nothing',
    )
    .action(({ dryRun, ...o }: { job?: string; parallelism?: number; dryRun?: boolean }, c: Command) =>
      run(async (rt) => {
        if (dryRun) {
          const d = await commitJobDryRun(rt.session, { ...o, job: rt.job(o.job) });
          return rt.output(d, () => rt.ui.result(renderCommitDryRun(d)));
        }
        const r = await commitJob(rt.session, { ...o, job: rt.job(o.job) });
        await rt.ui.stopSpinner();
        rt.output(r, () => rt.ui.result(r.success));
        rt.ui.message(renderCommit(r));
      }, c),
    );
  return withHelp(cmd, {
    examples: [
      'stagecommit commit-job --job "$JOB"',
      'stagecommit commit-job --job "$JOB" --dry-run   # the plan; nothing changes',
      'stagecommit --json commit-job --job "$JOB" --parallelism 64 | jq .files',
    ],
    exitCodes: [0, 1, 2, 4, 5, 6],
  });
}
