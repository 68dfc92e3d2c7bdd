// The messages of CorruptManifestError (exit 1): the file, the field when it is one field, and
// what is wrong, one reason each (a file of the job's own: _job.yaml, a claim, a plan, a table-log entry…).

import { recoverCommand } from './advice.js';

/** What is wrong with a manifest as a whole, or with one of its fields. */
export type ManifestProblem =
  // Its bytes, as the codec reads them.
  /** No bytes at all: cut short before anything was written. */
  | { readonly reason: 'empty' }
  /** No 'end:' check line (`newline`: it ends with one, else it was cut inside a line). */
  | { readonly reason: 'no-end-line'; readonly newline: boolean }
  /** Its 'end:' check line cannot be read. */
  | { readonly reason: 'bad-end-line' }
  /** It does not match the sha256 of its end line: edited or damaged. */
  | { readonly reason: 'digest-mismatch' }
  /** It has another number of lines than its end line says. */
  | { readonly reason: 'line-count'; readonly lines: number; readonly says: string }
  /** It is not in the line format stagecommit writes. */
  | { readonly reason: 'not-line-format' }
  /** Its end line's 'lists' count cannot be read. */
  | { readonly reason: 'bad-list-counts' }
  /** A hand-written (unsigned) file that YAML cannot read (`error`: the parser's first line). */
  | { readonly reason: 'not-yaml'; readonly error: string }
  /** It is not a YAML mapping. */
  | { readonly reason: 'not-a-mapping' }
  /** A list the end line counts is missing, or has another count. */
  | { readonly reason: 'list-missing'; readonly field: string }
  /** A list has another number of entries than its end line says. */
  | { readonly reason: 'list-count'; readonly field: string; readonly entries: number; readonly says: string }
  /** A field that is missing, of the wrong type or value, or disagrees with where the file is (`problem`). */
  | { readonly reason: 'bad-field'; readonly field: string; readonly problem: string }
  // Where it is.
  /** Empty after re-reads: the step creating it was stopped before writing it. */
  | { readonly reason: 'stopped-before-written' }
  /** A directory where stagecommit keeps a file. */
  | { readonly reason: 'directory' }
  /** A file in the claims dir that is not named as a claim. */
  | { readonly reason: 'not-a-claim' }
  /** A lease that cannot be read (`damage`: what is wrong with it) wedges its job until someone looks. */
  | { readonly reason: 'lease-unreadable'; readonly damage: ManifestProblem }
  // The job's manifest and its plan.
  /** `_job.yaml` is gone, but something in or beside the staging dir shows the job may be past its commit point. */
  | { readonly reason: 'job-file-missing'; readonly evidence: MissingJobEvidence }
  /** Past the commit point, and its plan (`_plan/<name>.yaml`, or `_commit.yaml` before plans had names) is gone. */
  | { readonly reason: 'plan-missing'; readonly plan: string }
  /** A roll-forward's plan names a log entry that no longer names it back (gone, void, or another plan). */
  | { readonly reason: 'plan-entry-lost'; readonly entry: number; readonly which: LostEntry }
  /** The log says the plan's entry is finished, but the progress record does not (`done` null: unreadable). */
  | {
      readonly reason: 'progress-disagrees';
      readonly done: number | null;
      readonly phases: number;
      readonly jobId: string;
      readonly entry: number | null;
    };

/** What shows that a job whose `_job.yaml` is gone may be past its commit point. */
export type MissingJobEvidence =
  | { readonly kind: 'plan' }
  | { readonly kind: 'log-entry'; readonly jobId: string; readonly entry: number }
  | { readonly kind: 'log-unreadable'; readonly error: string }
  | { readonly kind: 'files'; readonly files: readonly string[]; readonly trash: string | null };

/** Why a plan's log entry never counted: given up, made before recover reset the job, or another job's. */
export type LostEntry =
  | { readonly kind: 'gone' }
  | { readonly kind: 'void' }
  | { readonly kind: 'other-plan'; readonly jobId: string; readonly handle: string | null };

/** The file, and what is wrong with it. */
export type ManifestDetail = ManifestProblem & { readonly file: string };

const RESTORE_AND_RECOVER = `restore the file, then run ${recoverCommand()}`;

