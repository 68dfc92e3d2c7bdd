// commit-task: claim the task for this attempt (first claim wins) and promote its files.

import { commitTask as commitTaskStep, type CommitTaskResult } from '../steps/commit-task.js';
import type { Session } from './session.js';

export interface CommitTaskOptions {
  readonly job: string;
  readonly task: string | number;
  readonly attempt?: number;
}

/** `commit-task --json`: outcome 'committed', or 'already' for an attempt that had committed. */
export interface CommitTaskDoc extends CommitTaskResult {
  readonly handle: string;
  readonly attempt: number;
}

export async function commitTask(s: Session, o: CommitTaskOptions): Promise<CommitTaskDoc> {
  const job = await s.job(o.job);
  const r = await commitTaskStep(s.stepEnv(job.store), { stagingPath: job.path, task: String(o.task), attempt: o.attempt });
  return { handle: job.store.toUri(job.path), ...r, attempt: o.attempt ?? 0 };
}
