// status: a job's state, tasks, files, bytes, age and owner.

import type { JobManifest } from '../job/job.js';
import { status as statusStep, type FinishedStatusResult, type StatusResult } from '../steps/status.js';
import { handle, operation, required, type OptionTable } from './options.js';
import { iso, type Session } from './session.js';

export interface StatusOptions {
  readonly job: string;
}

const STATUS_OPTIONS: OptionTable<StatusOptions> = { job: required(handle) };

/**
 * The job's manifest as `status --json` shows it: the handle is top-level `handle`, not `staging`;
 * the declared task count is `tasksDeclared` (null: none), as in every other document.
 */
export type StatusJob = Omit<JobManifest, 'staging' | 'tasks' | 'planName' | 'adopted'> & {
  readonly tasksDeclared: number | null;
  /** An adopted job: where its leftover was, and how many committed tasks adopt claims. */
  readonly adopted?: { readonly leftover: string; readonly leftoverPath: string; readonly tasksAdopted: number };
  readonly stagedAt: string;
};

export interface LiveStatusDoc extends Omit<StatusResult, 'job'> {
  readonly handle: string;
  readonly job: StatusJob;
}

/** A committed job whose staging dir is gone: what its `_SUCCESS` or table-log entry proves. */
export interface FinishedStatusDoc extends FinishedStatusResult {
  readonly handle: string;
}

export type StatusDoc = LiveStatusDoc | FinishedStatusDoc;

export const status = operation('status', STATUS_OPTIONS, async (s: Session, o: StatusOptions): Promise<StatusDoc> => {
  const loc = await s.job(o.job);
  const r = await statusStep(s.stepEnv(loc.store), { stagingPath: loc.path });
  if ('finished' in r) return { handle: loc.store.toUri(loc.path), ...r };
  const { staging, tasks, planName: _plan, adopted, ...job } = r.job;
  return {
    handle: staging,
    ...r,
    job: {
      ...job,
      tasksDeclared: tasks ?? null,
      ...(adopted
        ? { adopted: { leftover: adopted.leftover, leftoverPath: adopted.leftoverPath, tasksAdopted: adopted.tasks } }
        : {}),
      stagedAt: iso(job.stagedAtMs),
    },
  };
});
