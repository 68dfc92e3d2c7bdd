// What a step adds to an error it lets through, where the error alone says too little about the
// job (a store error at the commit point reads as "nothing changed"): one reason each, worded once.

import { recoverAdvice } from './advice.js';

export type ErrorContext =
  /** The create at the commit point failed: whether it landed, the next lease holder reads. */
  | {
      readonly reason: 'commit-point-unknown';
      readonly jobId: string;
      readonly handle: string;
      /** What, once written, is the commit point. */
      readonly made: 'plan was created' | 'table-log entry was made';
    }
  /** A failure after the commit point: the job is committing and recover finishes it. */
  | { readonly reason: 'past-commit-point'; readonly jobId: string; readonly handle: string }
  /** A damaged table-log file stops every commit to the table. */
  | { readonly reason: 'table-log-damaged'; readonly target: string; readonly dir: string }
  /** The record of a replay's progress cannot be read: which phases are done is unknown. */
  | { readonly reason: 'progress-unknown'; readonly phases: number };

/** The words the context adds after the error's own message. */
export function contextWords(c: ErrorContext): string {
  switch (c.reason) {
    case 'commit-point-unknown':
      return `; the target is unchanged, but whether job ${c.jobId} passed its commit point is not known: ${recoverAdvice({ handle: c.handle })} once the store answers (it finishes the job if its ${c.made}, else removes the plan and leaves the job staged)`;
    case 'past-commit-point':
      return `; job ${c.jobId} is past its commit point: ${recoverAdvice({ handle: c.handle, why: 'to finish it' })}`;
    case 'table-log-damaged':
      // A number given up must never be taken again (a job staged after it compares from it): only
      // a log that no job holds a position in may start over.
      return `; the table log decides which commits conflict, so no commit to this table can pass it while it is damaged: restore the file (a job past its commit point needs it to finish); if no job of the table is committing ('stagecommit jobs ${c.target}' lists those in the default place; jobs staged with --staging-dir elsewhere count too), abort every one, delete the log dir ${c.dir} and stage them again`;
    case 'progress-unknown':
      return `: which of the plan's ${c.phases} phase(s) are done is unknown: nothing was changed; delete this file and run recover again: the plan is then replayed from its first phase, which passes over a move already made (its source gone, its destination there) and stops with exit 1 where it cannot tell`;
  }
}
