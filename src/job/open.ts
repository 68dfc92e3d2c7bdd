// Opening a job by its staging dir: its manifest, and the state it is really in — the one home
// of the commit-point rule (protocol.md §4.1): a plan of the job's current app attempt counts once
// the table-log entry it names names it back (its create is the commit point), or, naming no
// entry, once it is there. Any other plan is garbage, never a state.

import { BlockedError, ConflictError, CorruptManifestError, UsageError } from '../errors.js';
import type { JobGoneDetail } from '../messages/usage.js';
import type { Store } from '../store/types.js';
import { loadJob, type JobManifest, type JobState } from './job.js';
import {
  findCommitted,
  noJobEvidence,
  plansUndecided,
  taskDebrisOnly,
  type FinishedJob,
  type TaskDebris,
} from './finished.js';
import { JobLayout, targetOfDefaultStaging, TRASH_DIR } from './layout.js';
import { TableLog } from './table-log.js';
import { listPlans, type PlanRef } from './plan-names.js';

export interface OpenJob {
  readonly layout: JobLayout;
  readonly job: JobManifest;
  /** The job's state, counting a decided plan as 'committing' (the commit point). */
  readonly state: JobState;
  /** The files in `_plan/` when the job was opened (a committed job's: not listed). */
  readonly plans?: readonly PlanRef[];
}

/**
 * A handle that names no job: finished (cleaned up) or never existed; `committed` when it can tell the job committed.
 */
export class JobGoneError extends UsageError {
  /**
   * `stray`: what is left of a committed job's staging dir (a plan that landed late), to delete.
   * `debris`: finds task steps' records (or the empty dirs they were in) left at the handle after its
   * job ended, which a driving step removes; read only when asked.
   */
  constructor(
    detail: JobGoneDetail,
    readonly committed: FinishedJob | null = null,
    readonly stray?: string,
    readonly debris?: () => Promise<TaskDebris | null>,
  ) {
    super(detail);
  }

  /** The warning a step that finds the job committed gives about its stray plan; null when there is none. */
  strayWarning(): string | null {
    return this.committed && this.stray
      ? `a commit plan of job ${this.committed.jobId} landed after it committed (a write its store held): ${this.stray} is garbage, removed`
      : null;
  }
}

/**
 * The plan among `plans` that decides the job (protocol.md §4.1), or null: one of the job's current
 * app attempt that names no entry, or whose table-log entry names it (the job's id and staging
 * dir, and the plan's name). Whether its bytes have the digest the entry names is checked where
 * the plan is read (loadDecidedPlan): a damaged plan is reported by the lease holder, not taken for
 * garbage.
 */
export async function decidedPlan(
  store: Store,
  layout: JobLayout,
  job: JobManifest,
  plans: readonly PlanRef[],
): Promise<{ readonly ref: PlanRef; readonly sha256: string | null } | null> {
  const current = plans.filter((p) => p.appAttempt === job.appAttempt);
  const own = current.find((p) => p.entry === null);
  if (own) return { ref: own, sha256: null };
  const log = new TableLog(store, job.targetPath);
  const owner = { jobId: job.jobId, staging: layout.root };
  for (const p of current) {
    // An entry that cannot be read may name this plan: decided, and the lease holder reports the damage.
    const named = await log.entryNaming(p.entry!, owner, p.name).catch(() => null);
    if (!named) return { ref: p, sha256: null };
    if (named.names && !named.void) return { ref: p, sha256: named.entry!.plan!.sha256 };
  }
  return null;
}

/** The state a job is in: a staged one with a decided plan is past its commit point. `plans`: `_plan/`, listed. */
export async function stateOnStore(
  store: Store,
  layout: JobLayout,
  job: JobManifest,
  plans?: readonly PlanRef[],
): Promise<JobState> {
  if (job.state !== 'staged') return job.state;
  const found = plans ?? (await listPlans(store, layout));
  if (found.length === 0) return 'staged';
  return (await decidedPlan(store, layout, job, found)) ? 'committing' : 'staged';
}

/** Past the commit point, a job only rolls forward. */
export function isPastCommitPoint(state: JobState): boolean {
  return state === 'committing' || state === 'committed';
}