function missingJob(e: MissingJobEvidence): string {
  switch (e.kind) {
    case 'plan':
      return `is missing, but the commit plan beside it shows the job is past its commit point: restore it, then run ${recoverCommand()} (nothing was changed)`;
    case 'log-entry':
      return `is missing, but the table log holds job ${e.jobId}'s unfinished entry ${e.entry} for this staging dir: the job may be past its commit point (its plan went with the file); nothing was changed: ${RESTORE_AND_RECOVER}; if you removed it on purpose, check the target by hand against what the job wrote`;
    case 'log-unreadable':
      return `is missing, and an unfinished entry of the table log cannot be read (${e.error}): it may be this job's, past its commit point; nothing was changed: repair or remove that entry, then run the step again`;
    case 'files':
      return `is missing, but the staging dir still holds a job's files (${e.files.join(', ')}): the job may be past its commit point; nothing was changed: ${RESTORE_AND_RECOVER}; if its job has ended, check the target by hand and delete the directory${e.trash === null ? '' : ` (${e.trash} holds what an overwrite replaced)`}`;
  }
}

function lostEntry(l: LostEntry): string {
  switch (l.kind) {
    case 'gone':
      return 'is gone';
    case 'void':
      return 'is marked void';
    case 'other-plan':
      return `names another plan, of job ${l.jobId}${l.handle === null ? '' : ` staged in ${l.handle}`}`;
  }
}

/** The field a problem is about, or null when it is about the document as a whole. */
export function problemField(p: ManifestProblem): string | null {
  switch (p.reason) {
    case 'list-missing':
    case 'list-count':
    case 'bad-field':
      return p.field;
    case 'plan-entry-lost':
      return 'logEntry';
    case 'lease-unreadable':
      return problemField(p.damage);
    default:
      return null;
  }
}

/** What is wrong, after the file's name (and the field's, when it is one field). */
function problemWords(p: ManifestProblem): string {
  switch (p.reason) {
    case 'empty':
      return 'is empty (cut short before anything was written)';
    case 'no-end-line':
      return p.newline
        ? "has no 'end:' check line at its end: it was cut short or edited by hand"
        : 'does not end with a newline: it was cut short';
    case 'bad-end-line':
      return "has an unreadable 'end:' check line";
    case 'digest-mismatch':
      return 'does not match the sha256 in its end line: it was edited or damaged';
    case 'line-count':
      return `has ${p.lines} lines, its end line says ${p.says}`;
    case 'not-line-format':
      return 'is not in the line format stagecommit writes';
    case 'bad-list-counts':
      return "has an unreadable 'lists' count in its end line";
    case 'not-yaml':
      return `is not valid YAML: ${p.error}`;
    case 'not-a-mapping':
      return 'is not a mapping';
    case 'list-missing':
      return 'is missing: the end line counts it as a list';
    case 'list-count':
      return `has ${p.entries} entries, the end line says ${p.says}`;
    case 'bad-field':
      return p.problem;
    case 'stopped-before-written':
      return 'is empty: the step creating it was stopped before writing it (HDFS shows a file from its create on); if no stagecommit step works on this job, delete the file and run the step again';
    case 'directory':
      return 'is a directory, where stagecommit keeps a file it writes: it was made by hand or by another tool';
    case 'not-a-claim':
      return 'is not a claim file (<task>.yaml): remove it if you put it there';
    case 'lease-unreadable':
      return `${problemWords(p.damage)}; if no stagecommit process works on this job, delete the file and run the step again`;
    case 'job-file-missing':
      return missingJob(p.evidence);
    case 'plan-missing':
      return `says the job is past its commit point, but its plan ${p.plan} is missing: the plan cannot be made again (that could undo newer commits); restore it or repair the target by hand`;
    case 'plan-entry-lost':
      return `names table-log entry ${p.entry}, which ${lostEntry(p.which)}: rolling this plan forward could undo newer commits; restore the log, or check the target by hand (what the plan replaced is under trash/ in the staging dir) and then delete the staging dir`;
    case 'progress-disagrees':
      return `${p.done === null ? 'cannot be read' : `counts ${p.done} of the plan's ${p.phases} phases done`}, and the table log marks job ${p.jobId}'s entry ${p.entry} finished, so the plan is not replayed (later commits may hold its partitions): check the target by hand against the plan (files not published are still in the staging dir), then delete the staging dir`;
  }
}

function withField(p: ManifestProblem): string {
  const field = problemField(p);
  return `${field === null ? '' : `field '${field}' `}${problemWords(p)}`;
}

export function manifestMessage(d: ManifestDetail): string {
  return `${d.file}: ${withField(d)}`;
}
