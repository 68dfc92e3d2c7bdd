// Typed errors; each carries the exit code of protocol.md §8 so only the entry point maps errors to exits.

export const ExitCode = {
  ok: 0,
  failed: 1,
  usage: 2,
  denied: 3,
  conflict: 4,
  incomplete: 5,
  blocked: 6,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export class StageCommitError extends Error {
  readonly exitCode: ExitCode;
  constructor(exitCode: ExitCode, message: string) {
    super(message);
    this.exitCode = exitCode;
    this.name = new.target.name;
  }
}

/** Bad usage or bad input: nothing was changed (exit 2). */
export class UsageError extends StageCommitError {
  constructor(message: string) {
    super(ExitCode.usage, message);
  }
}

/** Another attempt of the task won its commit claim, or this attempt was aborted (exit 3). */
export class CommitDeniedError extends StageCommitError {
  constructor(message: string) {
    super(ExitCode.denied, message);
  }
}

/**
 * A conflict that passes on its own: the same step run again later can succeed once another
 * process is done (a lease held by a live step, a job still committing): exit 4, "retry later".
 */
export class ConflictError extends StageCommitError {
  constructor(message: string, exitCode: ExitCode = ExitCode.conflict) {
    super(exitCode, message);
  }
}

/**
 * A conflict that will never pass as it is (an append clash, a create target that appeared, two
 * tasks writing one path, a partition replaced by another job): running the same step again
 * cannot help until someone acts as the message says (exit 6). A ConflictError still, for callers
 * that only ask whether it is one.
 */
export class BlockedError extends ConflictError {
  constructor(message: string) {
    super(message, ExitCode.blocked);
  }
}

/** Whether an exit code means the same step, run again later unchanged, may pass (4, 130, 143). */
export function isRetryable(exitCode: number): boolean {
  return exitCode === ExitCode.conflict || exitCode === 130 || exitCode === 143;
}

/** Declared tasks are missing at commit-job (exit 5). */
export class IncompleteError extends StageCommitError {
  constructor(message: string) {
    super(ExitCode.incomplete, message);
  }
}

/** An unreadable or invalid manifest; the message names the file and the field (exit 1). */
export class CorruptManifestError extends StageCommitError {
  constructor(
    readonly file: string,
    readonly field: string,
    readonly problem: string,
    whole = false,
  ) {
    super(ExitCode.failed, `${file}: ${whole ? '' : `field '${field}' `}${problem}`);
  }

  /** A problem with the document as a whole (cut short, digest mismatch). */
  static document(file: string, problem: string): CorruptManifestError {
    return new CorruptManifestError(file, '', problem, true);
  }
}

/**
 * What went wrong in a store: 'not-found' and 'exists' as the Store contract says; 'refused'
 * (permission, a capability that does not hold); 'io' (anything else); 'no-location' (the URI names
 * a place this store does not have, such as a missing bucket: bad input, exit 2).
 */
export type StoreErrorKind = 'not-found' | 'exists' | 'refused' | 'io' | 'no-location';

/** A store operation failed; keeps the store's own message and the paths involved (exit 1; 'no-location' exit 2). */
export class StoreError extends StageCommitError {
  readonly kind: StoreErrorKind;
  readonly op: string;
  readonly paths: string[];
  constructor(kind: StoreErrorKind, op: string, paths: string[], detail: string) {
    super(
      kind === 'no-location' ? ExitCode.usage : ExitCode.failed,
      paths.length ? `${op} ${paths.join(' -> ')}: ${detail}` : detail,
    );
    this.kind = kind;
    this.op = op;
    this.paths = paths;
  }
}

/** A rule the code itself keeps was broken (a planner invariant): a bug, not bad input (exit 1). */
export class InternalError extends StageCommitError {
  constructor(message: string) {
    super(ExitCode.failed, message);
  }
}

/**
 * Thrown by the fault-injection store (tests). Steps let it through like any failure; clean-orphans
 * records it as that leftover's reason and goes on, as it does with every error.
 */
export class InjectedFault extends Error {
  constructor(
    readonly point: number,
    readonly op: string,
    readonly path: string,
  ) {
    super(`injected fault at mutation ${point} (${op} ${path})`);
  }
}