/** Reads the job; a missing `_job.yaml` is reported with where its `_SUCCESS` is, if we can tell. */
// eslint-disable-next-line max-lines-per-function -- not yet split (issue 40)
export async function openJob(
  env: { readonly store: Store; readonly allowUnsignedJob?: boolean },
  stagingPath: string,
): Promise<OpenJob> {
  const { store } = env;
  const layout = new JobLayout(stagingPath);
  // Both reads at once: one round trip, not two.
  const [job, plans] = await Promise.all([
    loadJob(store, layout, { allowUnsigned: env.allowUnsignedJob }),
    listPlans(store, layout),
  ]);
  if (job) return { layout, job, state: await stateOnStore(store, layout, job, plans), plans };
  // A plan outlives `_job.yaml` in no clean-up: this job is past its commit point and lost its manifest.
  if (plans.length) {
    const plan = store.toUri(plans[0]!.path);
    // A plan that landed after its job committed (a write its store held, protocol.md §5.15) made the
    // staging dir again: the job is finished, the plan a leftover.
    // Garbage either way (protocol.md §4.1): the step that drives the handle removes it.
    const garbage = () => Promise.resolve({ files: plans.map((p) => p.path), dirs: [layout.planDir] });
    const done = await findCommitted(store, stagingPath);
    if (done) {
      throw new JobGoneError(
        {
          reason: 'job-finished',
          jobId: done.jobId,
          success: done.success,
          committedAt: done.committedAt,
          strayPlan: plan,
        },
        done,
        plan,
        garbage,
      );
    }
    if (await plansUndecided(store, stagingPath, plans)) {
      throw new JobGoneError(
        { reason: 'job-plan-given-up', stagingDir: store.toUri(stagingPath), plan },
        null,
        plan,
        garbage,
      );
    }
    throw new CorruptManifestError(store.toUri(layout.jobFile), {
      reason: 'job-file-missing',
      evidence: { kind: 'plan' },
    });
  }
  // The three things a handle without a job can still tell, read at once.
  const { done, held, unreadable, left } = await noJobEvidence(store, stagingPath);
  // Task steps' records alone, where the job is known finished or, in the default layout, holds
  // no unfinished entry: debris of a task step killed after its job ended, not a lost manifest.
  const mayBeDebris = done !== null || (!held && !unreadable && targetOfDefaultStaging(stagingPath) !== null);
  const found = left.length && mayBeDebris ? await taskDebrisOnly(store, stagingPath, done !== null) : null;
  const debris = found
    ? () => Promise.resolve(found)
    : mayBeDebris && !left.length
      ? () => taskDebrisOnly(store, stagingPath, done !== null)
      : undefined;
  if (done)
    throw new JobGoneError(
      {
        reason: 'job-finished',
        jobId: done.jobId,
        success: done.success,
        committedAt: done.committedAt,
        strayPlan: null,
      },
      done,
      undefined,
      debris,
    );
  // A job holding the table log lost its manifest (and a plan it carried): never "never existed".
  if (held) {
    throw new CorruptManifestError(store.toUri(layout.jobFile), {
      reason: 'job-file-missing',
      evidence: { kind: 'log-entry', jobId: held.jobId, entry: held.number },
    });
  }
  if (unreadable) {
    throw new CorruptManifestError(store.toUri(layout.jobFile), {
      reason: 'job-file-missing',
      evidence: { kind: 'log-unreadable', error: unreadable.message },
    });
  }
  // A job that ended leaves none of its files: these are a job whose manifest went
  // (protocol.md §5.16: a --staging-dir of one's own, where no log is found from the handle).
  if (left.length && !found) {
    throw new CorruptManifestError(store.toUri(layout.jobFile), {
      reason: 'job-file-missing',
      evidence: { kind: 'files', files: left, trash: left.includes(TRASH_DIR) ? TRASH_DIR : null },
    });
  }
  throw new JobGoneError({ reason: 'no-job', stagingDir: store.toUri(stagingPath) }, null, undefined, debris);
}

export function requireState(open: OpenJob, allowed: readonly JobState[], doing: string): void {
  if (!allowed.includes(open.state)) {
    // A job that is committed or aborted and still has a staging dir is in its clean-up, or was stopped there.
    // Committing: its commit-job (or recover) finishes it, and a retry then finds it committed.
    const detail = { reason: 'wrong-state', doing, jobId: open.job.jobId, state: open.state } as const;
    throw open.state === 'committing' ? new ConflictError(detail) : new BlockedError(detail);
  }
}
