// abort: throw away one task attempt (task given) or the whole job.

import { UsageError } from '../errors.js';
import { abort as abortStep, type AbortResult } from '../steps/abort.js';
import type { Session } from './session.js';

export interface AbortOptions {
  readonly job: string;
  /** Abort only this task's attempt. */
  readonly task?: string | number;
  readonly attempt?: number;
}

/** `abort --json`: outcome 'nothing' when the handle names no job (like rm -f). */
export interface AbortDoc extends AbortResult {
  readonly handle: string;
}

export async function abort(s: Session, o: AbortOptions): Promise<AbortDoc> {
  const job = await s.job(o.job);
  if (o.attempt !== undefined && o.task === undefined) throw new UsageError('--attempt needs --task: it names one attempt of one task');
  const r = await abortStep(s.stepEnv(job.store), { stagingPath: job.path, task: o.task === undefined ? undefined : String(o.task), attempt: o.attempt });
  return { handle: job.store.toUri(job.path), ...r };
}
