// What a failed API call throws, and the JSON document the CLI prints for it: both carry the
// exit code of protocol.md §8 and one kind per error family.

import {
  CommitDeniedError,
  ConflictError,
  CorruptManifestError,
  ExitCode,
  IncompleteError,
  isRetryable,
  StageCommitError,
  StoreError,
  UsageError,
} from '../errors.js';

/** The error families, by the name `kind` gives them (literal: a bundler may rename classes). */
const FAMILIES = [
  ['UsageError', UsageError],
  ['CommitDeniedError', CommitDeniedError],
  ['ConflictError', ConflictError],
  ['IncompleteError', IncompleteError],
  ['CorruptManifestError', CorruptManifestError],
  ['StoreError', StoreError],
] as const;

/**
 * The family of an error: the error class directly below StageCommitError (UsageError,
 * CommitDeniedError, ConflictError, IncompleteError, CorruptManifestError, StoreError), or
 * 'InternalError' for anything else (a bug: exit 1). Named from a table, not the class's name,
 * which the bundle may change ('_CorruptManifestError' where two classes had one name).
 */
export function errorKind(e: unknown): string {
  return FAMILIES.find(([, family]) => e instanceof family)?.[0] ?? 'InternalError';
}

export function errorExitCode(e: unknown): number {
  return e instanceof StageCommitError ? e.exitCode : ExitCode.failed;
}

/** The error as the library throws it: the message of the cause, its exit code and kind. */
export class StagecommitError extends Error {
  readonly exitCode: number;
  readonly kind: string;
  /**
   * Whether the same call, made again later unchanged, may pass (exit 4: a live step holds the job,
   * another job is still committing); false for everything else, exit 6 ("will never pass as it
   * is") included.
   */
  readonly retryable: boolean;
  constructor(cause: unknown) {
    super((cause as Error)?.message ?? String(cause), { cause });
    this.name = 'StagecommitError';
    this.exitCode = errorExitCode(cause);
    this.kind = errorKind(cause);
    this.retryable = isRetryable(this.exitCode);
  }
}

export interface ErrorDoc {
  readonly ok: false;
  readonly error: {
    readonly kind: string;
    readonly message: string;
    readonly exitCode: number;
    readonly retryable: boolean;
  };
}

/** The one JSON document for a failure (--json): the same fields as StagecommitError. */
export function errorDoc(e: unknown): ErrorDoc {
  const err = e instanceof StagecommitError ? e : new StagecommitError(e);
  return {
    ok: false,
    error: { kind: err.kind, message: err.message, exitCode: err.exitCode, retryable: err.retryable },
  };
}
