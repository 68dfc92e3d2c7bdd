// The messages of CommitDeniedError (exit 3) and IncompleteError (exit 5), made from the reason's fields.

import { takenBackWords, tasksToRunCommand, type TakenBack } from './advice.js';

/** Why a task attempt may not commit: its files will never appear. */
export type DeniedDetail =
  /** Another attempt of the task claimed it first. */
  | {
      readonly reason: 'other-attempt-won';
      readonly taskAttempt: string;
      readonly task: string;
      readonly winner: string;
      readonly host: string;
      readonly pid: number;
    }
  /** The attempt was aborted (at commit-task, `at` and `by` say when and by whom). */
  | { readonly reason: 'attempt-aborted'; readonly taskAttempt: string; readonly at: string; readonly by: string }
  /** Files were staged into an aborted attempt: before the stage (`taken` null) or while it ran. */
  | { readonly reason: 'staged-into-aborted'; readonly taskAttempt: string; readonly taken: TakenBack | null };

export function deniedMessage(d: DeniedDetail): string {
  switch (d.reason) {
    case 'other-attempt-won':
      return `commit denied for ${d.taskAttempt}: task ${d.task} was claimed by ${d.winner} (${d.host}, pid ${d.pid}); this attempt's files will never appear`;
    case 'attempt-aborted':
      return `commit denied for ${d.taskAttempt}: the attempt was aborted (${d.at} by ${d.by}) and can never commit; run the task as a new --attempt`;
    case 'staged-into-aborted':
      return d.taken === null
        ? `task attempt ${d.taskAttempt} was aborted: it can never commit; stage into a new --attempt`
        : `task attempt ${d.taskAttempt} was aborted while this stage ran: it can never commit, and ${takenBackWords(d.taken)}; stage into a new --attempt`;
  }
}

/** What commit-job found missing. */
export type IncompleteDetail =
  /** Declared tasks are not committed. */
  | {
      readonly reason: 'tasks-missing';
      /** The declared tasks not committed, in order. */
      readonly missing: readonly string[];
      readonly declared: number;
    }
  /** An overwrite with no task committed: it would replace what it replaces with nothing. */
  | { readonly reason: 'no-task-committed'; readonly jobId: string };

export function incompleteMessage(d: IncompleteDetail): string {
  if (d.reason === 'no-task-committed')
    return `job ${d.jobId} is an overwrite with no task committed: it would replace the data it replaces with nothing; commit its tasks (${tasksToRunCommand()} lists them), or, to replace it with nothing on purpose, commit one task with no files ('stage --print-path', then 'commit-task')`;
  const shown = `${d.missing.slice(0, 20).join(', ')}${d.missing.length > 20 ? ', …' : ''}`;
  return `${d.missing.length} of ${d.declared} declared task(s) are not committed: ${shown}; commit them (${tasksToRunCommand()} lists them)`;
}
