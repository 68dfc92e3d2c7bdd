// YAML manifests written in YAML's JSON-compatible style: one `key: <JSON>` line per field and
// one JSON flow mapping per list item. They are valid YAML for people and tools, and are read
// line by line without a YAML parser; a hand-edited file falls back to a full YAML parse.

import { createRequire } from 'node:module';
import { CorruptManifestError } from '../errors.js';

const ITEM = '  - ';
const FIELD = /^([A-Za-z][A-Za-z0-9]*):(?: (.*))?$/;

/** The YAML library, loaded only when a document is not in our own line format. */
export function yamlLib(): typeof import('yaml') {
  return createRequire(import.meta.url)('yaml') as typeof import('yaml');
}

export function encodeManifest(header: Record<string, unknown>, lists: Record<string, readonly object[]> = {}): string {
  const parts = [
    Object.entries(header)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}: ${JSON.stringify(v)}\n`)
      .join(''),
  ];
  for (const [key, items] of Object.entries(lists)) {
    if (items.length === 0) {
      parts.push(`${key}: []\n`);
      continue;
    }
    const lines = new Array<string>(items.length + 1);
    lines[0] = `${key}:`;
    for (let i = 0; i < items.length; i++) lines[i + 1] = ITEM + JSON.stringify(items[i]);
    parts.push(lines.join('\n') + '\n');
  }
  return parts.join('');
}

/** Parses a manifest; falls back to a full YAML parse for hand-edited documents. */
export function decodeManifest(text: string, file: string): Record<string, unknown> {
  const fast = decodeFast(text);
  if (fast) return fast;
  let doc: unknown;
  try {
    doc = yamlLib().parse(text);
  } catch (e) {
    throw new CorruptManifestError(file, '(document)', `is not valid YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new CorruptManifestError(file, '(document)', 'is not a mapping (the file is empty or truncated)');
  }
  return doc as Record<string, unknown>;
}

function decodeFast(text: string): Record<string, unknown> | null {
  const lines = text.split('\n');
  const doc: Record<string, unknown> = {};
  try {
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      if (line === '') continue;
      const m = FIELD.exec(line);
      if (!m) return null;
      if (m[2] !== undefined) {
        doc[m[1]!] = JSON.parse(m[2]);
        continue;
      }
      const items: unknown[] = [];
      while (lines[i + 1]?.startsWith(ITEM + '{')) items.push(JSON.parse(lines[++i]!.slice(ITEM.length)));
      if (lines[i + 1]?.startsWith(' ')) return null;
      doc[m[1]!] = items;
    }
  } catch {
    return null;
  }
  return Object.keys(doc).length ? doc : null;
}

/** Field checks that name the file and the field when a manifest is wrong. */
export class Fields {
  constructor(readonly doc: Record<string, unknown>, readonly file: string) {}

  private fail(field: string, problem: string): never {
    throw new CorruptManifestError(this.file, field, problem);
  }

  kind(kind: string, maxVersion: number): void {
    if (this.doc.kind !== kind) this.fail('kind', `is '${String(this.doc.kind)}', expected '${kind}'`);
    const v = this.doc.version;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) this.fail('version', 'is missing or not a positive integer');
    if (v > maxVersion) this.fail('version', `is ${v}; this stagecommit reads up to ${maxVersion}: upgrade stagecommit`);
  }

  string(field: string): string {
    const v = this.doc[field];
    if (typeof v !== 'string' || v === '') this.fail(field, 'is missing or not a string');
    return v;
  }

  optString(field: string): string | undefined {
    const v = this.doc[field];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') this.fail(field, 'is not a string');
    return v;
  }

  number(field: string): number {
    const v = this.doc[field];
    if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(field, 'is missing or not a number');
    return v;
  }

  optNumber(field: string): number | undefined {
    const v = this.doc[field];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(field, 'is not a number');
    return v;
  }

  bool(field: string): boolean {
    const v = this.doc[field];
    if (typeof v !== 'boolean') this.fail(field, 'is missing or not true/false');
    return v;
  }

  oneOf<T extends string>(field: string, allowed: readonly T[]): T {
    const v = this.doc[field];
    if (typeof v !== 'string' || !allowed.includes(v as T)) this.fail(field, `is '${String(v)}', expected one of ${allowed.join(', ')}`);
    return v as T;
  }

  array<T>(field: string, check: (item: unknown, i: number) => T): T[] {
    const v = this.doc[field] ?? [];
    if (!Array.isArray(v)) this.fail(field, 'is not a list');
    return v.map((item, i) => {
      try {
        return check(item, i);
      } catch (e) {
        if (e instanceof CorruptManifestError) throw e;
        return this.fail(`${field}[${i}]`, (e as Error).message);
      }
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
  if (typeof v !== 'number') throw new Error(`'${key}' is missing or not a number`);
  return v;
}
