// commit-task: claim the task for this attempt (first claim wins) and promote its files.

import { commitTask as commitTaskStep, type CommitTaskResult } from '../steps/commit-task.js';
import { handle, operation, required, taskId, wholeNumber, type OptionTable } from './options.js';
import type { Session } from './session.js';

export interface CommitTaskOptions {
  readonly job: string;
  readonly task: string | number;
  readonly attempt?: number;
}

const COMMIT_TASK_OPTIONS: OptionTable<CommitTaskOptions> = {
  job: required(handle),
  task: required(taskId),
  attempt: wholeNumber,
};

/** `commit-task --json`: outcome 'committed', or 'already' for an attempt that had committed. */
export interface CommitTaskDoc extends CommitTaskResult {
  readonly handle: string;
  readonly attempt: number;
}

export const commitTask = operation(
  'commitTask',
  COMMIT_TASK_OPTIONS,
  async (s: Session, o: CommitTaskOptions): Promise<CommitTaskDoc> => {
    const job = await s.job(o.job);
    const r = await commitTaskStep(s.stepEnv(job.store), {
      stagingPath: job.path,
      task: String(o.task),
      attempt: o.attempt,
    });
    return { handle: job.store.toUri(job.path), ...r };
  },
);
