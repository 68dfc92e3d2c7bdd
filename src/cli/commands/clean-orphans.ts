// clean-orphans: find (and with --delete remove) what killed jobs left behind under some roots.

import { Command } from 'commander';
import chalk from 'chalk';
import { cleanOrphans } from '../../api/index.js';
import { withHelp } from '../help.js';
import { wholeNumber } from '../options.js';
import { renderOrphans } from '../render.js';
import type { Run } from '../runtime.js';

export function cleanOrphansCommand(run: Run): Command {
  const cmd = new Command('clean-orphans')
    .description('find (and with --delete remove) what killed Spark, Hive, Hadoop and stagecommit jobs left behind')
    .argument('<roots...>', 'directories to scan; each must exist (else exit 2, and nothing is scanned)')
    .option(
      '--older-than <duration>',
      "only leftovers last changed longer ago than this: the newest change inside, an empty one's own time (s, m, h, d)",
      '24h',
    )
    .option('--delete', "remove the leftovers (default: a dry run that only lists them); never those listed as 'adopt'")
    .option(
      '--delete-unpublished',
      "with --delete, also remove leftovers holding output the table may not have (action 'adopt'): that output is lost",
    )
    .option('--max-depth <n>', 'how deep below each root to look (default 16)', wholeNumber('--max-depth'))
    .action(
      (
        roots: string[],
        o: { olderThan: string; delete?: boolean; deleteUnpublished?: boolean; maxDepth?: number },
        c: Command,
      ) =>
        run(async (rt) => {
          const r = await cleanOrphans(rt.session, { ...o, roots });
          await rt.ui.stopSpinner();
          rt.output(r, () => rt.ui.result(renderOrphans(r)));
          for (const p of r.problems) rt.ui.message(chalk.yellow(`warning: ${p.path}: ${p.message}`));
        }, c),
    );
  return withHelp(cmd, {
    examples: [
      'stagecommit clean-orphans s3://lake/wh --older-than 36h            # dry run: list them',
      'stagecommit clean-orphans /data/wh --older-than 7d --delete',
    ],
    exitCodes: [0, 1, 2],
  });
}
