// Ways to damage a manifest on purpose (protocol.md §5.10): cuts at every line and at bytes, lines
// removed, bytes flipped — and, re-signed so the check line matches, fields removed, retyped or
// given paths that escape. Each variant is a name and the damaged text.

import { createHash } from 'node:crypto';

export interface Variant {
  readonly name: string;
  readonly text: string;
}

interface Line {
  readonly key: string;
  value?: string;
  items?: string[];
}

/** The manifest's fields and block lists, without its check line. */
export function parseBody(text: string): Line[] {
  const lines = text.split('\n');
  const out: Line[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (l === '' || l.startsWith('end: ')) continue;
    const m = /^([A-Za-z][A-Za-z0-9]*):(?: (.*))?$/.exec(l)!;
    if (m[2] !== undefined) out.push({ key: m[1]!, value: m[2] });
    else {
      const items: string[] = [];
      while (lines[i + 1]?.startsWith('  - ')) items.push(lines[++i]!.slice(4));
      out.push({ key: m[1]!, items });
    }
  }
  return out;
}

/** Renders fields and lists and appends a check line that matches them (a forged, valid file). */
export function sign(lines: readonly Line[]): string {
  const body = lines
    .map((l) => (l.items ? `${l.key}:\n${l.items.map((i) => `  - ${i}\n`).join('')}` : `${l.key}: ${l.value}\n`))
    .join('');
  const lists = Object.fromEntries(lines.filter((l) => l.items).map((l) => [l.key, l.items!.length]));
  const n = body.split('\n').length - 1;
  return `${body}end: ${JSON.stringify({ lines: n, lists, sha256: createHash('sha256').update(body).digest('hex') })}\n`;
}

/** Re-signs a manifest after changing one field's raw JSON value (or removing it: undefined). */
export function withField(text: string, key: string, value: string | undefined): string {
  const lines = parseBody(text).filter((l) => value !== undefined || l.key !== key);
  const l = lines.find((x) => x.key === key);
  if (l && value !== undefined) {
    l.value = value;
    delete l.items;
  } else if (value !== undefined) lines.push({ key, value });
  return sign(lines);
}

/** Re-signs after changing one list item (a JSON object) with `edit`. */
export function withItem(
  text: string,
  list: string,
  index: number,
  edit: (o: Record<string, unknown>) => void,
): string {
  const lines = parseBody(text);
  const l = lines.find((x) => x.key === list)!;
  const o = JSON.parse(l.items![index]!) as Record<string, unknown>;
  edit(o);
  l.items![index] = JSON.stringify(o);
  return sign(lines);
}

function retyped(raw: string): string {
  const v = JSON.parse(raw) as unknown;
  if (typeof v === 'number') return '"7"';
  if (typeof v === 'string') return '7';
  if (typeof v === 'boolean') return '"yes"';
  if (v === null) return '"none"';
  if (Array.isArray(v)) return '{"a":1}';
  return '[1]';
}

/** Deterministic pseudo-random numbers, so a failure names a reproducible case. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

/**
 * Fields a manifest written by an earlier version lacks: without one it is still whole (a job
 * staged before the log was read from a position has no `logReadFrom`), so its removal is no damage.
 */
const OPTIONAL_FIELDS = new Set(['logReadFrom']);

/**
 * Every damage of one manifest: cut at each line boundary (the whole file but the last k lines,
 * also 0 bytes), cut at random bytes, each line removed, bytes flipped; then, re-signed, each
 * field removed and each field retyped. `extra` adds forged variants of the caller's own.
 */
export function damages(text: string, seed = 1): Variant[] {
  const out: Variant[] = [];
  const lines = text
    .split('\n')
    .slice(0, -1)
    .map((l) => l + '\n');
  for (let k = 0; k < lines.length; k++) out.push({ name: `cut after line ${k}`, text: lines.slice(0, k).join('') });
  const r = rng(seed);
  for (let i = 0; i < 4; i++) {
    const at = 1 + Math.floor(r() * (text.length - 2));
    out.push({ name: `cut at byte ${at}`, text: text.slice(0, at) });
  }
  for (let k = 0; k < lines.length; k++)
    out.push({ name: `line ${k + 1} removed`, text: lines.filter((_, i) => i !== k).join('') });
  for (let i = 0; i < 3; i++) {
    const at = Math.floor(r() * text.length);
    const b = Buffer.from(text);
    b[at] = b[at]! ^ 0x04;
    out.push({ name: `byte ${at} flipped`, text: b.toString('latin1') });
  }
  for (const l of parseBody(text)) {
    if (!OPTIONAL_FIELDS.has(l.key))
      out.push({ name: `field '${l.key}' removed (re-signed)`, text: withField(text, l.key, undefined) });
    if (l.value !== undefined)
      out.push({ name: `field '${l.key}' retyped (re-signed)`, text: withField(text, l.key, retyped(l.value)) });
  }
  return out;
}
