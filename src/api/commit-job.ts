// commit-job: publish every committed task into the target, all at once.

import {
  commitJob as commitJobStep,
  commitJobDryRun as commitJobDryRunStep,
  type CommitJobDryRun,
  type CommitJobResult,
} from '../steps/commit-job.js';
import { handle, operation, positiveInt, required, type OptionTable } from './options.js';
import type { Session } from './session.js';

export interface CommitJobOptions {
  readonly job: string;
  /** Store operations in flight (default: the config's concurrency). */
  readonly parallelism?: number;
}

const COMMIT_JOB_OPTIONS: OptionTable<CommitJobOptions> = { job: required(handle), parallelism: positiveInt };

/** `commit-job --json`; `success` is the URI of the `_SUCCESS` file written. */
export interface CommitJobDoc extends CommitJobResult {
  readonly handle: string;
}

export const commitJob = operation(
  'commitJob',
  COMMIT_JOB_OPTIONS,
  async (s: Session, o: CommitJobOptions): Promise<CommitJobDoc> => {
    const job = await s.job(o.job);
    const r = await commitJobStep(s.stepEnv(job.store, o.parallelism), { stagingPath: job.path });
    return { handle: job.store.toUri(job.path), ...r };
  },
);

/** `commit-job --dry-run --json`: the checks and the plan of the real step; nothing written. */
export interface CommitJobDryRunDoc extends CommitJobDryRun {
  readonly handle: string;
}

export const commitJobDryRun = operation(
  'commitJobDryRun',
  COMMIT_JOB_OPTIONS,
  async (s: Session, o: CommitJobOptions): Promise<CommitJobDryRunDoc> => {
    const job = await s.job(o.job);
    const r = await commitJobDryRunStep(s.stepEnv(job.store, o.parallelism), { stagingPath: job.path });
    return { handle: job.store.toUri(job.path), ...r };
  },
);
