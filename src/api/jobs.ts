// jobs: the stagecommit jobs of tables (their default staging roots) or under staging roots.

import { UsageError } from '../errors.js';
import { listJobs, type JobsResult } from '../steps/jobs.js';
import { storeKey } from '../store/resolve.js';
import { operation, required, texts, type OptionTable } from './options.js';
import type { Session } from './session.js';

export interface JobsOptions {
  /** Tables (their default staging root is listed) or staging roots, on one store. */
  readonly uris: readonly string[];
}

const JOBS_OPTIONS: OptionTable<JobsOptions> = { uris: required(texts) };

export type JobsDoc = JobsResult;

export const jobs = operation('jobs', JOBS_OPTIONS, async (s: Session, o: JobsOptions): Promise<JobsDoc> => {
  if (o.uris.length === 0) throw new UsageError({ reason: 'no-roots', op: 'jobs' });
  const locs = await Promise.all(o.uris.map((u) => s.location(u)));
  if (new Set(locs.map((l) => storeKey(l.uri))).size > 1)
    throw new UsageError({ reason: 'roots-on-stores', op: 'jobs' });
  return listJobs(s.stepEnv(locs[0]!.store), { paths: locs.map((l) => l.path) });
});
