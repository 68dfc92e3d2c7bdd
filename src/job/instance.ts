// A job id may be staged again once its job has ended (after an abort, or in a staging dir of the
// user's own): a run of the earlier job that went on after its end can still write its claim or
// decision there. Those records carry the stagedAtMs of the job they were made for, and a step of
// the new job refuses them (exit 4) instead of taking them for its own.
// Keeps protocol.md §5.14 (a job is its instance).

import { ConflictError } from '../errors.js';

/**
 * Throws when a record made for job `jobId` staged at `made` is read by the job of that id staged
 * at `expected` (each unknown: nothing to compare, a record of an earlier version).
 */
export function checkOfInstance(
  file: string,
  what: string,
  jobId: string,
  made: number | undefined,
  expected: number | undefined,
  advice: string,
): void {
  if (made === undefined || expected === undefined || made === expected) return;
  throw new ConflictError(
    `${what} (${file}) was made for an earlier job ${jobId}, staged ${new Date(made).toISOString()}, by a run that went on after that job ended; this job was staged ${new Date(expected).toISOString()}: nothing was changed; ${advice}`,
  );
}
