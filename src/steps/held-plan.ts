// The plan of a job found past its commit point (in `_job.yaml`, or `_commit.yaml`), read once under
// the lease, and whether the table log still lets it roll forward (protocol.md §5.8). A plan that never
// became the commit point (open.ts) is removed, unless it shows it was partly applied or landed
// over a job that recover had moved on: writes a store held while the driver's lease lapsed (protocol.md §5.15).

import { posix } from 'node:path';
import { CorruptManifestError } from '../errors.js';
import type { OpenJob, StalePlan } from '../job/open.js';
import type { LostEntry, StaleEntry } from '../messages/manifest.js';
import { TableLog } from '../job/table-log.js';
import { decodePlan, loadJobPlan, type PersistedPlan } from '../plan/plan-file.js';
import { resolveLoc } from '../plan/apply.js';
import { mapLimit } from '../util/pool.js';
import { saveJob } from '../job/job.js';
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
export async function readHeldPlan(env: StepEnv, open: OpenJob, opts: { aborting?: boolean } = {}): Promise<HeldPlan> {
  const stale = open.stalePlan;
  if (stale?.carried !== undefined) {
    if (!opts.aborting) await refuseOverwritten(env, open, stale);
    await refuseApplied(env, open, stale, stale.carried);
  }
  if (stale) return dropStalePlan(env, open, stale);
  if (open.state !== 'committing' && open.state !== 'committed') return { open, plan: null };
  const plan = await loadJobPlan(env.store, open.layout, open.job);
  return { open, plan };
}

/**
 * A plan in `_job.yaml` that never counted can be a write of an earlier driver that its store
 * held and let land after recover had moved the job on: it then carries the job as it was before
 * (an earlier app attempt). Committing that would leave out what the later app attempt holds.
 */
async function refuseOverwritten(env: StepEnv, { job, layout }: OpenJob, stale: StalePlan): Promise<void> {
  const later = (await env.store.list(layout.temporary))
    .map((e) => Number(e.name))
    .filter((n) => Number.isInteger(n) && n > job.appAttempt);
  if (later.length === 0) return;
  throw new CorruptManifestError(env.store.toUri(layout.jobFile), {
    reason: 'earlier-driver-wrote',
    appAttempt: job.appAttempt,
    entry: stale.entry,
    later: Math.max(...later),
  });
}

/**
 * `_job.yaml` is written with its plan at once with the entry, so an entry lost or reused later
 * (the log damaged) reads as one that never landed. A plan that was partly applied shows it:
 * then neither rolling it forward (later commits may hold its partitions) nor planning again
 * (what it published would be taken for old data) is safe.
 */
async function refuseApplied(env: StepEnv, { job, layout }: OpenJob, stale: StalePlan, carried: string): Promise<void> {
  const plan = decodePlan(Buffer.from(carried), env.store.toUri(layout.jobFile));
  const at = (loc: string) => resolveLoc({ stagingPath: layout.root, targetPath: job.targetPath }, loc);
  const gone: string[] = [];
  const there: string[] = [layout.progressFile, layout.trash];
  for (const phase of plan.phases) {
    for (const op of phase) {
      if (op.op === 'move') gone.push(at(op.from));
      else if (op.op === 'moves') gone.push(...op.names.map((n) => posix.join(at(op.from), n)));
      else if (op.op === 'swap') (gone.push(at(op.from)), there.push(at(op.trash)));
      else if (op.op === 'copy' && !op.replace) there.push(at(op.to));
    }
  }
  const [missing, present] = await Promise.all([
    mapLimit(gone, env.concurrency, async (p) => (await env.store.stat(p)) === null),
    mapLimit(there, env.concurrency, async (p) => (await env.store.stat(p)) !== null),
  ]);
  if (!missing.includes(true) && !present.includes(true)) return;
  const kind: StaleEntry =
    stale.kind === 'superseded'
      ? { kind: 'superseded', appAttempt: stale.appAttempt! }
      : { kind: stale.kind === 'given-up' ? 'given-up' : 'foreign' };
  throw new CorruptManifestError(env.store.toUri(layout.jobFile), {
    reason: 'stale-plan-applied',
    entry: stale.entry,
    stale: kind,
  });
}

async function dropStalePlan(env: StepEnv, open: OpenJob, stale: StalePlan): Promise<HeldPlan> {
  const { layout } = open;
  const why =
    stale.kind === 'given-up'
      ? 'which was given up (by recover or abort) before the plan landed'
      : stale.kind === 'superseded'
        ? `and was made in app attempt ${stale.appAttempt}: recover reset the job to app attempt ${open.job.appAttempt} before the plan landed`
        : "which is not this job's (the run that wrote the plan lost that number to another job, or was stopped before it made the entry)";
  const where =
    stale.carried !== undefined
      ? `${env.store.toUri(layout.jobFile)} carries a commit plan that`
      : env.store.toUri(layout.commitFile);
  env.emit({
    type: 'warn',
    message: `${where} names table-log entry ${stale.entry}, ${why}: it was never applied; removed it, the job is staged`,
  });
  // openJob gave the job as it was before the plan: written back, the plan goes with 'committing'.
  await (stale.carried !== undefined
    ? saveJob(env.store, layout, open.job)
    : env.store.delete(layout.commitFile, false));
  const { stalePlan: _, ...rest } = open;
  return { open: rest, plan: null };
}

/** A job past its commit point whose plan is gone: exit 1, never planned again (protocol.md §5.10). */
export function planMissing(env: StepEnv, { layout }: OpenJob): CorruptManifestError {
  const { store } = env;
  return new CorruptManifestError(store.toUri(layout.jobFile), {
    reason: 'plan-missing',
    commitFile: store.toUri(layout.commitFile),
  });
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
  const { entry, own, givenUp, finished } = await new TableLog(env.store, open.job.targetPath).readOwn(n, {
    jobId: open.job.jobId,
    staging: open.layout.root,
  });
  if (own && !givenUp) return finished;
  const which: LostEntry = !entry
    ? { kind: 'gone' }
    : givenUp
      ? { kind: 'given-up' }
      : { kind: 'other-job', jobId: entry.jobId, handle: entry.jobId === open.job.jobId ? entry.handle : null };
  throw new CorruptManifestError(env.store.toUri(open.layout.commitFile), {
    reason: 'plan-entry-lost',
    entry: n,
    which,
  });
}
