// What a failed API call throws, and the JSON document the CLI prints for it: both carry the
// exit code of protocol.md §8 and one kind per error family.

import { ExitCode, StageCommitError } from '../errors.js';

/**
 * The family of an error: the error class directly below StageCommitError (UsageError,
 * CommitDeniedError, ConflictError, IncompleteError, CorruptManifestError, StoreError), or
 * 'InternalError' for anything else (a bug: exit 1).
 */
export function errorKind(e: unknown): string {
  if (!(e instanceof StageCommitError)) return 'InternalError';
  let proto: object | null = Object.getPrototypeOf(e);
  while (proto && Object.getPrototypeOf(proto) !== StageCommitError.prototype) proto = Object.getPrototypeOf(proto);
  return (proto?.constructor as { name?: string } | undefined)?.name ?? 'StageCommitError';
}

export function errorExitCode(e: unknown): number {
  return e instanceof StageCommitError ? e.exitCode : ExitCode.failed;
}

/** The error as the library throws it: the message of the cause, its exit code and kind. */
export class StagecommitError extends Error {
  readonly exitCode: number;
  readonly kind: string;
  constructor(cause: unknown) {
    super((cause as Error)?.message ?? String(cause), { cause });
    this.name = 'StagecommitError';
    this.exitCode = errorExitCode(cause);
    this.kind = errorKind(cause);
  }
}

export interface ErrorDoc {
  readonly ok: false;
  readonly error: { readonly kind: string; readonly message: string; readonly exitCode: number };
}

/** The one JSON document for a failure (--json): the same fields as StagecommitError. */
export function errorDoc(e: unknown): ErrorDoc {
  const err = e instanceof StagecommitError ? e : new StagecommitError(e);
  return { ok: false, error: { kind: err.kind, message: err.message, exitCode: err.exitCode } };
}
