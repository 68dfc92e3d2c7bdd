// The messages of ConflictError (exit 4) and BlockedError (exit 6), one per reason, made from its fields.

import { recoverAdvice, recoverCommand, takenBackWords, tasksToRunCommand, type TakenBack } from './advice.js';

/** What a step says about a task's output that stays where it is (v2 published it), or null when none does. */
type Kept = string | null;

/** Why a step refused to go on: the job or the target is not as the step needs it. */
export type ConflictDetail =
  // The job and its lease.
  /** Another live process holds the job's lease. */
  | {
      readonly reason: 'lease-held';
      readonly job: string;
      readonly holder: string;
      /** After how long without a renewal a step takes the lease over (said by a dry run), or null. */
      readonly takeoverSeconds: number | null;
    }
  /** The job's lease file vanished twice while this step took it. */
  | { readonly reason: 'lease-vanished'; readonly job: string }
  /**
   * This process lost the job's lease (it was stopped, or its renewals did not land) and another
   * run finished the job meanwhile: the job is committed, though not by this run.
   */
  | {
      readonly reason: 'lease-lost-job-finished';
      readonly jobId: string;
      /** Who took the job over, when a renewal saw it; else null. */
      readonly takenBy: string | null;
      readonly success: string;
      readonly committedAt: string;
    }
  /** The job is not in a state the step works on (`doing`: what the step was to do). */
  | { readonly reason: 'wrong-state'; readonly doing: string; readonly jobId: string; readonly state: string }
  /** commit-job of an aborted job (an adopted one gives its leftover to adopt again). */
  | { readonly reason: 'job-aborted'; readonly jobId: string; readonly leftover: string | null }
  /** A file of the job's was made for an earlier job of the same staging dir. */
  | {
      readonly reason: 'earlier-job-file';
      readonly what: string;
      readonly file: string;
      readonly jobId: string;
      readonly madeAt: string;
      readonly stagedAt: string;
      readonly advice: string;
    }
  /** A commit plan of an earlier attempt appeared while this one was made. */
  /** A half-made adoption: commit-job refuses it. */
  | { readonly reason: 'half-made-adoption'; readonly jobId: string; readonly what: string; readonly advice: string }
  // The table log.
  /** A table-log entry listed a moment before could not be read. */
  | { readonly reason: 'log-entry-vanished'; readonly entry: string }
  /** Another job holds a unit this job writes: running, stopped past its commit point, or before it. */
  | {
      readonly reason: 'unit-held';
      readonly jobId: string;
      readonly holder: string;
      readonly unit: string;
      readonly handle: string;
      readonly holderState: 'live' | 'stopped';
    }
  /** The table log is not the one the job was staged against (`logIdGone`: its id file went). */
  | {
      readonly reason: 'log-replaced';
      readonly jobId: string;
      readonly log: string;
      readonly logIdGone: boolean;
      readonly advice: string;
    }
  /** Entries made since the job was staged are missing from the table log. */
  | { readonly reason: 'log-entries-missing'; readonly jobId: string; readonly log: string; readonly advice: string }
  /** Another job replaced (or wrote into) a unit of this job's after it was staged. */
  | {
      readonly reason: 'partition-replaced';
      readonly jobId: string;
      readonly other: string;
      /** The other job's handle when it was given the same --job-id, else null. */
      readonly sameIdHandle: string | null;
      readonly did: 'replaced' | 'wrote into';
      readonly unit: string;
      readonly at: string;
      readonly advice: string;
    }
  // The target.
  /** --mode create, and the target appeared after the job was staged. */
  | { readonly reason: 'target-appeared'; readonly target: string; readonly jobId: string }
  /** `_SUCCESS` in the target is not a file. */
  | { readonly reason: 'success-in-the-way'; readonly path: string }
  /** An append would overwrite files not shown to hold the same bytes. */
  | { readonly reason: 'append-clash'; readonly count: number; readonly first: string; readonly v2: boolean }
  /** A file of the output where the target has a directory, or the other way round, or something else. */
  | {
      readonly reason: 'kind-mismatch';
      readonly path: string;
      readonly output: 'file' | 'dir';
      readonly target: 'file' | 'dir' | 'other';
    }
  /** Two tasks' files name one path, or a file and a path inside it; `when` says whose way out is given. */
  | {
      readonly reason: 'path-clash';
      readonly clash: 'same-path' | 'file-and-dir';
      readonly what: string;
      readonly rule: string;
      readonly when: 'task' | 'job' | 'v2-published';
      /** The way out a job gives ('job'), else null. */
      readonly advice: string | null;
    }
  /** A v2 task's publication met a path someone else published (`published`: part of the task may be). */
  | { readonly reason: 'v2-publish-clash'; readonly clash: string; readonly published: boolean }
  // Committed output.
  /** A committed task's output is not as its claim says. */
  | {
      readonly reason: 'output-damaged';
      readonly task: string;
      readonly taskAttempt: string;
      readonly dir: string;
      readonly problem: string;
      readonly advice: string;
    }
  /** A pending upload a claim lists is gone. */
  | { readonly reason: 'upload-gone'; readonly path: string; readonly advice: string }
  /** The attempt's output vanished before it was committed. */
  | { readonly reason: 'output-vanished'; readonly attempt: string; readonly dir: string }
  /** One attempt staged a path twice, as a small file and as a large one. */
  | { readonly reason: 'staged-twice'; readonly taskAttempt: string; readonly path: string }
  // Tasks and attempts.
  /** A task's commit-task has decided and not finished. */
  | {
      readonly reason: 'task-still-committing';
      readonly task: string;
      readonly taskAttempt: string;
      readonly host: string;
      readonly pid: number;
    }
  /** A v2 attempt is being published by a live process on this host. */
  | {
      readonly reason: 'attempt-being-committed';
      readonly step: 'commit-task' | 'recover';
      readonly taskAttempt: string;
      readonly host: string;
      readonly pid: number;
    }
  /** Another run of the attempt moved its files and has not finished. */
  | { readonly reason: 'other-run-moved-files'; readonly taskAttempt: string }
  /** The task's claim vanished while this attempt claimed it. */
  | { readonly reason: 'claim-vanished'; readonly task: string; readonly taskAttempt: string }
  /** Files staged into an attempt that has committed (or is committing). */
  | { readonly reason: 'attempt-already-committed'; readonly taskAttempt: string }
  /** A stage with the --job-id of a job that was aborted and whose clean-up was stopped. */
  | { readonly reason: 'rerun-of-aborted'; readonly jobId: string; readonly handle: string }
  /** A job an age-judged abort (clean-orphans) found resumed since the age it judged: left alone. */
  | { readonly reason: 'resumed-meanwhile'; readonly jobId: string; readonly at: string }
  /** A local file changed while it was staged. */
  | { readonly reason: 'file-changed'; readonly path: string; readonly others: number }
  /** abort of a committed job. */
  /** abort of an attempt whose commit-task decided to commit and died. */
  | { readonly reason: 'abort-undecided'; readonly taskAttempt: string; readonly by: string }
  /** abort of an attempt that is committed or committing: its files belong to the job. */
  | {
      readonly reason: 'attempt-belongs-to-job';
      readonly taskAttempt: string;
      readonly state: 'committed' | 'committing';
    }
  /** abort of an attempt that recover carried into a new app attempt meanwhile. */
  | {
      readonly reason: 'attempt-carried';
      readonly taskAttempt: string;
      readonly appAttempt: number;
      readonly jobId: string;
    }
  // A job that moved on while a task committed (`kept`: what of the task's output stays).
  /** A live step may have read the committed tasks before this one. */
  | { readonly reason: 'holder-may-have-read'; readonly holder: string; readonly jobId: string; readonly task: string }
  /** The job was aborted while the task (or attempt) committed. */
  | {
      readonly reason: 'aborted-while-committing';
      readonly jobId: string;
      readonly task: string | null;
      readonly taskAttempt: string | null;
      readonly kept: Kept;
    }
  /** recover started a new app attempt while the task (or attempt) committed. */
  | {
      readonly reason: 'recover-restarted';
      readonly jobId: string;
      readonly appAttempt: number;
      readonly was: number;
      readonly task: string | null;
      readonly taskAttempt: string | null;
      readonly kept: Kept;
    }
  /** The job finished (or was in `state`) while the task committed, its output read without it. */
  | {
      readonly reason: 'finished-while-committing';
      readonly jobId: string;
      readonly state: string | null;
      readonly task: string;
      readonly kept: Kept;
    }
  /** The job finished while the task committed, and a new job is staged in its dir. */
  | {
      readonly reason: 'new-job-staged';
      readonly jobId: string;
      readonly task: string;
      readonly newJobId: string;
      readonly staging: string;
      readonly kept: Kept;
    }
  /** commit-task in a job that was aborted (`stays`: what of the task's files stays, or what became of them). */
  | { readonly reason: 'task-of-aborted-job'; readonly task: string; readonly jobId: string; readonly stays: string }
  // A stage run that the job or the attempt overtook (`taken`: what the run made was taken back).
  /** The job was committed, aborted or finished while this stage ran (`taken`: what became of its files). */
  | {
      readonly reason: 'stage-overtaken';
      readonly jobId: string;
      /** 'finished' (with the new job staged in its dir, if any), or the state the job is in. */
      readonly state: string;
      readonly newJob: { readonly jobId: string; readonly staging: string } | null;
      readonly taken: TakenBack;
    }
  /** recover started a new app attempt while this stage ran (`taken`: what became of its files). */
  | {
      readonly reason: 'stage-recover-restarted';
      readonly jobId: string;
      readonly appAttempt: number;
      readonly was: number;
      readonly taken: TakenBack;
    }
  /** The attempt was committed while a --print-path stage ran. */
  | { readonly reason: 'committed-during-stage'; readonly taskAttempt: string }
  /** The attempt was committed while the stage ran; its claim is still being made. */
  | { readonly reason: 'commit-unfinished-during-stage'; readonly taskAttempt: string }
  /** The attempt was committed while the stage ran, without some of its files (taken back). */
  | {
      readonly reason: 'committed-without-files';
      readonly taskAttempt: string;
      readonly first: string;
      readonly others: number;
    }
  /** Another attempt of the task committed while the stage ran. */
  | {
      readonly reason: 'task-won-during-stage';
      readonly task: string;
      readonly winner: string;
      readonly taken: TakenBack;
    }
  // adopt and giving a leftover back.
  /** The leftover was taken while it was adopted (`jobs`: where 'stagecommit jobs' shows who took it). */
  | { readonly reason: 'leftover-taken'; readonly leftover: string; readonly jobs: string | null }
  /** The leftover changed more recently than --older-than allows (`ageSeconds` null: the store cannot tell). */
  | { readonly reason: 'leftover-recent'; readonly leftover: string; readonly ageSeconds: number | null }
  /** An adopted leftover cannot go back: where it was is taken again. */
  | { readonly reason: 'leftover-place-taken'; readonly from: string; readonly to: string }
  /** An adopted leftover cannot go back: where it was is not recorded. */
  | { readonly reason: 'leftover-place-unknown'; readonly jobId: string; readonly from: string };

