// jobs: the stagecommit jobs of a table, under a staging root or of a directory's tables: state, mode, age, owner,
// lease, tasks, handle.

import { Command } from 'commander';
import chalk from 'chalk';
import { jobs, type JobsDoc } from '../../api/index.js';
import { withHelp } from '../help.js';
import { formatAge } from '../render.js';
import type { Run } from '../runtime.js';

export function renderJobs(r: JobsDoc): string {
  if (r.jobs.length === 0) return `no stagecommit jobs for ${r.roots.join(', ')}`;
  return r.jobs
    .map((j) => {
      if (j.state === 'unreadable') return `${j.jobId}  ${chalk.red('unreadable')}  ${j.handle}  (${j.problem})`;
      const lease = j.lease
        ? `lease ${j.lease.alive ? chalk.yellow('held, holder alive') : 'stale, holder gone'}: ${j.lease.holder}`
        : 'no lease';
      // A committed job still listed is in its clean-up, which removes the claims first: its count says nothing.
      const tasks =
        j.state === 'committed'
          ? 'published, clean-up left'
          : `${j.tasksCommitted} task(s) committed${j.tasksDeclared !== null ? ` of ${j.tasksDeclared}` : ''}`;
      const state = j.halfMade
        ? `${chalk.red('half-made adoption')} (${j.halfMade}: abort it, adopt the leftover again)`
        : j.state;
      return `${j.jobId}  ${state}  ${j.mode}  ${formatAge(j.ageSeconds ?? 0)}  ${j.owner ? `${j.owner.user}@${j.owner.host} pid ${j.owner.pid}` : ''}  ${lease}  ${tasks}  ${j.handle}`;
    })
    .join('\n');
}

export function jobsCommand(run: Run): Command {
  const cmd = new Command('jobs')
    .description(
      'the stagecommit jobs of a table, under a staging root, or of the tables in a directory: state, mode, age, owner, lease, tasks, handle',
    )
    .argument('<uris...>', 'tables (their default staging root is listed) or staging roots')
    .action((uris: string[], _o: unknown, c: Command) =>
      run(async (rt) => {
        const r = await jobs(rt.session, { uris });
        rt.output(r, () => rt.ui.result(renderJobs(r)));
      }, c),
    );
  return withHelp(cmd, {
    examples: [
      'stagecommit jobs /data/sales',
      'stagecommit --json jobs s3://lake/wh/sales | jq -r \'.jobs[] | select(.state=="committing") | .handle\'',
    ],
    exitCodes: [0, 1, 2],
  });
}
