// The library's error classes as a user's TypeScript sees them: `instanceof` and `switch` over
// kind and reason are checked by tsc (this file compiling is half the test), and every class
// thrown carries the kind, reason and fields its type says.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as sc from '../src/index.js';
import type { AnyStageCommitError, ErrorDoc } from '../src/index.js';

/** What a user's script does with a failure: every kind handled, or tsc says which is not. */
function advice(e: AnyStageCommitError): string {
  switch (e.kind) {
    case 'UsageError':
      return `fix the command (${e.reason})`;
    case 'CommitDeniedError':
      return e.detail.reason === 'other-attempt-won' ? `task ${e.detail.task} won by ${e.detail.winner}` : e.reason;
    case 'ConflictError':
      if (e.detail.reason === 'lease-held') return `wait for ${e.detail.holder}`;
      return e.retryable ? 'retry later' : 'act first';
    case 'IncompleteError':
      return e.detail.reason === 'tasks-missing' ? `commit ${e.detail.missing.join(', ')}` : e.reason;
    case 'CorruptManifestError':
      return `repair ${e.file}${e.field === null ? '' : ` (${e.field})`}`;
    case 'StoreError':
      return `${e.reason} in ${e.op}`;
    case 'InternalError':
      return 'report a bug';
    default:
      return unreachable(e);
  }
}

function unreachable(e: never): never {
  throw new Error(`not a stagecommit error: ${String(e)}`);
}

/** A kind or a reason that does not exist is a compile error, not a branch never taken. */
export function misspelt(e: AnyStageCommitError, doc: ErrorDoc): boolean {
  // @ts-expect-error: there is no kind 'ConflitError'
  const kind = e.kind === 'ConflitError';
  // @ts-expect-error: 'lease-hold' is no ConflictError reason
  const reason = e instanceof sc.ConflictError && e.reason === 'lease-hold';
  // @ts-expect-error: a CorruptManifestError has no reason of a ConflictError
  const docReason = doc.error.kind === 'CorruptManifestError' && doc.error.reason === 'lease-held';
  return kind || reason || docReason;
}

test('each class carries its kind, reason and fields, and a switch over kinds handles it', () => {
  const errors: AnyStageCommitError[] = [
    new sc.UsageError({ reason: 'command-line', problem: "unknown option '--x'" }),
    new sc.CommitDeniedError({
      reason: 'other-attempt-won',
      taskAttempt: 'attempt_j_0_1',
      task: '0',
      winner: 'attempt_j_0_0',
      host: 'h',
      pid: 7,
    }),
    new sc.ConflictError({ reason: 'lease-held', job: 'j', holder: 'h pid 7', takeoverSeconds: null }),
    new sc.BlockedError({ reason: 'target-appeared', target: '/t', jobId: 'j' }),
    new sc.IncompleteError({ reason: 'tasks-missing', missing: ['1'], declared: 3 }),
    sc.CorruptManifestError.badField('/s/_job.yaml', 'tasks', 'is 0: a job declares at least one task, or null'),
    new sc.StoreError('not-found', 'read', ['/a'], 'no such file'),
    new sc.InternalError({ reason: 'invariant', rule: 'the plan has a phase' }),
  ];
  assert.deepEqual(
    errors.map((e) => [e.kind, e.reason, e.exitCode, e.retryable, advice(e)]),
    [
      ['UsageError', 'command-line', 2, false, 'fix the command (command-line)'],
      ['CommitDeniedError', 'other-attempt-won', 3, false, 'task 0 won by attempt_j_0_0'],
      ['ConflictError', 'lease-held', 4, true, 'wait for h pid 7'],
      ['ConflictError', 'target-appeared', 6, false, 'act first'],
      ['IncompleteError', 'tasks-missing', 5, false, 'commit 1'],
      ['CorruptManifestError', 'bad-field', 1, false, 'repair /s/_job.yaml (tasks)'],
      ['StoreError', 'not-found', 1, false, 'not-found in read'],
      ['InternalError', 'invariant', 1, false, 'report a bug'],
    ],
  );
  assert.ok(errors[3] instanceof sc.BlockedError && errors[3] instanceof sc.ConflictError);
  assert.ok(errors.every((e) => e instanceof sc.StageCommitError && e instanceof sc.StagecommitError));
});

test('a misspelt library option is a UsageError naming the option and the closest one', async () => {
  const e = await sc.stage({ target: '/nowhere', partitions: ['dt=1'] } as never).then(
    () => assert.fail('accepted'),
    (err: unknown) => err,
  );
  assert.ok(e instanceof sc.UsageError);
  assert.deepEqual(
    { ...e.detail, known: undefined },
    {
      reason: 'option-unknown',
      op: 'stage',
      option: 'partitions',
      near: 'partition',
      known: undefined,
    },
  );
  assert.equal(e.message, "stage: 'partitions' is not an option (did you mean 'partition'?)");
});
