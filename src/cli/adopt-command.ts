// The adopt and jobs subcommands, and how dry runs are shown: options, text and --json.

import type { Command } from 'commander';
import { Option } from 'commander';
import chalk from 'chalk';
import { UsageError } from '../errors.js';
import { adopt, type AdoptResult } from '../steps/adopt.js';
import type { AbortDryRun, CommitJobDryRun, PlannedOperation, RecoverDryRun } from '../steps/dry-run.js';
import { listJobs, type JobsResult } from '../steps/jobs.js';
import { storeKey } from '../store/resolve.js';
import type { Runtime } from './main.js';
import { parseDuration } from './orphans-command.js';
import { formatAge, formatBytes } from './render.js';

type Run = (fn: (rt: Runtime) => Promise<void>, cmd: Command) => Promise<void>;

const list = (xs: readonly string[], max = 6) => (xs.length === 0 ? 'none' : xs.length <= max ? xs.join(', ') : `${xs.slice(0, max).join(', ')} and ${xs.length - max} more`);

export function renderAdopt(r: AdoptResult): string {
  const l = r.leftover;
  const discarded = r.discarded.reduce((a, d) => ({ files: a.files + d.files, bytes: a.bytes + d.bytes }), { files: 0, bytes: 0 });
  const lines = [
    `${r.dryRun ? 'dry run: would adopt' : `${chalk.green('✔')} adopted`} ${l.kind} ${l.path}${l.engineJobId ? ` (engine job ${l.engineJobId})` : ''}, last changed ${formatAge(l.ageSeconds)} ago`,
    `  found      ${l.stage}`,
    `  tasks      ${r.tasks.length} committed task dir(s)${r.tasks.length ? ` (${list(r.tasks)})` : ''}${r.tasksDeclared !== null ? ` of ${r.tasksDeclared} declared` : ''}; gaps: ${list(r.gaps.map(String))}`,
    ...(r.missingTasks.length ? [`  missing    ${list(r.missingTasks, 20)} of the ${r.tasksDeclared} declared: commit-job will refuse (exit 5) until they are committed`] : []),
    `  discarded  ${r.discarded.length} (${discarded.files} file(s), ${formatBytes(discarded.bytes)})${r.discarded.length ? ': ' + list(r.discarded.map((d) => `${d.path} (${d.reason})`), 3) : ''}`,
    `  output     ${r.files} file(s), ${formatBytes(r.bytes)}${r.partitionBy.length ? ` in ${r.partitions.length} partition(s) by ${r.partitionBy.join(',')}: ${list(r.partitions)}` : ''}`,
    `  job        ${r.jobId}: ${r.mode}${r.mode === 'overwrite' && r.partitionBy.length ? ' of the partitions present' : ''} into ${r.target}`,
  ];
  if (r.dryRun) lines.push(...r.operations.map((o) => `  would ${renderOp(o)}`), 'dry run: nothing was changed');
  else lines.push(`next: stagecommit commit-job --job ${r.handle} --dry-run`);
  return lines.join('\n');
}

function renderOp(o: PlannedOperation): string {
  const where = o.path ?? '';
  if (o.op === 'swap') return `${o.phase ? `[${o.phase}] ` : ''}replace ${where} by ${o.from} (old parked at ${o.to})`;
  if (o.from) return `${o.phase ? `[${o.phase}] ` : ''}${o.op} ${o.from} → ${o.to}${o.dir ? ' (whole directory)' : ''}`;
  return `${o.phase ? `[${o.phase}] ` : ''}${o.op} ${where}${o.dir ? ' (recursively)' : ''}`;
}

export function renderCommitDryRun(r: CommitJobDryRun): string {
  const s = r.summary;
  return [
    `dry run: commit-job would ${r.outcome === 'rolled-forward' ? 'finish the interrupted commit of' : 'commit'} job ${r.jobId}: ${r.files} file(s), ${formatBytes(r.bytes)} into ${r.target}`,
    `  partitions written  ${list(r.partitionsWritten)}`,
    `  partitions replaced ${list(r.partitionsReplaced.map((p) => p || '(all data)'))}`,
    `  ${s.directoriesMovedWhole} director(ies) move whole, ${s.filesMovedOneByOne} file(s) one by one, ${s.filesCopied} copied`,
    `  displaced           ${list(s.displaced)}`,
    ...(r.logEntry !== null ? [`  table-log entry     ${r.logEntry}`] : []),
    ...r.operations.map((o) => `  would ${renderOp(o)}`),
    'dry run: nothing was changed',
  ].join('\n');
}

export function renderAbortDryRun(r: AbortDryRun): string {
  if (r.outcome === 'nothing') return 'dry run: nothing to abort: no job at that handle';
  const what = r.scope === 'job' ? `job ${r.jobId}` : r.taskAttempt;
  return [`dry run: abort would throw away ${what}: ${r.files} file(s), ${formatBytes(r.bytes)}; the target is not touched`, ...r.operations.map((o) => `  would ${renderOp(o)}`), 'dry run: nothing was changed'].join('\n');
}

