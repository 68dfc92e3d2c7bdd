// clean-orphans: find (and with --delete remove) what killed jobs left behind under some roots.

import { Command } from 'commander';
import chalk from 'chalk';
import { UsageError } from '../../errors.js';
import { cleanOrphans } from '../../steps/clean-orphans.js';
import { storeKey } from '../../store/resolve.js';
import { parseDuration } from '../options.js';
import { renderOrphans } from '../render.js';
import type { Run } from '../runtime.js';

interface CleanOrphansOptions {
  olderThan: string;
  delete?: boolean;
  maxDepth?: string;
}

export function cleanOrphansCommand(run: Run): Command {
  return new Command('clean-orphans')
    .description('find (and with --delete remove) what killed Spark, Hive, Hadoop and stagecommit jobs left behind')
    .argument('<roots...>', 'directories to scan; each must exist (else exit 2, and nothing is scanned)')
    .option('--older-than <duration>', "only leftovers last changed longer ago than this: the newest change inside, an empty one's own time (s, m, h, d)", '24h')
    .option('--delete', 'remove the leftovers (default: a dry run that only lists them)')
    .option('--max-depth <n>', 'how deep below each root to look (default 16)')
    .action((roots: string[], o: CleanOrphansOptions, cmd: Command) =>
      run(async (rt) => {
        const olderThanMs = parseDuration(o.olderThan);
        const maxDepth = o.maxDepth === undefined ? undefined : Number(o.maxDepth);
        if (maxDepth !== undefined && (!Number.isInteger(maxDepth) || maxDepth < 0)) throw new UsageError(`invalid --max-depth '${o.maxDepth}': give a whole number`);
        const locs = await Promise.all(roots.map((r) => rt.location(r)));
        if (new Set(locs.map((l) => storeKey(l.uri))).size > 1) throw new UsageError('the roots are on different stores: run clean-orphans once per store');
        const r = await cleanOrphans(rt.stepEnv(locs[0]!.store), { roots: locs.map((l) => l.path), olderThanMs, delete: Boolean(o.delete), maxDepth });
        await rt.ui.stopSpinner();
        if (rt.global.json) {
          rt.ui.json({ ...r, leftovers: r.leftovers.map(({ path: _p, uri, upload: _u, pastCommit: _c, ...l }) => ({ ...l, path: uri })) });
        } else {
          rt.ui.result(renderOrphans(r));
        }
        for (const p of r.problems) rt.ui.message(chalk.yellow(`warning: ${p.path}: ${p.message}`));
      }, cmd),
    );
}
