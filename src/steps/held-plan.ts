// The plan of a job found past its commit point, read once under the lease, and whether the table
// log still lets it roll forward (DESIGN §5.8). A plan whose log entry was given up landed after
// recover reset the job: a write the store held while the driver's lease lapsed (DESIGN §5.6).

import { CorruptManifestError } from '../errors.js';
import type { OpenJob, StalePlan } from '../job/open.js';
import { TableLog } from '../job/table-log.js';
import { loadPlan, type PersistedPlan } from '../plan/plan-file.js';
import type { StepEnv } from './env.js';

export interface HeldPlan {
  /** The job as it is now: staged again when its plan was given up and removed. */
  readonly open: OpenJob;
  /** The plan to roll forward; null before the commit point (or a committed job's clean-up). */
  readonly plan: PersistedPlan | null;
}

/**
 * Reads the plan of a job past its commit point. A staged job's plan that never became its
 * commit point (open.ts: its table-log entry did not land, or was given up before the plan
 * landed: recover decided the job had not reached its commit point, then a write its store held
 * arrived) was never applied, and never may be: later commits may hold its partitions. It is
 * removed, with a warning, and the job is staged, so commit-job commits it afresh and abort may
 * discard it. A plan whose entry is the job's is rolled forward (checkHeldEntry looks again).
 */
export async function readHeldPlan(env: StepEnv, open: OpenJob): Promise<HeldPlan> {
  if (open.stalePlan) return dropStalePlan(env, open, open.stalePlan);
  if (open.state !== 'committing' && open.state !== 'committed') return { open, plan: null };
  const plan = await loadPlan(env.store, open.layout, open.job.jobId);
  return { open, plan };
}

async function dropStalePlan(env: StepEnv, open: OpenJob, stale: StalePlan): Promise<HeldPlan> {
  const file = env.store.toUri(open.layout.commitFile);
  const why =
    stale.kind === 'given-up'
      ? 'which was given up (by recover or abort) before the plan landed'
      : "which is not this job's (the run that wrote the plan lost that number to another job, or was stopped before it made the entry)";
  env.emit({ type: 'warn', message: `${file} names table-log entry ${stale.entry}, ${why}: it was never applied; removed it, the job is staged` });
  await env.store.delete(open.layout.commitFile, false);
  const { stalePlan: _, ...rest } = open;
  return { open: rest, plan: null };
}

/**
 * A roll-forward applies its plan only while the table log still says the plan's entry is this
 * job's: an entry lost or reused means later commits may hold those partitions. True when the
 * entry is finished already (its done marker goes beside 'committed', after the plan was applied
 * and `_SUCCESS` written): then nothing is applied or written again, over what later commits wrote.
 */
export async function checkHeldEntry(env: StepEnv, open: OpenJob, plan: PersistedPlan): Promise<boolean> {
  const n = plan.logEntry;
  if (n === null || open.job.state === 'committed') return false;
  const { entry, givenUp, finished } = await new TableLog(env.store, open.job.targetPath).readOwn(n, open.job.jobId);
  if (entry && entry.jobId === open.job.jobId && !givenUp) return finished;
  const which = !entry ? 'is gone' : givenUp ? 'was given up' : 'belongs to job ' + entry.jobId;
  throw new CorruptManifestError(
    env.store.toUri(open.layout.commitFile),
    'logEntry',
    `names table-log entry ${n}, which ${which}: rolling this plan forward could undo newer commits; restore the log, or check the target by hand (what the plan replaced is under trash/ in the staging dir) and then delete the staging dir`,
  );
}
