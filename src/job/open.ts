// Opening a job by its staging dir: its manifest, and the state it is really in — the one home
// of the commit-point rule (an existing `_commit.yaml` means past the commit point).

import { posix } from 'node:path';
import { ConflictError, UsageError } from '../errors.js';
import type { Store } from '../store/types.js';
import { loadJob, type JobManifest, type JobState } from './job.js';
import { JobLayout, SUCCESS_FILE, targetOfDefaultStaging } from './layout.js';

export interface OpenJob {
  readonly layout: JobLayout;
  readonly job: JobManifest;
  /** The job's state, counting an existing `_commit.yaml` as 'committing' (the commit point). */
  readonly state: JobState;
}

/** A handle that names no job: finished (cleaned up) or never existed. */
export class JobGoneError extends UsageError {}

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
  const job = await loadJob(store, layout, { allowUnsigned: env.allowUnsignedJob });
  if (job) return { layout, job, state: await stateOnStore(store, layout, job) };
  throw new JobGoneError(await goneMessage(store, stagingPath));
}

async function goneMessage(store: Store, stagingPath: string): Promise<string> {
  const handle = store.toUri(stagingPath);
  const where = targetOfDefaultStaging(stagingPath);
  if (where) {
    const success = posix.join(where.targetPath, SUCCESS_FILE);
    const data = await store.readFile(success).catch(() => null);
    if (data) {
      try {
        const s = JSON.parse(data.toString('utf8')) as { jobId?: string; date?: string };
        if (s.jobId === where.jobId) {
          return `job ${s.jobId} is finished: it was committed (${store.toUri(success)}, ${s.date}); there is nothing more to do`;
        }
      } catch {
        // not ours to judge: fall through
      }
    }
  }
  return `no job at ${handle}: it is finished (committed or aborted) or never existed; check the handle that 'stagecommit stage' printed`;
}

export function requireState(open: OpenJob, allowed: readonly JobState[], doing: string): void {
  if (!allowed.includes(open.state)) {
    const hint = open.state === 'committing' ? "it is past its commit point: run 'stagecommit recover' to finish it" : 'there is nothing more to do';
    throw new ConflictError(`cannot ${doing}: job ${open.job.jobId} is ${open.state}; ${hint}`);
  }
}
