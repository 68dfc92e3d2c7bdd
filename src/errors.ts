// Typed errors; each carries the exit code of protocol.md §8 so only the entry point maps errors to exits,
// a `kind` (its family) and a `reason` from a closed union with the fields that reason has (`detail`). The
// message is made from the detail by one module per area (src/messages/), never edited after the error is made.

import { conflictMessage, type ConflictDetail } from './messages/conflict.js';
import { deniedMessage, type DeniedDetail, incompleteMessage, type IncompleteDetail } from './messages/denied.js';
import { manifestMessage, problemField, type ManifestDetail, type ManifestProblem } from './messages/manifest.js';
import { storeMessage, type StoreDetail, type StoreErrorReason } from './messages/store.js';
import { usageMessage, type UsageDetail } from './messages/usage.js';
import { internalMessage, type InternalDetail } from './messages/internal.js';
import { contextWords, type ErrorContext } from './messages/context.js';

export type {
  ErrorContext,
  ConflictDetail,
  DeniedDetail,
  IncompleteDetail,
  ManifestDetail,
  ManifestProblem,
  StoreDetail,
  UsageDetail,
  InternalDetail,
};

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

/** The family of an error: its class directly below StageCommitError. */
export type ErrorKind =
  | 'UsageError'
  | 'CommitDeniedError'
  | 'ConflictError'
  | 'IncompleteError'
  | 'CorruptManifestError'
  | 'StoreError'
  | 'InternalError';

/** What every detail has: the reason, and plain JSON values for its fields. */
interface Detail {
  readonly reason: string;
}

export abstract class StageCommitError<D extends Detail = Detail> extends Error {
  abstract readonly kind: ErrorKind;
  readonly exitCode: ExitCode;
  /** Why: the reason and its fields, as `--json` prints them under `error.detail`. */
  readonly detail: D;
  /** What the step that let the error through added about the job (see withContext), or null. */
  readonly context: ErrorContext | null = null;
  constructor(exitCode: ExitCode, detail: D, message: string, options?: ErrorOptions) {
    super(message, options);
    this.exitCode = exitCode;
    this.detail = detail;
    this.name = new.target.name;
  }

  get reason(): D['reason'] {
    return this.detail.reason;
  }

  /**
   * Whether the same call, made again later unchanged, may pass (exit 4: a live step holds the job,
   * another job is still committing); false for everything else, exit 6 ("will never pass as it
   * is") included.
   */
  get retryable(): boolean {
    return isRetryable(this.exitCode);
  }
}

/** Bad usage or bad input: nothing was changed (exit 2). */
export class UsageError extends StageCommitError<UsageDetail> {
  readonly kind = 'UsageError';
  constructor(detail: UsageDetail, options?: ErrorOptions) {
    super(ExitCode.usage, detail, usageMessage(detail), options);
  }
}

/** Another attempt of the task won its commit claim, or this attempt was aborted (exit 3). */
export class CommitDeniedError extends StageCommitError<DeniedDetail> {
  readonly kind = 'CommitDeniedError';
  constructor(detail: DeniedDetail, options?: ErrorOptions) {
    super(ExitCode.denied, detail, deniedMessage(detail), options);
  }
}

/**
 * A conflict that passes on its own: the same step run again later can succeed once another
 * process is done (a lease held by a live step, a job still committing): exit 4, "retry later".
 */
export class ConflictError extends StageCommitError<ConflictDetail> {
  readonly kind = 'ConflictError';
  constructor(detail: ConflictDetail, exitCode: ExitCode = ExitCode.conflict, options?: ErrorOptions) {
    super(exitCode, detail, conflictMessage(detail), options);
  }
}

/**
 * A conflict that will never pass as it is (an append clash, a create target that appeared, two
 * tasks writing one path, a partition replaced by another job): running the same step again
 * cannot help until someone acts as the message says (exit 6). A ConflictError still, for callers
 * that only ask whether it is one.
 */
export class BlockedError extends ConflictError {
  constructor(detail: ConflictDetail, options?: ErrorOptions) {
    super(detail, ExitCode.blocked, options);
  }
}

