// Opening a job by its staging dir: its manifest, and the state it is really in — the one home
// of the commit-point rule (protocol.md §4.1): an existing `_commit.yaml` means past the commit
// point once the table-log entry it names (if any) is the job's, above its position and not void.
// commit-job creates the two at once.

import { BlockedError, ConflictError, CorruptManifestError, UsageError } from '../errors.js';
import type { JobGoneDetail } from '../messages/usage.js';
import { decodeManifestLazy } from '../manifest/codec.js';
import type { Store } from '../store/types.js';
import { loadJob, withoutPlan, type JobManifest, type JobState } from './job.js';
import {
  findCommitted,
  noJobEvidence,
  planGivenUp,
  taskDebrisOnly,
  type FinishedJob,
  type TaskDebris,
} from './finished.js';
import { JobLayout, targetOfDefaultStaging, TRASH_DIR } from './layout.js';
import { TableLog } from './table-log.js';

export interface OpenJob {
  readonly layout: JobLayout;
  readonly job: JobManifest;
  /** The job's state, counting a decided `_commit.yaml` as 'committing' (the commit point). */
  readonly state: JobState;
  /**
   * A plan that never became the job's commit point (planVerdict; `job` is then as before it): the step that holds the
   * lease removes it.
   */
  readonly stalePlan?: StalePlan;
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
      ? `a commit plan of job ${this.committed.jobId} landed after it committed (a write its store held): ${this.stray} is left over; delete it`
      : null;
  }
}

/**
 * A plan that never became its job's commit point, and the table-log entry it names. 'superseded': made in an earlier
 * app attempt than the job's (`appAttempt`): recover reset the job before the plan landed.
 */
export interface StalePlan {
  readonly kind: 'proposal' | 'given-up' | 'superseded';
  readonly entry: number;
  /** 'superseded': the app attempt the plan was made in. */
  readonly appAttempt?: number;
  /** The plan as `_job.yaml` carried it (undefined: a `_commit.yaml`). */
  readonly carried?: string;
}

/** Whether `job` carries its plan in `_job.yaml`, written with 'committing' beside the entry it names. */
function carriesPlan(job: JobManifest): job is JobManifest & { inlinePlan: string } {
  return job.state === 'committing' && job.inlinePlan !== undefined;
}

/**
 * What a plan not yet proven past the commit point by `_job.yaml` is (protocol.md §4.1): a staged job's
 * `_commit.yaml`, or the plan `_job.yaml` carries with 'committing'. Either is created at once
 * with the table-log entry it names. 'decided': past the commit point; a 'proposal' whose entry
 * did not land (another job took the number first, or the run was stopped between the two
 * creates); 'given-up' when its entry was given up (by recover or abort) before the plan landed;
 * 'superseded' when it was made in an earlier app attempt than the job's: its writer was stopped
 * with both creates sent, recover took the lease over and reset the job (finding neither yet),
 * and then both landed. The app attempt is the job's epoch: what was decided in an earlier one
 * never counts, whatever lands when.
 * Neither of the last two was ever applied: publishing starts only once both creates are done. A
 * plan or entry that cannot be read is 'decided' here: the step that holds the lease reads it and
 * reports the damage. 'absent': the plan went meanwhile.
 */
export async function planVerdict(
  store: Store,
  layout: JobLayout,
  job: JobManifest,
): Promise<'decided' | 'absent' | StalePlan> {
  const inline = carriesPlan(job);
  try {
    const data = inline ? job.inlinePlan : await store.readFile(layout.commitFile);
    if (data === null) return 'absent';
    // header fields only: its ops are not read
    const plan = decodeManifestLazy(data, store.toUri(inline ? layout.jobFile : layout.commitFile));
    const n = plan.logEntry;
    if (plan.jobId !== job.jobId || typeof n !== 'number') return 'decided';
    const carried = inline ? { carried: job.inlinePlan } : {};
    const own = await new TableLog(store, job.targetPath).readOwn(n, { jobId: job.jobId, staging: layout.root });
    if (!own.own) return { kind: 'proposal', entry: n, ...carried };
    // An entry made before this job's stage is an earlier job's of this id (aborted, its id staged again).
    if (own.givenUp || (job.logPosition !== null && n <= job.logPosition))
      return { kind: 'given-up', entry: n, ...carried };
    const made = plan.appAttempt;
    if (typeof made === 'number' && made < job.appAttempt)
      return { kind: 'superseded', entry: n, appAttempt: made, ...carried };
    return 'decided';
  } catch {
    return 'decided';
  }
}

/**
 * The state a job is in: one whose plan is written (and decided) is past its commit point. `planFound`: a stat of
 * `_commit.yaml` made already.
 */
export async function stateOnStore(
  store: Store,
  layout: JobLayout,
  job: JobManifest,
  planFound?: boolean,
): Promise<JobState> {
  if (!awaitsVerdict(job, planFound ?? (await store.stat(layout.commitFile)) !== null)) return job.state;
  return (await planVerdict(store, layout, job)) === 'decided' ? 'committing' : 'staged';
}

/** Whether the job's state hangs on its plan's entry: a plan it carries, or a staged job's `_commit.yaml`. */
function awaitsVerdict(job: JobManifest, planFound: boolean): boolean {
  return carriesPlan(job) || (job.state === 'staged' && planFound);
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
  const [job, plan] = await Promise.all([
    loadJob(store, layout, { allowUnsigned: env.allowUnsignedJob }),
    store.stat(layout.commitFile),
  ]);
  if (job) {
    if (!awaitsVerdict(job, plan !== null)) return { layout, job, state: job.state };
    const verdict = await planVerdict(store, layout, job);
    if (verdict === 'decided') return { layout, job, state: 'committing' };
    // A plan that never counted: the job is as it was before it (the lease holder removes the plan).
    const before = carriesPlan(job) ? withoutPlan(job) : job;
    return verdict === 'absent'
      ? { layout, job: before, state: 'staged' }
      : { layout, job: before, state: 'staged', stalePlan: verdict };
  }
  // A plan outlives `_job.yaml` in no clean-up: this job is past its commit point and lost its manifest.
  if (plan) {
    // A plan that landed after its job committed (a write its store held, protocol.md §5.15) made the
    // staging dir again: the job is finished, the plan a leftover.
    const done = await findCommitted(store, stagingPath);
    if (done) {
      throw new JobGoneError(
        {
          reason: 'job-finished',
          jobId: done.jobId,
          success: done.success,
          committedAt: done.committedAt,
          strayPlan: store.toUri(layout.commitFile),
        },
        done,
        store.toUri(layout.commitFile),
      );
    }
    if (await planGivenUp(store, stagingPath, layout.commitFile)) {
      const plan = store.toUri(layout.commitFile);
      throw new JobGoneError({ reason: 'job-plan-given-up', stagingDir: store.toUri(stagingPath), plan }, null, plan);
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
