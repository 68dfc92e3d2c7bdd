// Self-checking YAML manifests (protocol.md §5.10). Written in YAML's JSON-compatible style: one
// `key: <JSON>` line per field, one JSON flow mapping per list item, and a last line
// `end: {"lines": N, "lists": {...}, "sha256": "…"}` that counts the lines and every list and
// digests everything before it. A file cut short anywhere (also exactly at a line boundary),
// or edited, fails that check. Files are read line by line without a YAML parser; a
// hand-written file (no end line) is parsed as YAML only where the caller allows it. Writing is
// in encode.ts.

import { createRequire } from 'node:module';
import { CorruptManifestError } from '../errors.js';
import { Content } from './content.js';
import { END, ITEM } from './encode.js';

export { encodeManifest, encodeManifestBytes } from './encode.js';

const FIELD = /^([A-Za-z][A-Za-z0-9]*):(?: (.*))?$/s; // s: a value may hold U+2028/U+2029, which JSON leaves raw

/** The YAML library, loaded only when a document is not in our own line format. */
export function yamlLib(): typeof import('yaml') {
  return createRequire(import.meta.url)('yaml') as typeof import('yaml');
}

export interface DecodeOptions {
  /** Accept a hand-written manifest without the end line (parsed as YAML, fields still checked). */
  readonly allowUnsigned?: boolean;
}

/**
 * A list of a checked manifest, parsed one item at a time as it is read: a claim of a million
 * files is walked through, never held as a million objects (protocol.md §9.2). Holds the file's text.
 */
export class LazyList {
  constructor(
    private readonly text: Content,
    private readonly start: number,
    private readonly end: number,
    readonly length: number,
    private readonly file: string,
  ) {}

  forEach(fn: (item: unknown, i: number) => void): void {
    let n = 0;
    for (let at = this.start; at < this.end; n++) {
      const nl = this.text.newline(at);
      let item: unknown;
      try {
        item = JSON.parse(this.text.slice(at + ITEM.length, nl));
      } catch {
        throw new CorruptManifestError(this.file, { reason: 'not-line-format' });
      }
      fn(item, n);
      at = nl + 1;
    }
  }

  toArray(): unknown[] {
    const out = new Array<unknown>(this.length);
    this.forEach((x, i) => (out[i] = x));
    return out;
  }
}

/**
 * Parses a manifest and checks its end line: the digest, the line count and every list's count.
 * Throws CorruptManifestError naming the file and what is wrong.
 */
export function decodeManifest(text: string | Buffer, file: string, opts: DecodeOptions = {}): Record<string, unknown> {
  const doc = decodeManifestLazy(text, file, opts);
  for (const [k, v] of Object.entries(doc)) if (v instanceof LazyList) doc[k] = v.toArray();
  return doc;
}

/** As decodeManifest, but its lists stay LazyLists (hand-written files: arrays), read by Fields.each. */
export function decodeManifestLazy(
  content: string | Buffer,
  file: string,
  opts: DecodeOptions = {},
): Record<string, unknown> {
  const text = new Content(content);
  if (text.length === 0) throw new CorruptManifestError(file, { reason: 'empty' });
  const cut = text.endsWithNewline() ? text.lastNewline(text.length - 2) + 1 : -1;
  const last = cut >= 0 ? text.slice(cut, text.length - 1) : '';
  if (!last.startsWith(END)) {
    if (opts.allowUnsigned && text.hasNoEndLine()) return decodeUnsigned(text.whole(), file);
    throw new CorruptManifestError(file, { reason: 'no-end-line', newline: text.endsWithNewline() });
  }
  let end: { lines?: unknown; lists?: unknown; sha256?: unknown };
  try {
    end = JSON.parse(last.slice(END.length)) as typeof end;
  } catch {
    throw new CorruptManifestError(file, { reason: 'bad-end-line' });
  }
  if (typeof end.sha256 !== 'string' || end.sha256 !== text.sha256(cut)) {
    throw new CorruptManifestError(file, { reason: 'digest-mismatch' });
  }
  const lines = text.lines(cut);
  if (end.lines !== lines)
    throw new CorruptManifestError(file, { reason: 'line-count', lines, says: String(end.lines) });
  const doc = decodeLines(text, cut, file);
  if (!doc) throw new CorruptManifestError(file, { reason: 'not-line-format' });
  const lists = (end.lists ?? {}) as Record<string, unknown>;
  if (typeof lists !== 'object' || Array.isArray(lists))
    throw new CorruptManifestError(file, { reason: 'bad-list-counts' });
  for (const [key, n] of Object.entries(lists)) {
    const v = doc[key];
    if (!Array.isArray(v) && !(v instanceof LazyList))
      throw new CorruptManifestError(file, { reason: 'list-missing', field: key });
    if (v.length !== n)
      throw new CorruptManifestError(file, { reason: 'list-count', field: key, entries: v.length, says: String(n) });
  }
  return doc;
}

function decodeUnsigned(text: string, file: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = yamlLib().parse(text);
  } catch (e) {
    throw new CorruptManifestError(file, { reason: 'not-yaml', error: (e as Error).message.split('\n')[0]! });
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new CorruptManifestError(file, { reason: 'not-a-mapping' });
  }
  return doc as Record<string, unknown>;
}

/**
 * The fields of `text` up to `end` (the end line), scanned line by line without splitting the
 * text; a list's items are left in place (LazyList), parsed when they are read.
 */
