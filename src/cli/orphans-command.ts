// The clean-orphans subcommand: options, the dry-run table and the summary.

import type { Command } from 'commander';
import chalk from 'chalk';
import { UsageError } from '../errors.js';
import { cleanOrphans, type CleanOrphansResult } from '../steps/clean-orphans.js';
import { storeKey } from '../store/resolve.js';
import type { Runtime } from './main.js';
import { formatAge, formatBytes } from './render.js';

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

export function parseDuration(raw: string): number {
  const m = /^(\d+)([smhd])$/.exec(raw.trim());
  if (!m) throw new UsageError(`invalid --older-than '${raw}': give a number and a unit s, m, h or d (e.g. 90m, 36h, 7d)`);
  return Number(m[1]) * UNITS[m[2]!]! * 1000;
}

export function renderOrphans(r: CleanOrphansResult): string {
  if (r.leftovers.length === 0) return `no leftovers under ${r.roots.join(', ')} (${r.directoriesScanned} directories scanned)`;
  const rows = r.leftovers.map((l) => [l.kind, l.uri, formatAge(l.ageSeconds), String(l.files), formatBytes(l.bytes), l.jobId ?? '', l.action + (l.reason ? ` (${l.reason})` : '')]);
  const head = ['KIND', 'PATH', 'AGE', 'FILES', 'BYTES', 'JOB', 'ACTION'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const fmt = (row: string[]) => row.map((c, i) => (i === 2 || i === 3 || i === 4 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  const gone = r.leftovers.filter((l) => l.action === 'would-delete' || l.action === 'deleted').length;
  const summary = r.dryRun
    ? `${gone} leftover(s) to remove, ${formatBytes(r.reclaimableBytes)} reclaimable; dry run: nothing was changed, add --delete to remove them`
    : `${gone} leftover(s) removed, ${formatBytes(r.reclaimableBytes)} reclaimed`;
  return [chalk.bold(fmt(head)), ...rows.map(fmt), '', summary].join('\n');
}

type Run = (fn: (rt: Runtime) => Promise<void>, cmd: Command) => Promise<void>;

export function cleanOrphansCommand(program: Command, run: Run): void {
  program
    .command('clean-orphans')
    .description('find (and with --delete remove) what killed Spark, Hive, Hadoop and stagecommit jobs left behind')
    .argument('<roots...>', 'directories to scan; each must exist (else exit 2, and nothing is scanned)')
    .option('--older-than <duration>', 'only leftovers last changed longer ago than this: the newest change inside, an empty one\'s own time (s, m, h, d)', '24h')
    .option('--delete', 'remove the leftovers (default: a dry run that only lists them)')
    .option('--max-depth <n>', 'how deep below each root to look (default 16)')
    .action((roots: string[], o, cmd: Command) =>
      run(async (rt) => {
        const olderThanMs = parseDuration(o.olderThan);
        const maxDepth = o.maxDepth === undefined ? undefined : Number(o.maxDepth);
        if (maxDepth !== undefined && (!Number.isInteger(maxDepth) || maxDepth < 0)) throw new UsageError(`invalid --max-depth '${o.maxDepth}': give a whole number`);
        const locs = await Promise.all(roots.map((r) => rt.location(r)));
        if (new Set(locs.map((l) => storeKey(l.uri))).size > 1) throw new UsageError('the roots are on different stores: run clean-orphans once per store');
        const env = rt.stepEnv(locs[0]!.store);
        const r = await cleanOrphans(env, { roots: locs.map((l) => l.path), olderThanMs, delete: Boolean(o.delete), maxDepth });
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
