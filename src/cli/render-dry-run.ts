// Text for --dry-run results (commit-job, abort, recover, adopt): the plan as a person reads it.

import type { AbortDryRunDoc, CommitJobDryRunDoc, PlannedOperation, RecoverDryRunDoc } from '../api/index.js';
import { formatBytes } from './render.js';

/** A short list: the first few, then how many more. */
export const shortList = (xs: readonly string[], max = 6): string =>
  xs.length === 0
    ? 'none'
    : xs.length <= max
      ? xs.join(', ')
      : `${xs.slice(0, max).join(', ')} and ${xs.length - max} more`;

export function renderOp(o: PlannedOperation): string {
  const phase = o.phase ? `[${o.phase}] ` : '';
  if (o.op === 'swap') return `${phase}replace ${o.path ?? ''} by ${o.from} (old parked at ${o.to})`;
  if (o.from)
    return `${phase}${o.op} ${o.from} → ${o.to}${o.dir ? ' (whole directory)' : o.replace ? ' (replacing the old file)' : ''}`;
  return `${phase}${o.op} ${o.path ?? ''}${o.dir ? ' (recursively)' : ''}`;
}

export function renderCommitDryRun(r: Omit<CommitJobDryRunDoc, 'handle'>): string {
  const s = r.summary;
  if (r.outcome === 'already-committed')
    return `dry run: job ${r.jobId} was already committed into ${r.target}: commit-job would do nothing\ndry run: nothing was changed`;
  return [
    `dry run: commit-job would ${r.outcome === 'rolled-forward' ? 'finish the interrupted commit of' : 'commit'} job ${r.jobId}: ${r.files} file(s), ${formatBytes(r.bytes)} into ${r.target}`,
    `  partitions written  ${shortList(r.partitionsWritten)}`,
    `  partitions replaced ${shortList(r.partitionsReplaced.map((p) => p || '(all data)'))}`,
    `  ${s.directoriesMovedWhole} director(ies) move whole, ${s.filesMovedOneByOne} file(s) one by one, ${s.filesCopied} copied`,
    `  displaced           ${shortList(s.displaced)}`,
    ...(r.logEntry !== null ? [`  table-log entry     ${r.logEntry}`] : []),
    ...r.operations.map((o) => `  would ${renderOp(o)}`),
    'dry run: nothing was changed',
  ].join('\n');
}

/** What a job abort leaves in the target: nothing, or (v2) what its claimed tasks published. */
export function targetAfterAbort(published: readonly string[] | undefined, would = false): string {
  if (!published?.length) return `the target ${would ? 'is' : 'was'} not touched`;
  return `v2 task(s) ${shortList(published, 20)} had claimed their output: any file they published at commit-task ${would ? 'stays' : 'stayed'} in the target (v2 publishes per task; one killed before it published left nothing there; check the target, and remove by hand what the table must not keep)`;
}

export function renderAbortDryRun(r: AbortDryRunDoc): string {
  if (r.outcome === 'nothing') return 'dry run: nothing to abort: no job at that handle';
  const what = r.scope === 'job' ? `job ${r.jobId}` : r.taskAttempt;
  const back = r.givesBack
    ? `; it gives the adopted leftover back (${r.givesBack.files} file(s), ${formatBytes(r.givesBack.bytes)}) to ${r.givesBack.to}`
    : '';
  return [
    `dry run: abort would throw away ${what}: ${r.files} file(s), ${formatBytes(r.bytes)}${back}; ${r.scope === 'job' ? targetAfterAbort(r.publishedTasks, true) : 'the target is not touched'}`,
    ...r.operations.map((o) => `  would ${renderOp(o)}`),
    'dry run: nothing was changed',
  ].join('\n');
}

export function renderRecoverDryRun(r: RecoverDryRunDoc): string {
  if (r.alreadyCommitted)
    return `dry run: job ${r.jobId} was already committed (${r.alreadyCommitted.success}, ${r.alreadyCommitted.committedAt}): recover would do nothing\ndry run: nothing was changed`;
  if (r.commit)
    return `dry run: recover would roll job ${r.jobId} forward (it is past its commit point)\n${renderCommitDryRun(r.commit)}`;
  if (r.state === 'aborted')
    return `dry run: recover would finish removing aborted job ${r.jobId}'s staging dir\ndry run: nothing was changed`;
  return [
    `dry run: recover would start app attempt ${r.appAttempt} of job ${r.jobId}: keep ${r.committedTasks?.length ?? 0} committed task(s), ${r.tasksToRun.length} to run (${shortList(r.tasksToRun, 20)})`,
    ...(r.interrupted.length ? [`  interrupted task commits to finish or undo: ${shortList(r.interrupted)}`] : []),
    'dry run: nothing was changed',
  ].join('\n');
}
