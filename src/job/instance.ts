// A job id may be staged again once its job has ended (after an abort, or in a staging dir of the
// user's own): a run of the earlier job that went on after its end can still write its claim or
// decision there. Those records carry the stagedAtMs of the job they were made for, and a step of
// the new job refuses them (exit 4) instead of taking them for its own.
// Keeps protocol.md §5.14 (a job is its instance).

import { BlockedError } from '../errors.js';

/** A claim or decision as read: its file, what it is, and the stagedAtMs of the job it was made for. */
export interface InstanceRecord {
  readonly file: string;
  readonly what: string;
  readonly stagedAtMs: number | undefined;
}

/**
 * Throws when a record made for the job of its id staged at `record.stagedAtMs` is read by the
 * job of that id staged at `job.stagedAtMs` (each unknown: nothing to compare, a record of an
 * earlier version).
 */
export function checkOfInstance(
  record: InstanceRecord,
  job: { readonly jobId: string; readonly stagedAtMs: number | undefined },
  advice: string,
): void {
  const { file, what, stagedAtMs: made } = record;
  const { jobId, stagedAtMs: expected } = job;
  if (made === undefined || expected === undefined || made === expected) return;
  throw new BlockedError({
    reason: 'earlier-job-file',
    what,
    file,
    jobId,
    madeAt: new Date(made).toISOString(),
    stagedAt: new Date(expected).toISOString(),
    advice,
  });
}