export const LEFTOVER_TAKEN =
  'was taken while adopting it (another adopt of it, or its engine, moved it): this adopt made no job and changed nothing';

/** The advice of a v2 job whose append meets a file: it cannot overwrite. */
export const V2_CLASH_ADVICE = 'rename the files and commit the task again (a v2 job cannot overwrite)';

/** An append clash without its way out (a v2 task's publication gives its own). */
export function appendClashWords(d: Of<'append-clash'>): string {
  return `append would overwrite ${d.count} existing file(s) not shown to hold the same bytes (other bytes, or a staged S3 upload of more than one part, which cannot be compared), first '${d.first}'`;
}

function inTarget(kind: 'file' | 'dir' | 'other'): string {
  return kind === 'dir'
    ? 'a directory in the target'
    : kind === 'file'
      ? 'a file in the target'
      : 'neither a file nor a directory in the target (a symbolic link, pipe or device): remove or rename it';
}

function unitHeld(d: Of<'unit-held'>): string {
  const unit = describeUnit(d.unit);
  switch (d.holderState) {
    case 'live':
      return `job ${d.jobId} waited for job ${d.holder}, which is still committing ${unit} (${d.handle}): nothing was changed; run commit-job again when it has finished`;
    case 'stopped':
      return `job ${d.holder} passed its commit point for ${unit} but did not finish (killed?): nothing was changed; finish it with ${recoverCommand(d.handle)}, then run commit-job again`;
  }
}