export function renderRecoverDryRun(r: RecoverDryRun): string {
  if (r.commit) return `dry run: recover would roll job ${r.jobId} forward (it is past its commit point)\n${renderCommitDryRun(r.commit)}`;
  if (r.state === 'aborted') return `dry run: recover would finish removing aborted job ${r.jobId}'s staging dir\ndry run: nothing was changed`;
  return [
    `dry run: recover would start app attempt ${r.appAttempt} of job ${r.jobId}: keep ${r.committedTasks.length} committed task(s), ${r.tasksToRun.length} to run (${list(r.tasksToRun, 20)})`,
    ...(r.interrupted.length ? [`  interrupted task commits to finish or undo: ${list(r.interrupted)}`] : []),
    'dry run: nothing was changed',
  ].join('\n');
}

export function renderJobs(r: JobsResult): string {
  if (r.jobs.length === 0) return `no stagecommit jobs for ${r.roots.join(', ')}`;
  return r.jobs
    .map((j) => {
      if (j.state === 'unreadable') return `${j.jobId}  ${chalk.red('unreadable')}  ${j.handle}  (${j.problem})`;
      const lease = j.lease ? `lease ${j.lease.alive ? chalk.yellow('held, holder alive') : 'stale, holder gone'}: ${j.lease.holder}` : 'no lease';
      const tasks = `${j.tasksCommitted} task(s) committed${j.tasksDeclared !== null ? ` of ${j.tasksDeclared}` : ''}`;
      return `${j.jobId}  ${j.state}  ${j.mode}  ${formatAge(j.ageSeconds ?? 0)}  ${j.owner}  ${lease}  ${tasks}  ${j.handle}`;
    })
    .join('\n');
}

export function adoptCommands(program: Command, run: Run): void {
  program
    .command('adopt')
    .description("turn a killed Hadoop, Spark or Hive job's leftover into a stagecommit job; prints its handle")
    .argument('<leftover>', "the leftover dir: a '_temporary', '.spark-staging-<id>' or '.hive-staging…' under the table")
    .option('--target <uri>', 'the table to publish into (default: the directory holding the leftover)')
    .addOption(new Option('--mode <mode>', 'default: overwrite of the partitions present for .spark-staging, append otherwise').choices(['append', 'overwrite']))
    .option('--tasks <n>', 'the job had tasks 0…N-1: commit-job refuses (exit 5) while one is missing')
    .option('--older-than <duration>', 'refuse (exit 4) a leftover changed more recently: its engine may be alive (s, m, h, d)', '15m')
    .option('--dry-run', 'print what adopting would do, change nothing')
    .action((leftover: string, o, cmd: Command) =>
      run(async (rt) => {
        const olderThanMs = parseDuration(o.olderThan);
        if (o.tasks !== undefined && !/^\d+$/.test(o.tasks)) throw new UsageError(`--tasks must be a positive whole number, got '${o.tasks}'`);
        const loc = await rt.location(leftover);
        let targetPath: string | undefined;
        if (o.target !== undefined) {
          const t = await rt.location(o.target);
          if (storeKey(t.uri) !== storeKey(loc.uri)) throw new UsageError(`--target ${o.target} is not on the leftover's store (${storeKey(loc.uri)}): adopting moves no data between stores`);
          targetPath = t.path;
        }
        const stagingRoot = rt.config.stagingRoot ? (await rt.location(rt.config.stagingRoot)).path : undefined;
        const env = rt.stepEnv(loc.store);
        const r = await adopt(env, { leftoverPath: loc.path, targetPath, mode: o.mode, tasks: o.tasks === undefined ? undefined : Number(o.tasks), olderThanMs, stagingRoot, dryRun: Boolean(o.dryRun) });
        if (rt.global.json) rt.ui.json(r);
        else if (r.dryRun) rt.ui.result(renderAdopt(r));
        else rt.ui.result(r.handle);
        if (!r.dryRun) rt.ui.message(renderAdopt(r));
      }, cmd),
    );

  program
    .command('jobs')
    .description('the stagecommit jobs of a table or under a staging root: state, mode, age, owner, lease, tasks, handle')
    .argument('<uris...>', 'tables (their default staging root is listed) or staging roots')
    .action((uris: string[], _o, cmd: Command) =>
      run(async (rt) => {
        const locs = await Promise.all(uris.map((u) => rt.location(u)));
        if (new Set(locs.map((l) => storeKey(l.uri))).size > 1) throw new UsageError('the URIs are on different stores: run jobs once per store');
        const r = await listJobs(rt.stepEnv(locs[0]!.store), { paths: locs.map((l) => l.path) });
        if (rt.global.json) rt.ui.json(r);
        else rt.ui.result(renderJobs(r));
      }, cmd),
    );
}
