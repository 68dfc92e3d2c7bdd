// The plan of a job found past its commit point, read once under the lease, and whether the table
// log still lets it roll forward (DESIGN §5.8). A plan whose log entry was given up landed after
// recover reset the job: a write the store held while the driver's lease lapsed (DESIGN §5.6).

import { CorruptManifestError } from '../errors.js';
import type { OpenJob } from '../job/open.js';
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
 * Reads the plan of a job past its commit point. One whose table-log entry is this job's and was
 * given up (recover decided the job had not reached its commit point, then the plan landed) was
 * never applied, and never may be: later commits may hold its partitions. It is removed, with a
 * warning, and the job is staged again, so commit-job commits it afresh and abort may discard it.
 */
export async function readHeldPlan(env: StepEnv, open: OpenJob): Promise<HeldPlan> {
  if (open.state !== 'committing' && open.state !== 'committed') return { open, plan: null };
  const plan = await loadPlan(env.store, open.layout, open.job.jobId);
  if (!plan || plan.logEntry === null || open.state === 'committed') return { open, plan };
  // Given up before any driver began applying it: by a recover (which started a later app
  // attempt), or before this job was staged at all (an aborted job whose id a new one reuses: the
  // entry predates this job's log position). A plan of this job's own attempt and log position is
  // rolled forward without a look at the log here.
  const { state, appAttempt, logPosition } = open.job;
  const droppable = state === 'staged' && (plan.appAttempt < appAttempt || (logPosition !== null && plan.logEntry <= logPosition));
  if (!droppable) return { open, plan };
  const { givenUp } = await new TableLog(env.store, open.job.targetPath).readOwn(plan.logEntry, open.job.jobId);
  if (!givenUp) return { open, plan };
  const file = env.store.toUri(open.layout.commitFile);
  env.emit({ type: 'warn', message: `${file} names table-log entry ${plan.logEntry}, which was given up (by recover or abort) before the plan landed: it was never applied; removed it, the job is staged again` });
  await env.store.delete(open.layout.commitFile, false);
  return { open: { ...open, state: 'staged' }, plan: null };
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
