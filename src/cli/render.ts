// Text rendering of step results for people; --json prints the results as they are.

import chalk from 'chalk';
import type { CleanOrphansDoc, CommitJobDoc, StatusDoc } from '../api/index.js';
import type { OpCounts } from '../store/instrumented.js';

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = -1;
  do {
    v /= 1024;
    i++;
  } while (v >= 1024 && i < units.length - 1);
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

export function formatAge(seconds: number): string {
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)}h`;
  return `${Math.round(seconds / 86400)}d`;
}

export function formatOps(c: OpCounts): string {
  return Object.entries(c)
    .filter(([, v]) => v)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
}

export function renderCommit(r: CommitJobDoc): string {
  if (r.outcome === 'already-committed')
    return `${chalk.green('✔')} job ${r.jobId} was already committed into ${r.target}: nothing to do`;
  if (r.cleanupOnly)
    return `${chalk.green('✔')} finished the clean-up of job ${r.jobId}: its files were already published into ${r.target}`;
  const what = r.outcome === 'rolled-forward' ? 'finished the interrupted commit of' : 'committed';
  const lines = [
    `${chalk.green('✔')} ${what} job ${r.jobId}: ${r.files} file(s), ${formatBytes(r.bytes)} into ${r.target}`,
  ];
  if (r.partitionsWritten.length) lines.push(`  partitions written: ${summarize(r.partitionsWritten)}`);
  if (r.partitionsReplaced.length)
    lines.push(`  replaced: ${summarize(r.partitionsReplaced.map((p) => p || '(all data)'))}`);
  return lines.join('\n');
}

function summarize(items: readonly string[], max = 5): string {
  return items.length <= max ? items.join(', ') : `${items.slice(0, max).join(', ')} and ${items.length - max} more`;
}

export function renderStatus(s: StatusDoc): string {
  if ('finished' in s) {
    const counts = s.evidence === '_SUCCESS' ? `, ${s.files} file(s), ${formatBytes(s.bytes)}` : '';
    return [
      `job       ${s.jobId}`,
      `state     ${chalk.green('committed')} (finished: no staging dir left)`,
      `target    ${s.target}`,
      `committed ${s.committedAt}${counts}`,
      `proof     ${s.evidence === '_SUCCESS' ? s.success : 'the table log'}`,
    ].join('\n');
  }
  const j = s.job;
  const color =
    s.state === 'staged'
      ? chalk.cyan
      : s.state === 'committing'
        ? chalk.yellow
        : s.state === 'aborted'
          ? chalk.red
          : chalk.green;
  const lines = [
    `job       ${j.jobId}`,
    `state     ${color(s.state)}${s.halfMade ? ` — ${chalk.red('half-made adoption')}: ${s.halfMade}; commit-job refuses it: abort it and adopt the leftover again` : ''}`,
    `target    ${j.target}`,
    `staging   ${s.handle}`,
    `mode      ${j.mode} (${j.algorithm})${j.partitionBy.length ? `, partitioned by ${j.partitionBy.join(', ')}` : ''}${j.staticPartition.length ? `, static ${j.staticPartition.map((p) => `${p.column}=${p.value}`).join('/')}` : ''}`,
    `attempt   app attempt ${j.appAttempt}`,
    `owner     ${j.owner.user}@${j.owner.host} (pid ${j.owner.pid}), staged ${formatAge(s.ageSeconds)} ago`,
    `committed ${s.tasks.filter((t) => t.state === 'committed').length} task(s), ${s.files} file(s), ${formatBytes(s.bytes)}${j.tasksDeclared !== null ? ` of ${j.tasksDeclared} declared` : ''}`,
  ];
  if (j.tasksDeclared !== null && s.tasksToRun.length) lines.push(`missing   ${summarize(s.tasksToRun, 10)}`);
  if (s.lease) lines.push(`lease     ${s.lease.alive ? chalk.yellow('held') : 'stale'}: ${s.lease.holder}`);
  if (s.tasks.length) {
    lines.push('', 'TASK        STATE        FILES      BYTES  ATTEMPTS');
    for (const t of s.tasks) {
      lines.push(
        `${t.task.padEnd(11)} ${t.state.padEnd(10)} ${String(t.files).padStart(7)} ${formatBytes(t.bytes).padStart(10)}  ${t.attempts.map((a) => a.slice(a.lastIndexOf('_') + 1) + (a === t.winner ? '*' : '')).join(' ')}`,
      );
    }
  }
  return lines.join('\n');
}

export function renderOrphans(r: CleanOrphansDoc): string {
  if (r.leftovers.length === 0)
    return `no leftovers under ${r.roots.join(', ')} (${r.directoriesScanned} directories scanned)`;
  const rows = r.leftovers.map((l) => [
    l.kind,
    l.path,
    formatAge(l.ageSeconds),
    String(l.files),
    formatBytes(l.bytes),
    l.jobId ?? (l.jobState ? `(${l.jobState})` : ''),
    l.action + (l.reason ? ` (${l.reason})` : ''),
  ]);
  const head = ['KIND', 'PATH', 'AGE', 'FILES', 'BYTES', 'JOB', 'ACTION'];
  const widths = head.map((h, i) => rows.reduce((w, row) => Math.max(w, row[i]!.length), h.length));
  const fmt = (row: string[]) =>
    row
      .map((c, i) => (i === 2 || i === 3 || i === 4 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const count = (...actions: string[]) => r.leftovers.filter((l) => actions.includes(l.action)).length;
  const gone = count('would-delete', 'deleted');
  const rolled = count('rolled-forward');
  const skipped = count('skipped');
  const adopt = count('adopt');
  // What was not removed is said too: a run that only skipped must not read as "0 removed" and nothing else.
  const others = [
    rolled ? `${rolled} job(s) rolled forward` : '',
    adopt ? `${adopt} kept: output to adopt (see ACTION)` : '',
    skipped ? `${skipped} skipped (see ACTION)` : '',
  ]
    .filter(Boolean)
    .join(', ');
  const removed = r.dryRun
    ? gone
      ? `${gone} leftover(s) to remove, ${formatBytes(r.reclaimableBytes)} reclaimable`
      : 'nothing to remove'
    : gone
      ? `${gone} leftover(s) removed, ${formatBytes(r.reclaimableBytes)} reclaimed`
      : 'nothing removed';
  const summary = `${removed}${others ? `; ${others}` : ''}${r.dryRun ? `; dry run: nothing was changed${gone ? ', add --delete to remove them' : ''}` : ''}`;
  return [chalk.bold(fmt(head)), ...rows.map(fmt), '', summary].join('\n');
}
