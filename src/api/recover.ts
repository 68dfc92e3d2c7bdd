// recover: after a killed run, keep committed tasks, start the next attempt, name the tasks still to run.

import {
  recover as recoverStep,
  recoverDryRun as recoverDryRunStep,
  type RecoverDryRun,
  type RecoverResult,
} from '../steps/recover.js';
import { handle, operation, required, type OptionTable } from './options.js';
import type { Session } from './session.js';

export interface RecoverOptions {
  readonly job: string;
}

const RECOVER_OPTIONS: OptionTable<RecoverOptions> = { job: required(handle) };

export interface RecoverDoc extends RecoverResult {
  readonly handle: string;
}

export const recover = operation(
  'recover',
  RECOVER_OPTIONS,
  async (s: Session, o: RecoverOptions): Promise<RecoverDoc> => {
    const job = await s.job(o.job);
    const r = await recoverStep(s.stepEnv(job.store), { stagingPath: job.path });
    return { handle: job.store.toUri(job.path), ...r };
  },
);

/** `recover --dry-run --json`: what recover would keep, finish or undo, and run again; nothing changed. */
export interface RecoverDryRunDoc extends RecoverDryRun {
  readonly handle: string;
}

export const recoverDryRun = operation(
  'recoverDryRun',
  RECOVER_OPTIONS,
  async (s: Session, o: RecoverOptions): Promise<RecoverDryRunDoc> => {
    const job = await s.job(o.job);
    const r = await recoverDryRunStep(s.stepEnv(job.store), { stagingPath: job.path });
    return { handle: job.store.toUri(job.path), ...r };
  },
);