function decodeLines(text: Content, end: number, file: string): Record<string, unknown> | null {
  const doc: Record<string, unknown> = {};
  try {
    for (let at = 0; at < end;) {
      const nl = text.newline(at);
      const m = FIELD.exec(text.slice(at, nl));
      if (!m || Object.hasOwn(doc, m[1]!)) return null;
      at = nl + 1;
      if (m[2] !== undefined) {
        doc[m[1]!] = JSON.parse(m[2]);
        continue;
      }
      const start = at;
      let n = 0;
      while (at < end && text.startsWith(ITEM, at)) {
        at = text.newline(at) + 1;
        n++;
      }
      doc[m[1]!] = new LazyList(text, start, at, n, file);
    }
  } catch {
    return null;
  }
  return doc;
}

/** Field checks that name the file and the field when a manifest is wrong. Nothing defaults. */
export class Fields {
  constructor(
    readonly doc: Record<string, unknown>,
    readonly file: string,
  ) {}

  private fail(field: string, problem: string): never {
    throw new CorruptManifestError(this.file, { reason: 'bad-field', field, problem });
  }

  kind(kind: string, maxVersion: number): void {
    if (this.doc.kind !== kind) this.fail('kind', `is '${String(this.doc.kind)}', expected '${kind}'`);
    const v = this.doc.version;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
      this.fail('version', 'is missing or not a positive integer');
    if (v > maxVersion)
      this.fail('version', `is ${v}; this stagecommit reads up to ${maxVersion}: upgrade stagecommit`);
  }

  string(field: string): string {
    const v = this.doc[field];
    if (typeof v !== 'string' || v === '') this.fail(field, 'is missing or not a string');
    return v;
  }

  /** A string that must be present but may be empty. */
  text(field: string): string {
    const v = this.doc[field];
    if (typeof v !== 'string') this.fail(field, 'is missing or not a string');
    return v;
  }

  number(field: string): number {
    const v = this.doc[field];
    if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(field, 'is missing or not a number');
    return v;
  }

  /** A whole number ≥ 0. */
  count(field: string): number {
    const v = this.number(field);
    if (!Number.isSafeInteger(v) || v < 0) this.fail(field, `is ${v}, expected a whole number`);
    return v;
  }

  /**
   * A time in ms since 1970 by some host's clock: a whole number of either sign, as a clock may be
   * set before 1970 (no decision compares it with another host's, protocol.md §10).
   */
  time(field: string): number {
    const v = this.number(field);
    if (!Number.isSafeInteger(v)) this.fail(field, `is ${v}, expected a whole number of ms`);
    return v;
  }

  /** A field that must be present; null means "none". */
  nullableCount(field: string): number | null {
    if (!Object.hasOwn(this.doc, field)) this.fail(field, 'is missing (write null for none)');
    return this.doc[field] === null ? null : this.count(field);
  }

  /** A string field that must be present; null means "none". */
  nullableText(field: string): string | null {
    if (!Object.hasOwn(this.doc, field)) this.fail(field, 'is missing (write null for none)');
    return this.doc[field] === null ? null : this.text(field);
  }

  oneOf<T extends string>(field: string, allowed: readonly T[]): T {
    const v = this.doc[field];
    if (typeof v !== 'string' || !allowed.includes(v as T))
      this.fail(field, `is '${String(v)}', expected one of ${allowed.join(', ')}`);
    return v as T;
  }

  array<T>(field: string, check: (item: unknown, i: number) => T): T[] {
    const out: T[] = [];
    this.each(field, (item, i) => out.push(check(item, i)));
    return out;
  }

  /** Each item of a list, in order, checked by `fn` (a LazyList is parsed as it goes). */
  each(field: string, fn: (item: unknown, i: number) => void): void {
    const v = this.doc[field];
    if (!Array.isArray(v) && !(v instanceof LazyList))
      this.fail(field, v === undefined ? 'is missing' : 'is not a list');
    v.forEach((item: unknown, i: number) => {
      try {
        fn(item, i);
      } catch (e) {
        if (e instanceof CorruptManifestError) throw e;
        this.fail(`${field}[${i}]`, (e as Error).message);
      }
    });
  }

  /** How many items a list has (without reading them). */
  length(field: string): number {
    const v = this.doc[field];
    if (!Array.isArray(v) && !(v instanceof LazyList))
      this.fail(field, v === undefined ? 'is missing' : 'is not a list');
    return v.length;
  }

  strings(field: string): string[] {
    return this.array(field, (x) => {
      if (typeof x !== 'string') throw new Error('is not a string');
      return x;
    });
  }

  object(field: string): Record<string, unknown> {
    const v = this.doc[field];
    if (v === null || typeof v !== 'object' || Array.isArray(v)) this.fail(field, 'is missing or not a mapping');
    return v as Record<string, unknown>;
  }
}

/** For list items: throws a plain Error that Fields.array turns into a named-field error. */
export function itemString(o: unknown, key: string): string {
  const v = (o as Record<string, unknown> | null)?.[key];
  if (typeof v !== 'string') throw new Error(`'${key}' is missing or not a string`);
  return v;
}

export function itemNumber(o: unknown, key: string): number {
  const v = (o as Record<string, unknown> | null)?.[key];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw new Error(`'${key}' is missing or not a whole number`);
  return v;
}
