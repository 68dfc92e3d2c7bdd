// The plan of a job past its commit point, read once under the lease, and whether the table log
// still lets it roll forward (protocol.md §4.4, §5.8). The lease holder removes the job's garbage
// plans here (protocol.md §4.1: a plan no entry names), with no warning: none was ever applied.

import { CorruptManifestError } from '../errors.js';
import { decidedPlan, type OpenJob } from '../job/open.js';
import type { LostEntry } from '../messages/manifest.js';
import { isOwnEntry, TableLog } from '../job/table-log.js';
import { listPlans, loadPlan, planRefOf, type PersistedPlan, type PlanRef } from '../plan/plan-file.js';
import { mapLimit } from '../util/pool.js';
import type { StepEnv } from './env.js';

export interface HeldPlan {
  /** The job as it is now: 'committing' when a plan decides it, though `_job.yaml` may still say staged. */
  readonly open: OpenJob;
  /** The plan to roll forward; null before the commit point (or a committed job's clean-up). */
  readonly plan: PersistedPlan | null;
  /** Its file (`_commit.yaml` for a plan written before plans had names of their own). */
  readonly ref: PlanRef | null;
  /** The table log marks the plan's entry finished: nothing is applied or written again (confirmed by its progress). */
  readonly finished: boolean;
}

/**
 * Reads the plan that decides the job, under the lease, and removes every other plan in `_plan/`:
 * garbage, never applied, never to be (an entry that names one later never counts, protocol.md §3.3).
 * `load: false`: only the job's state is wanted (abort), not the plan's bytes; `tidy: false`: a dry
 * run, which removes nothing.
 */
export async function readHeldPlan(
  env: StepEnv,
  open: OpenJob,
  opts: { load?: boolean; tidy?: boolean } = {},
): Promise<HeldPlan> {
  const { store } = env;
  const { job, layout } = open;
  const none = { plan: null, ref: null, finished: false };
  if (open.state === 'aborted' || job.state === 'committed') return { open, ...none };
  const plans = await listPlans(store, layout);
  const ref =
    job.state === 'committing'
      ? job.planName === undefined
        ? null
        : (plans.find((p) => p.name === job.planName) ?? planRefOf(layout, `${job.planName}.yaml`))
      : ((await decidedPlan(store, layout, job, plans))?.ref ?? null);
  if (opts.tidy !== false)
    await mapLimit(
      plans.filter((p) => p.path !== ref?.path),
      env.concurrency,
      (p) => store.delete(p.path, false),
    );
  if (!ref && job.state === 'staged') return { open: { ...open, state: 'staged' }, ...none };
  const committing = { ...open, state: 'committing' as const };
  if (opts.load === false) return { open: committing, ...none };
  if (!ref) return readLegacyPlan(env, committing);
  const { finished, sha256 } = await checkHeldEntry(env, committing, ref);
  const plan = await loadPlan(store, ref, job.jobId, sha256 ?? undefined);
  if (plan) return { open: committing, plan, ref, finished };
  // Its entry finished, its plan gone: the job committed and its staging dir went (the plan goes only
  // with it), and this `_job.yaml` is a late write of a stopped driver (protocol.md §5.15): only the
  // clean-up is left.
  if (finished) return { open: { ...open, state: 'committed', job: { ...job, state: 'committed' } }, ...none };
  throw planMissing(env, open, ref.path);
}

/**
 * A job committing since before plans had names of their own: its `_job.yaml` names no plan, and
 * `_commit.yaml` is its plan, rolled forward while its entry is still its own (protocol.md §11).
 */
async function readLegacyPlan(env: StepEnv, open: OpenJob): Promise<HeldPlan> {
  const { store } = env;
  const { job, layout } = open;
  const ref: PlanRef = { name: '_commit', path: layout.legacyPlanFile, appAttempt: job.appAttempt, entry: null };
  const plan = await loadPlan(store, ref, job.jobId);
  if (!plan) throw planMissing(env, open, layout.planDir);
  if (plan.logEntry === null) return { open, plan, ref, finished: false };
  const log = new TableLog(store, job.targetPath);
  const entry = await log.read(plan.logEntry).catch(() => null);
  const outcome =
    entry && isOwnEntry(entry, { jobId: job.jobId, staging: layout.root })
      ? await log.readDone(plan.logEntry, job.jobId)
      : 'void';
  if (outcome === 'void') throw entryLost(env, ref.path, plan.logEntry, { kind: entry ? 'void' : 'gone' });
  return { open, plan, ref, finished: outcome === 'committed' };
}

/** A job past its commit point whose plan is gone: exit 1, never planned again (protocol.md §5.10). */
export function planMissing(env: StepEnv, { layout }: Pick<OpenJob, 'layout'>, plan: string): CorruptManifestError {
  return new CorruptManifestError(env.store.toUri(layout.jobFile), {
    reason: 'plan-missing',
    plan: env.store.toUri(plan),
  });
}

function entryLost(env: StepEnv, plan: string, entry: number, which: LostEntry): CorruptManifestError {
  return new CorruptManifestError(env.store.toUri(plan), { reason: 'plan-entry-lost', entry, which });
}

/**
 * A roll-forward applies its plan only while the table-log entry its name gives still names it and
 * is not marked void (protocol.md §4.4): an entry lost or reused means later commits may hold those
 * partitions. `finished` when the entry is marked committed (its done marker goes beside
 * 'committed', after the plan was applied and `_SUCCESS` written): then nothing is applied or
 * written again, over what later commits wrote. `sha256`: the digest the entry names.
 */
async function checkHeldEntry(
  env: StepEnv,
  { job, layout }: OpenJob,
  ref: PlanRef,
): Promise<{ finished: boolean; sha256: string | null }> {
  if (ref.entry === null) return { finished: false, sha256: null };
  const owner = { jobId: job.jobId, staging: layout.root };
  const named = await new TableLog(env.store, job.targetPath).entryNaming(ref.entry, owner, ref.name);
  if (named.names && !named.void) return { finished: named.finished, sha256: named.entry!.plan!.sha256 };
  const which: LostEntry = !named.entry
    ? { kind: 'gone' }
    : named.names
      ? { kind: 'void' }
      : {
          kind: 'other-plan',
          jobId: named.entry.jobId,
          handle: named.entry.jobId === job.jobId ? named.entry.handle : null,
        };
  throw entryLost(env, ref.path, ref.entry, which);
}
