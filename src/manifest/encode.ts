// Writing manifests in the codec's line format (codec.ts): a list can be written as its lines as
// it is built, so a writer of a million-item list holds text, never an object per item.

import { createHash } from 'node:crypto';
import { InternalError } from '../errors.js';

export const ITEM = '  - ';
export const END = 'end: ';
/** Items per chunk of text. */
const CHUNK = 4096;

/** A list's item lines, in order, a few thousand to a chunk; encodeManifest writes them as they are. */
export interface EncodedList {
  readonly length: number;
  readonly chunks: readonly string[];
}

/** Builds an EncodedList one item at a time. */
export class ListLines {
  private readonly chunks: string[] = [];
  private lines: string[] = [];
  length = 0;

  push(item: object): void {
    this.lines.push(ITEM + JSON.stringify(item) + '\n');
    this.length++;
    if (this.lines.length === CHUNK) this.flush();
  }

  // join() makes one flat string of a chunk; `+=` would leave a tree of a few string pieces per
  // line, several times the text's own size (measured: 54 MB for 11 MB of lines at 250,000 files).
  private flush(): void {
    if (this.lines.length > 0) this.chunks.push(this.lines.join(''));
    this.lines = [];
  }

  done(): EncodedList {
    this.flush();
    return { length: this.length, chunks: this.chunks };
  }
}

/**
 * A list whose lines are made as they are written: `items` is walked twice (once to measure and
 * digest the text, once to write its bytes), so a plan of a million moves stands as neither
 * objects nor text beside the bytes written. `length` must be how many items it yields.
 */
export interface GeneratedList {
  readonly length: number;
  readonly items: () => Iterable<object>;
}

/** Each chunk of a list's lines, in order. */
function eachChunk(list: EncodedList | GeneratedList, fn: (chunk: string) => void): void {
  if ('chunks' in list) {
    list.chunks.forEach((c) => fn(c));
    return;
  }
  let lines: string[] = [];
  let n = 0;
  for (const item of list.items()) {
    lines.push(ITEM + JSON.stringify(item) + '\n');
    n++;
    if (lines.length === CHUNK) {
      fn(lines.join(''));
      lines = [];
    }
  }
  if (lines.length > 0) fn(lines.join(''));
  if (n !== list.length)
    throw new InternalError(`a generated list yielded ${n} items, not the ${list.length} it announced`);
}

/** Each item of an EncodedList, parsed back, in order. */
export function eachEncodedItem(list: EncodedList, fn: (item: unknown) => void): void {
  for (const chunk of list.chunks) {
    for (let at = 0; at < chunk.length;) {
      const nl = chunk.indexOf('\n', at);
      fn(JSON.parse(chunk.slice(at + ITEM.length, nl)));
      at = nl + 1;
    }
  }
}

type Lists = Record<string, readonly object[] | EncodedList | GeneratedList>;

export function encodeManifest(header: Record<string, unknown>, lists: Lists = {}): string {
  const parts: string[] = [];
  const end = endLine(header, materialised(lists), (p) => parts.push(p));
  return parts.join('') + end;
}

/**
 * encodeManifest as its UTF-8 bytes, written piece by piece into one buffer: the text of a
 * million-item list never stands as one string (or as its pieces) beside the bytes that are written.
 */
export function encodeManifestBytes(header: Record<string, unknown>, lists: Lists = {}): Buffer {
  const all = materialised(lists);
  let size = 0;
  const end = endLine(header, all, (p) => (size += Buffer.byteLength(p, 'utf8')));
  const out = Buffer.allocUnsafe(size + Buffer.byteLength(end, 'utf8'));
  let at = 0;
  eachPiece(header, all, (p) => (at += out.write(p, at, 'utf8')));
  out.write(end, at, 'utf8');
  return out;
}

/** Arrays as EncodedLists: encoded once, whatever walks them twice. */
function materialised(lists: Lists): Record<string, EncodedList | GeneratedList> {
  return Object.fromEntries(
    Object.entries(lists).map(([k, v]) => [k, Array.isArray(v) ? encodeList(v) : (v as EncodedList | GeneratedList)]),
  );
}

/** The manifest's text before its end line, in pieces (whole lines each), in order. */
function eachPiece(
  header: Record<string, unknown>,
  lists: Record<string, EncodedList | GeneratedList>,
  fn: (piece: string) => void,
): void {
  fn(
    Object.entries(header)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}: ${JSON.stringify(v)}\n`)
      .join(''),
  );
  for (const [key, list] of Object.entries(lists)) {
    fn(list.length === 0 ? `${key}: []\n` : `${key}:\n`);
    eachChunk(list, fn);
  }
}

/**
 * Walks the text before the end line (each piece also to `fn`) and returns the end line. Digested
 * and counted piece by piece: the same as over the joined text, as no piece splits a line.
 */
function endLine(
  header: Record<string, unknown>,
  all: Record<string, EncodedList | GeneratedList>,
  fn: (piece: string) => void,
): string {
  const counts: Record<string, number> = {};
  for (const [key, list] of Object.entries(all)) counts[key] = list.length;
  const digest = createHash('sha256');
  let lineCount = 0;
  eachPiece(header, all, (p) => {
    digest.update(p, 'utf8');
    lineCount += countLines(p);
    fn(p);
  });
  return `${END}${JSON.stringify({ lines: lineCount, lists: counts, sha256: digest.digest('hex') })}\n`;
}

function encodeList(items: readonly object[]): EncodedList {
  const lines = new ListLines();
  for (const item of items) lines.push(item);
  return lines.done();
}

export function countLines(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return n;
}
