// Options checking: each operation declares one table of its option names and their types; the
// call is refused (UsageError, exit 2, nothing done) for a name it does not know, a value of the
// wrong type, or a missing required one. The library (src/index.ts) checks before it opens
// anything; the CLI passes the same check with the options it parsed.

import { UsageError } from '../errors.js';
import { closest } from '../util/closest.js';
import type { Session } from './session.js';

/** One option's type: `test` says if a value fits, `what` says what fits ("a string"). */
export interface Check {
  readonly what: string;
  readonly test: (v: unknown) => boolean;
  readonly required?: boolean;
}

/** An operation's options: every key of its options interface, each with its check. */
export type OptionTable<O> = { readonly [K in keyof Required<O>]: Check };

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

export const text: Check = { what: 'a non-empty string', test: (v) => typeof v === 'string' && v !== '' };
export const positiveInt: Check = { what: 'a whole number ≥ 1', test: (v) => isInt(v) && v >= 1 };
export const wholeNumber: Check = { what: 'a whole number (0, 1, …)', test: (v) => isInt(v) && v >= 0 };
export const flag: Check = { what: 'true or false', test: (v) => typeof v === 'boolean' };
export const texts: Check = {
  what: 'a list of strings',
  test: (v) => Array.isArray(v) && v.every((x) => typeof x === 'string' && x !== ''),
};
export const fn: Check = { what: 'a function', test: (v) => typeof v === 'function' };
export const record: Check = {
  what: 'an object',
  test: (v) => v !== null && typeof v === 'object' && !Array.isArray(v),
};
/** A job handle (what stage returned); an empty one is refused by Session.job, naming --job and STAGECOMMIT_JOB. */
export const handle: Check = { what: 'the job handle stage returned', test: (v) => typeof v === 'string' };
/** A task id: a token, or a whole number. */
export const taskId: Check = {
  what: 'a task id (a non-empty string or a whole number)',
  test: (v) => text.test(v) || wholeNumber.test(v),
};

export function oneOf(...values: readonly string[]): Check {
  return {
    what: `one of ${values.map((v) => `'${v}'`).join(', ')}`,
    test: (v) => typeof v === 'string' && values.includes(v),
  };
}

export function either(a: Check, b: Check): Check {
  return { what: `${a.what} or ${b.what}`, test: (v) => a.test(v) || b.test(v) };
}

export function listOf(what: string, item: (v: unknown) => boolean): Check {
  return { what: `a list of ${what}`, test: (v) => Array.isArray(v) && v.every(item) };
}

export function required(c: Check): Check {
  return { ...c, required: true };
}

/** The settings every library call takes besides its own options (LibraryOptions in src/index.ts). */
export const LIBRARY_OPTIONS = {
  config: text,
  env: record,
  cwd: text,
  onProgress: fn,
  allowUnsignedJob: flag,
} as const satisfies Record<string, Check>;

/** A value as a message shows it: short, strings quoted. */
function shown(v: unknown): string {
  if (typeof v === 'string') return `'${v.length > 40 ? v.slice(0, 40) + '…' : v}'`;
  if (typeof v === 'function') return 'a function';
  if (Array.isArray(v))
    return v.length <= 3 && v.every((x) => typeof x !== 'object' || x === null)
      ? `[${v.map(shown).join(', ')}]`
      : `a list of ${v.length}`;
  if (v !== null && typeof v === 'object') return 'an object';
  return String(v);
}

/**
 * Refuses, with a one-line UsageError naming the option, an options object that has a key the
 * table does not know (and the closest known one), a value of the wrong type, or lacks a required
 * one. A key present with the value undefined counts as absent.
 */
export function checkOptions(op: string, table: Readonly<Record<string, Check>>, o: unknown): void {
  if (o === null || typeof o !== 'object' || Array.isArray(o))
    throw new UsageError({ reason: 'options-not-object', op, got: shown(o) });
  const known = Object.keys(table);
  for (const key of Object.keys(o)) {
    if (!Object.hasOwn(table, key)) {
      const near = closest(key, known);
      throw new UsageError({ reason: 'option-unknown', op, option: key, near: near || null, known });
    }
  }
  for (const [key, check] of Object.entries(table)) {
    const v = (o as Record<string, unknown>)[key];
    if (v === undefined) {
      if (check.required) throw new UsageError({ reason: 'option-missing', op, option: key, what: check.what });
    } else if (!check.test(v)) {
      throw new UsageError({ reason: 'option-invalid', op, option: key, what: check.what, got: shown(v) });
    }
  }
}

/** What every successful call returns (and `--json` prints): `ok: true`, then the operation's own fields. */
export type Done<D> = { readonly ok: true } & D;

/** An API operation with its options table: checks its options before it does anything. */
export interface Operation<O, D> {
  (s: Session, o: O): Promise<Done<D>>;
  readonly op: string;
  readonly options: OptionTable<O>;
}

export function operation<O, D>(
  op: string,
  options: OptionTable<O>,
  body: (s: Session, o: O) => Promise<D>,
): Operation<O, D> {
  const run = async (s: Session, o: O): Promise<Done<D>> => {
    checkOptions(op, options, o);
    return { ok: true, ...(await body(s, o)) };
  };
  return Object.assign(run, { op, options });
}