/** A unit of the table as messages name it: '' is the whole table. */
export function describeUnit(u: string): string {
  return u === '' ? 'the whole table' : `'${u}'`;
}

function pathClash(d: Of<'path-clash'>): string {
  switch (d.when) {
    case 'task':
      return `${d.what}: ${d.rule}; rename one and commit that task again`;
    case 'job':
      return `${d.what}: ${d.rule}; the tasks are committed, and a commit is final: nothing was changed; ${d.advice}`;
    case 'v2-published':
      // Of one path written twice, the target holds one: what follows says so.
      return `${d.clash === 'same-path' ? d.what : `${d.what}: ${d.rule}`}; v2 published both at commit-task, and one path holds one of them (the last to land; on S3 a key and keys below it can stand side by side): the job is not committed; abort it (what its tasks published stays in the target) and run it again with distinct file names`;
  }
}

function wrongState(d: Of<'wrong-state'>): string {
  // Read without the lease: the commit-job may be alive and finishing it, or killed.
  const hint =
    d.state === 'committing'
      ? `it is past its commit point: its commit-job finishes it, or, if that was killed, ${recoverAdvice({ why: 'to finish it' })}`
      : `only its clean-up is left: the step that ended it finishes it, or, if that was killed, ${recoverAdvice({ why: 'to remove its staging dir' })}`;
  return `cannot ${d.doing}: job ${d.jobId} is ${d.state}; ${hint}`;
}

