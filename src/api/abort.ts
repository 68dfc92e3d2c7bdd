// abort: throw away one task attempt (task given) or the whole job.

import { UsageError } from '../errors.js';
import {
  abort as abortStep,
  abortDryRun as abortDryRunStep,
  type AbortDryRun,
  type AbortResult,
} from '../steps/abort.js';
import { handle, operation, required, taskId, wholeNumber, type OptionTable } from './options.js';
import type { Session } from './session.js';

export interface AbortOptions {
  readonly job: string;
  /** Abort only this task's attempt. */
  readonly task?: string | number;
  readonly attempt?: number;
}

const ABORT_OPTIONS: OptionTable<AbortOptions> = { job: required(handle), task: taskId, attempt: wholeNumber };

/** `abort --json`: outcome 'nothing' when the handle names no job (like rm -f). */
export interface AbortDoc extends AbortResult {
  readonly handle: string;
}

function input(o: AbortOptions, path: string) {
  if (o.attempt !== undefined && o.task === undefined) throw new UsageError({ reason: 'attempt-without-task' });
  return { stagingPath: path, task: o.task === undefined ? undefined : String(o.task), attempt: o.attempt };
}

export const abort = operation('abort', ABORT_OPTIONS, async (s: Session, o: AbortOptions): Promise<AbortDoc> => {
  const job = await s.job(o.job);
  const r = await abortStep(s.stepEnv(job.store), input(o, job.path));
  return { handle: job.store.toUri(job.path), ...r };
});

/** `abort --dry-run --json`: what would be thrown away; nothing changed. */
export interface AbortDryRunDoc extends AbortDryRun {
  readonly handle: string;
}

export const abortDryRun = operation(
  'abortDryRun',
  ABORT_OPTIONS,
  async (s: Session, o: AbortOptions): Promise<AbortDryRunDoc> => {
    const job = await s.job(o.job);
    const r = await abortDryRunStep(s.stepEnv(job.store), input(o, job.path));
    return { handle: job.store.toUri(job.path), ...r };
  },
);
