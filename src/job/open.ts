// Opening a job by its staging dir: its manifest, and the state it is really in — the one home
// of the commit-point rule (an existing `_commit.yaml` means past the commit point).

import { ConflictError, CorruptManifestError, UsageError } from '../errors.js';
import type { Store } from '../store/types.js';
import { loadJob, type JobManifest, type JobState } from './job.js';
import { findCommitted, planGivenUp, type FinishedJob } from './finished.js';
import { JobLayout } from './layout.js';

export interface OpenJob {
  readonly layout: JobLayout;
  readonly job: JobManifest;
  /** The job's state, counting an existing `_commit.yaml` as 'committing' (the commit point). */
  readonly state: JobState;
}

/** A handle that names no job: finished (cleaned up) or never existed; `committed` when it can tell the job committed. */
export class JobGoneError extends UsageError {
  /** `stray`: what is left of a committed job's staging dir (a plan that landed late), to delete. */
  constructor(message: string, readonly committed: FinishedJob | null = null, readonly stray?: string) {
    super(message);
  }

  /** The warning a step that finds the job committed gives about its stray plan; null when there is none. */
  strayWarning(): string | null {
    return this.committed && this.stray ? `a commit plan of job ${this.committed.jobId} landed after it committed (a write its store held): ${this.stray} is left over; delete it` : null;
  }
}

/** The state a job is in: a staged job whose plan is written is past its commit point. */
export async function stateOnStore(store: Store, layout: JobLayout, job: JobManifest): Promise<JobState> {
  const past = job.state === 'staged' && (await store.stat(layout.commitFile)) !== null;
  return past ? 'committing' : job.state;
}

/** Past the commit point, a job only rolls forward. */
export function isPastCommitPoint(state: JobState): boolean {
  return state === 'committing' || state === 'committed';
}

/** Reads the job; a missing `_job.yaml` is reported with where its `_SUCCESS` is, if we can tell. */
export async function openJob(env: { readonly store: Store; readonly allowUnsignedJob?: boolean }, stagingPath: string): Promise<OpenJob> {
  const { store } = env;
  const layout = new JobLayout(stagingPath);
  // Both reads at once: one round trip, not two.
  const [job, plan] = await Promise.all([loadJob(store, layout, { allowUnsigned: env.allowUnsignedJob }), store.stat(layout.commitFile)]);
  if (job) return { layout, job, state: job.state === 'staged' && plan !== null ? 'committing' : job.state };
  // A plan outlives `_job.yaml` in no clean-up: this job is past its commit point and lost its manifest.
  if (plan) {
    // A plan that landed after its job committed (a write its store held, DESIGN §5.6) made the
    // staging dir again: the job is finished, the plan a leftover.
    const done = await findCommitted(store, stagingPath);
    if (done) {
      throw new JobGoneError(`job ${done.jobId} is finished: it was committed (${done.success}, ${done.committedAt}); a commit plan of it that landed later is left at ${store.toUri(layout.commitFile)}: delete it`, done, store.toUri(layout.commitFile));
    }
    if (await planGivenUp(store, stagingPath, layout.commitFile)) {
      const plan = store.toUri(layout.commitFile);
      throw new JobGoneError(`no job at ${store.toUri(stagingPath)}: it ended (aborted, or reset by recover) before this commit plan of it landed; the plan was never applied: delete ${plan}`, null, plan);
    }
    throw CorruptManifestError.document(store.toUri(layout.jobFile), `is missing, but the commit plan beside it shows the job is past its commit point: restore it, then run 'stagecommit recover' (nothing was changed)`);
  }
  const done = await findCommitted(store, stagingPath);
  if (done) throw new JobGoneError(`job ${done.jobId} is finished: it was committed (${done.success}, ${done.committedAt}); there is nothing more to do`, done);
  throw new JobGoneError(`no job at ${store.toUri(stagingPath)}: it is finished (committed or aborted) or never existed; check the handle that 'stagecommit stage' printed`);
}

export function requireState(open: OpenJob, allowed: readonly JobState[], doing: string): void {
  if (!allowed.includes(open.state)) {
    // Read without the lease: the commit-job may be alive and finishing it, or killed.
    // A job that is committed or aborted and still has a staging dir is in its clean-up, or was stopped there.
    const hint =
      open.state === 'committing'
        ? "it is past its commit point: its commit-job finishes it, or, if that was killed, run 'stagecommit recover' to finish it"
        : "only its clean-up is left: the step that ended it finishes it, or, if that was killed, run 'stagecommit recover' to remove its staging dir";
    throw new ConflictError(`cannot ${doing}: job ${open.job.jobId} is ${open.state}; ${hint}`);
  }
}
