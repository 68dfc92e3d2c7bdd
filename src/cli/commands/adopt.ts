// adopt: turn a killed Hadoop, Spark or Hive job's leftover into a stagecommit job; prints its handle.

import { Command, Option } from 'commander';
import chalk from 'chalk';
import { adopt, type AdoptDoc } from '../../api/index.js';
import { withHelp } from '../help.js';
import { positiveInt } from '../options.js';
import { formatAge, formatBytes } from '../render.js';
import { renderOp, shortList } from '../render-dry-run.js';
import type { Run } from '../runtime.js';

export function renderAdopt(r: AdoptDoc): string {
  const l = r.leftover;
  const discarded = r.discarded.reduce((a, d) => ({ files: a.files + d.files, bytes: a.bytes + d.bytes }), {
    files: 0,
    bytes: 0,
  });
  const lines = [
    `${r.dryRun ? 'dry run: would adopt' : `${chalk.green('✔')} adopted`} ${l.kind} ${l.path}${l.engineJobId ? ` (engine job ${l.engineJobId})` : ''}, last changed ${formatAge(l.ageSeconds)} ago`,
    `  found      ${l.stage}`,
    `  tasks      ${r.committedTasks.length} committed task dir(s)${r.committedTasks.length ? ` (${shortList(r.committedTasks)})` : ''}${r.tasksDeclared !== null ? ` of ${r.tasksDeclared} declared${r.tasksDeclaredBy === 'gaps' ? ' (the highest task + 1, for the gaps)' : ''}` : ''}; gaps: ${shortList(r.gaps)}`,
    ...(r.tasksToRun.length
      ? [
          `  missing    ${shortList(r.tasksToRun, 20)} of the ${r.tasksDeclared} declared: commit-job will refuse (exit 5) until they are committed (after 'stagecommit recover' they can be run again), or give --tasks with the job's real task count`,
        ]
      : []),
    `  discarded  ${r.discarded.length} (${discarded.files} file(s), ${formatBytes(discarded.bytes)})${
      r.discarded.length
        ? ': ' +
          shortList(
            r.discarded.map((d) => `${d.path} (${d.reason})`),
            3,
          )
        : ''
    }`,
    `  output     ${r.files} file(s), ${formatBytes(r.bytes)}${r.partitionBy.length ? ` in ${r.partitions.length} partition(s) by ${r.partitionBy.join(',')}: ${shortList(r.partitions)}` : ''}`,
    `  job        ${r.jobId}: ${r.mode}${r.mode === 'overwrite' && r.partitionBy.length ? ' of the partitions present' : ''} into ${r.target}`,
  ];
  if (r.dryRun) lines.push(...r.operations.map((o) => `  would ${renderOp(o)}`), 'dry run: nothing was changed');
  else lines.push(`next: stagecommit commit-job --job ${r.handle} --dry-run`);
  return lines.join('\n');
}

export function adoptCommand(run: Run): Command {
  const cmd = new Command('adopt')
    .description("turn a killed Hadoop, Spark or Hive job's leftover into a stagecommit job; prints its handle")
    .argument(
      '<leftover>',
      "the leftover dir: a '_temporary', '.spark-staging-<id>' or '.hive-staging…' under the table",
    )
    .option('--target <uri>', 'the table to publish into (default: the directory holding the leftover)')
    .addOption(
      new Option(
        '--mode <mode>',
        'default: overwrite of the partitions present for .spark-staging, append otherwise',
      ).choices(['append', 'overwrite']),
    )
    .option(
      '--tasks <n>',
      'the job had tasks 0…N-1: commit-job refuses (exit 5) while one is missing (without it, gaps in the numbering declare the highest task + 1)',
      positiveInt('--tasks'),
    )
    .option(
      '--older-than <duration>',
      'refuse (exit 4) a leftover changed more recently: its engine may be alive (s, m, h, d)',
      '15m',
    )
    .option('--dry-run', 'print what adopting would do, change nothing')
    .action(
      (
        leftover: string,
        o: { target?: string; mode?: 'append' | 'overwrite'; tasks?: number; olderThan: string; dryRun?: boolean },
        c: Command,
      ) =>
        run(async (rt) => {
          const r = await adopt(rt.session, { ...o, leftover });
          rt.output(r, () => rt.ui.result(r.dryRun ? renderAdopt(r) : r.handle));
          if (!r.dryRun) rt.ui.message(renderAdopt(r));
        }, c),
    );
  return withHelp(cmd, {
    examples: [
      'stagecommit adopt /data/sales/.spark-staging-6f1c --dry-run      # what it would become',
      'JOB=$(stagecommit adopt /data/sales/_temporary --tasks 8) && stagecommit commit-job --job "$JOB" --dry-run',
    ],
    exitCodes: [0, 1, 2, 4, 6],
  });
}
