// What a failed API call throws, and the JSON document the CLI prints for it: both carry the
// exit code of protocol.md §8, one kind per error family and the reason with its fields.

import {
  asStageCommitError,
  type CommitDeniedError,
  type ConflictError,
  type CorruptManifestError,
  type ErrorContext,
  type ErrorKind,
  type IncompleteError,
  type InternalError,
  StageCommitError,
  type StoreError,
  type UsageError,
} from '../errors.js';

/**
 * The family of an error: its class directly below StageCommitError, or 'InternalError' for
 * anything else (a bug: exit 1).
 */
export function errorKind(e: unknown): ErrorKind {
  return asStageCommitError(e).kind;
}

export function errorExitCode(e: unknown): number {
  return asStageCommitError(e).exitCode;
}

/** The error classes by kind: what `error.detail` holds for each. */
interface ErrorsByKind {
  UsageError: UsageError;
  CommitDeniedError: CommitDeniedError;
  ConflictError: ConflictError;
  IncompleteError: IncompleteError;
  CorruptManifestError: CorruptManifestError;
  StoreError: StoreError;
  InternalError: InternalError;
}

/** The error part of the document: one member per kind, so `kind` narrows `reason` and `detail`. */
export type ErrorDocError = {
  [K in ErrorKind]: {
    readonly kind: K;
    readonly reason: ErrorsByKind[K]['detail']['reason'];
    readonly message: string;
    readonly exitCode: number;
    /** The same step, run again later unchanged, may pass (exit 4, 130, 143). */
    readonly retryable: boolean;
    /** The reason and its fields. */
    readonly detail: ErrorsByKind[K]['detail'];
    /** What the step added about the job (the commit point, the table log), when it added anything. */
    readonly context?: ErrorContext;
  };
}[ErrorKind];

export interface ErrorDoc {
  readonly ok: false;
  readonly error: ErrorDocError;
}

/** The one JSON document for a failure (--json): the same fields as the error the library throws. */
export function errorDoc(e: unknown): ErrorDoc {
  const err = asStageCommitError(e);
  const error = {
    kind: err.kind,
    reason: err.reason,
    message: err.message,
    exitCode: err.exitCode,
    retryable: err.retryable,
    detail: err.detail,
    ...(err.context === null ? {} : { context: err.context }),
  };
  return { ok: false, error: error as ErrorDocError };
}

export { StageCommitError };