function stageOvertaken(d: Of<'stage-overtaken'>): string {
  const taken = takenBackWords(d.taken);
  if (d.state !== 'finished')
    return `job ${d.jobId} was ${d.state} while this stage ran: its output cannot have these files, and ${taken}; stage them into a new job`;
  const newJob =
    d.newJob === null
      ? ''
      : `, and ${d.newJob.jobId === d.jobId ? 'a new job of that id' : `job ${d.newJob.jobId}`} is now staged in ${d.newJob.staging}`;
  return `job ${d.jobId} finished while this stage ran${newJob}: its output cannot have these files, and ${taken}; stage them into a new job`;
}

type Of<R extends ConflictDetail['reason']> = Extract<ConflictDetail, { reason: R }>;

/** One message per reason: a reason without one fails to compile. */
const MESSAGES: { readonly [R in ConflictDetail['reason']]: (d: Of<R>) => string } = {
  'lease-held': (d) =>
    `job ${d.job} is locked: ${d.holder}; wait for it to finish${d.takeoverSeconds === null ? '' : ` (the step itself takes the lease over if it sees no renewal of it for ${d.takeoverSeconds} s)`}`,
  'lease-lost-job-finished': (d) =>
    `this process lost job ${d.jobId}'s lease (it was stopped, or its renewals did not land, for the lease's TTL)${d.takenBy === null ? '' : ` and ${d.takenBy}`}; another run finished the job meanwhile: it is committed (${d.success}, ${d.committedAt}), not by this run; nothing more to do ('stagecommit commit-job' says already-committed)`,
  'lease-vanished': (d) =>
    `job ${d.job} is changing under this step (its lease file vanished twice): another step is removing it; run 'stagecommit status' and try again`,
  'wrong-state': wrongState,
  'job-aborted': (d) =>
    `cannot commit: job ${d.jobId} was aborted; ${d.leftover !== null ? `adopt ${d.leftover} again` : 'stage a new job'}`,
  'earlier-job-file': (d) =>
    `${d.what} (${d.file}) was made for an earlier job ${d.jobId}, staged ${d.madeAt}, by a run that went on after that job ended; this job was staged ${d.stagedAt}: nothing was changed; ${d.advice}`,
  'half-made-adoption': (d) => `job ${d.jobId} is a half-made adoption (${d.what}): nothing was changed; ${d.advice}`,
  'log-entry-vanished': (d) => `the table log entry ${d.entry} vanished while it was read: run the step again`,
  'unit-held': unitHeld,
  'log-replaced': (d) =>
    `job ${d.jobId} cannot check its commit against the table log ${d.log}: it is not the log the job was staged against (${d.logIdGone ? 'the log has no id now: its log-id.yaml, or the whole log dir, was deleted' : 'the log dir was deleted and made again since'}), so commits made meanwhile are unknown: nothing was changed; ${d.advice}`,
  'log-entries-missing': (d) =>
    `job ${d.jobId} cannot check its commit against the table log ${d.log}: entries made since it was staged are missing (pruned after a week, or removed): nothing was changed; ${d.advice}`,
  'partition-replaced': (d) =>
    `job ${d.jobId} conflicts with job ${d.other}${d.sameIdHandle !== null ? ` (another job given the same --job-id, staged at ${d.sameIdHandle})` : ''}, which ${d.did} ${describeUnit(d.unit)} at ${d.at} after this job was staged: nothing was changed; ${d.advice}`,
  'target-appeared': (d) =>
    `the target ${d.target} appeared after job ${d.jobId} was staged, and --mode create never replaces anything: nothing was changed; abort this job, or stage it again with --mode append or overwrite`,
  'success-in-the-way': (d) =>
    `${d.path} is not a file, and the commit must write its marker there: nothing was changed; move it away and run commit-job again`,
  'append-clash': (d) =>
    `${appendClashWords(d)}: ${d.v2 ? V2_CLASH_ADVICE : 'use --mode overwrite or rename the files'}`,
  'kind-mismatch': (d) =>
    `'${d.path}' is a ${d.output === 'file' ? 'file' : 'directory'} in the job's output but ${inTarget(d.target)}`,
  'path-clash': pathClash,
  'v2-publish-clash': (d) =>
    d.published
      ? `${d.clash}; the task stays claimed, as part of it may be published: if another task of this job wrote that path, the two clash (abort the job); else move the file in the target aside and ${recoverAdvice({ why: 'to finish the task, or abort the job' })}`
      : `${d.clash}; nothing of this task was published: rename the files and commit the task again`,
  'output-damaged': (d) =>
    `the committed output of task ${d.task} (${d.taskAttempt}) in ${d.dir} ${d.problem}: nothing was changed; ${d.advice}`,
  'upload-gone': (d) =>
    `the pending upload of '${d.path}' is gone (aborted by a lifecycle rule or another tool?): nothing was changed; ${d.advice}`,
  'output-vanished': (d) =>
    `the output of ${d.attempt} vanished from ${d.dir} before it was committed: run the task again as a new attempt`,
  'staged-twice': (d) =>
    `${d.taskAttempt} staged '${d.path}' twice, once as a small file and once as a large one: nothing was committed; abort this attempt and stage the task into a new --attempt`,
  'task-still-committing': (d) =>
    `task ${d.task} is still committing (${d.taskAttempt} on ${d.host}, pid ${d.pid}): wait for its commit-task, or ${recoverAdvice({ why: 'if it was killed' })}`,
  'attempt-being-committed': (d) =>
    d.step === 'commit-task'
      ? `${d.taskAttempt} is being committed by pid ${d.pid} on ${d.host}: wait for it (if it was killed, run commit-task again)`
      : `${d.taskAttempt} is being committed by pid ${d.pid} on ${d.host} (v2 publishes at commit-task): nothing was changed; run recover again once it has ended`,
  'other-run-moved-files': (d) =>
    `another run of ${d.taskAttempt} moved its files while this one committed, and has not finished: run commit-task again once it has ended`,
  'claim-vanished': (d) =>
    `the claim of task ${d.task} vanished while ${d.taskAttempt} claimed it (recover ran meanwhile?): run commit-task again`,
  'attempt-already-committed': (d) =>
    `task attempt ${d.taskAttempt} has already committed (or is committing): files staged now would never appear; a rerun skips it (${tasksToRunCommand()} lists the tasks still to run); else stage without --attempt, which picks the task's next attempt`,
  'resumed-meanwhile': (d) =>
    `job ${d.jobId} was resumed by a rerun (${d.at}) since it was judged old: it is in use, nothing was changed`,
  'rerun-of-aborted': (d) =>
    `job id '${d.jobId}' names a job that was aborted and whose clean-up was stopped (${d.handle}): ${recoverAdvice({ handle: d.handle, why: 'to finish it' })}, then stage the job again`,
  'file-changed': (d) =>
    `${d.path}${d.others > 0 ? ` (and ${d.others} more)` : ''} changed while it was staged: the staged copy may hold old and new bytes mixed; stage it again into the same attempt once it is written whole (the last staging of a name wins)`,
  'abort-undecided': (d) =>
    `cannot abort ${d.taskAttempt} yet: its commit-task (${d.by}) decided to commit it and died before it finished: run commit-task for it again (it finishes that commit), or ${recoverAdvice({ why: '(it finishes or undoes it)' })}, then abort again if the attempt is still there`,
  // Still committing after the wait (its commit-task on another host, alive or killed): recover
  // may yet undo that commit, so this never says the files belong to the job (protocol.md §5.19).
  'attempt-belongs-to-job': (d) =>
    d.state === 'committed'
      ? `cannot abort ${d.taskAttempt}: it is already committed and its files belong to the job; abort the whole job, or commit another attempt`
      : `cannot abort ${d.taskAttempt} yet: its commit-task decided to commit it first and has not finished: once it ends, the attempt is committed; if it was killed, ${recoverAdvice({ why: '(it finishes or undoes that commit)' })}, then abort again if the attempt is still there`,
  'attempt-carried': (d) =>
    `cannot abort ${d.taskAttempt}: recover carried it, committed, into app attempt ${d.appAttempt} of job ${d.jobId} while this abort ran, and its files belong to the job; abort the whole job, or commit another attempt`,
  'holder-may-have-read': (d) =>
    `${d.holder} works on job ${d.jobId} and may have read its committed tasks before task ${d.task}: task ${d.task} is not committed (nothing was published); once it has ended, run commit-task again if 'stagecommit status' shows the job still staged`,
  'aborted-while-committing': (d) =>
    d.taskAttempt !== null
      ? `job ${d.jobId} was aborted while ${d.taskAttempt} committed: ${d.kept ?? 'nothing of it is kept'}`
      : `job ${d.jobId} was aborted while task ${d.task} committed: ${d.kept ?? 'nothing of it was published'}`,
  'recover-restarted': (d) =>
    d.taskAttempt !== null
      ? `recover started app attempt ${d.appAttempt} while ${d.taskAttempt} committed in app attempt ${d.was}, without it: ${d.kept ?? 'nothing of it is kept; run the task again'}`
      : `recover started app attempt ${d.appAttempt} of job ${d.jobId} while task ${d.task} committed in app attempt ${d.was}: ${d.kept ?? 'nothing of it was published; run the task again'}`,
  'finished-while-committing': (d) =>
    `job ${d.jobId} ${d.state !== null ? `was ${d.state}` : 'finished'} while task ${d.task} committed: its commit read the committed tasks before this one, so task ${d.task}'s output is not in it: ${d.kept ?? "nothing of it was published; run the job again, or stage this task's output in a new job"}`,
  'new-job-staged': (d) =>
    `job ${d.jobId} finished while task ${d.task} committed, and ${d.newJobId === d.jobId ? 'a new job of that id' : `job ${d.newJobId}`} is now staged in ${d.staging}: ${d.kept ?? `nothing of task ${d.task} was published; run the job again`}`,
  'task-of-aborted-job': (d) =>
    `cannot commit task ${d.task}: job ${d.jobId} was aborted (only its clean-up is left: the abort finishes it, or, if that was killed, ${recoverCommand()} does): ${d.stays}`,
  'stage-overtaken': stageOvertaken,
  'stage-recover-restarted': (d) =>
    `recover started app attempt ${d.appAttempt} of job ${d.jobId} while this stage ran in app attempt ${d.was}: ${takenBackWords(d.taken)}; run the task again`,
  'committed-during-stage': (d) =>
    `task attempt ${d.taskAttempt} was committed while this stage ran: files written there now would never appear; stage into a new --attempt`,
  'commit-unfinished-during-stage': (d) =>
    `task attempt ${d.taskAttempt} was committed while this stage ran, and its commit is still being made (or its commit-task was killed): it may not have these files, which stay where they are; once it has ended, see 'stagecommit status'`,
  'committed-without-files': (d) =>
    `task attempt ${d.taskAttempt} was committed while this stage ran, without '${d.first}'${d.others > 0 ? ` and ${d.others} more` : ''}: those files were taken back; stage them as another task, or run the job again`,
  'task-won-during-stage': (d) =>
    `task ${d.task} was committed by ${d.winner} while this stage ran: this attempt never commits, and ${takenBackWords(d.taken)}`,
  'leftover-taken': (d) =>
    `${d.leftover} ${LEFTOVER_TAKEN}${d.jobs !== null ? `; 'stagecommit jobs ${d.jobs}' shows the job that took it` : ''}`,
  'leftover-recent': (d) =>
    `${d.leftover} was changed ${d.ageSeconds === null ? 'at a time the store cannot tell' : `${d.ageSeconds}s ago`}, more recently than --older-than allows: its engine may still be writing it; nothing was changed; adopt it once the engine is surely gone (or lower --older-than)`,
  'leftover-place-taken': (d) =>
    `the adopted leftover cannot go back: ${d.to} exists again, so it stays in ${d.from} and nothing is deleted; move one of them aside and run abort again`,
  'leftover-place-unknown': (d) =>
    `job ${d.jobId} was adopted by a stagecommit that did not record where its leftover was, so it stays in ${d.from}: move it back beside the table under its engine name (such as '.spark-staging-<id>' or '_temporary') by hand, then abort again`,
};

export function conflictMessage(d: ConflictDetail): string {
  return (MESSAGES[d.reason] as (d: ConflictDetail) => string)(d);
}