/** Whether an exit code means the same step, run again later unchanged, may pass (4, 130, 143). */
export function isRetryable(exitCode: number): boolean {
  return exitCode === ExitCode.conflict || exitCode === 130 || exitCode === 143;
}

/** Declared tasks are missing at commit-job (exit 5). */
export class IncompleteError extends StageCommitError<IncompleteDetail> {
  readonly kind = 'IncompleteError';
  constructor(detail: IncompleteDetail, options?: ErrorOptions) {
    super(ExitCode.incomplete, detail, incompleteMessage(detail), options);
  }
}

/** An unreadable or invalid manifest; the message names the file and the field (exit 1). */
export class CorruptManifestError extends StageCommitError<ManifestDetail> {
  readonly kind = 'CorruptManifestError';
  constructor(file: string, problem: ManifestProblem, options?: ErrorOptions) {
    const d: ManifestDetail = { ...problem, file };
    super(ExitCode.failed, d, manifestMessage(d), options);
  }

  /** A field that is missing, of the wrong type or value, or disagrees with where the file is. */
  static badField(file: string, field: string, problem: string): CorruptManifestError {
    return new CorruptManifestError(file, { reason: 'bad-field', field, problem });
  }

  /** The manifest's path or URI. */
  get file(): string {
    return this.detail.file;
  }

  /** The field that is wrong, or null when the document as a whole is. */
  get field(): string | null {
    return problemField(this.detail);
  }
}

export type { StoreErrorReason };

/** A store operation failed; keeps the store's own message and the paths involved (exit 1; 'no-location' exit 2). */
export class StoreError extends StageCommitError<StoreDetail> {
  readonly kind = 'StoreError';
  constructor(reason: StoreErrorReason, op: string, paths: string[], problem: string, options?: ErrorOptions) {
    const d: StoreDetail = { reason, op, paths, problem };
    super(reason === 'no-location' ? ExitCode.usage : ExitCode.failed, d, storeMessage(d), options);
  }

  get op(): string {
    return this.detail.op;
  }

  get paths(): readonly string[] {
    return this.detail.paths;
  }
}

/** A rule the code itself keeps was broken (a planner invariant), or an error of no family: a bug (exit 1). */
export class InternalError extends StageCommitError<InternalDetail> {
  readonly kind = 'InternalError';
  constructor(detail: InternalDetail | string, options?: ErrorOptions) {
    const d: InternalDetail = typeof detail === 'string' ? { reason: 'invariant', rule: detail } : detail;
    super(ExitCode.failed, d, internalMessage(d), options);
  }
}

/**
 * The same error with what a step adds about the job, the first as its cause: the message is the
 * error's own with the context's words after it, never edited in place. A context past the commit
 * point is exit 1 whatever the error was (the job's input was taken: not bad input any more).
 */
export function withContext<E extends StageCommitError>(e: E, context: ErrorContext): E {
  const copy = Object.create(Object.getPrototypeOf(e) as object) as E;
  Object.defineProperties(copy, Object.getOwnPropertyDescriptors(e));
  const own = (value: unknown) => ({ value, writable: false, enumerable: false, configurable: true });
  Object.defineProperties(copy, {
    message: own(e.message + contextWords(context)),
    context: own(context),
    cause: own(e),
    ...(context.reason === 'past-commit-point' ? { exitCode: own(ExitCode.failed) } : {}),
  });
  copy.stack = `${copy.name}: ${copy.message}\n${(e.stack ?? '').split('\n').slice(1).join('\n')}`;
  return copy;
}

/**
 * Every error class by kind, as one union: `switch (e.kind)` over it narrows `e` to its class and
 * `e.detail` to that class's reasons, and a kind or reason that does not exist fails to compile.
 */
export type AnyStageCommitError =
  UsageError | CommitDeniedError | ConflictError | IncompleteError | CorruptManifestError | StoreError | InternalError;

/** Every error as it leaves the library: a StageCommitError as is, anything else an InternalError with it as cause. */
export function asStageCommitError(e: unknown): StageCommitError {
  if (e instanceof StageCommitError) return e;
  const message = (e as Error)?.message ?? String(e);
  return new InternalError({ reason: 'unexpected', name: (e as Error)?.name ?? typeof e, message }, { cause: e });
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
