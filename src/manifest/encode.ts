// Writing manifests in the codec's line format (codec.ts): a list can be written as its lines as
// it is built, so a writer of a million-item list holds text, never an object per item.

import { createHash } from 'node:crypto';

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

/** Each item of an EncodedList, parsed back, in order. */
export function eachEncodedItem(list: EncodedList, fn: (item: unknown) => void): void {
  for (const chunk of list.chunks) {
    for (let at = 0; at < chunk.length; ) {
      const nl = chunk.indexOf('\n', at);
      fn(JSON.parse(chunk.slice(at + ITEM.length, nl)));
      at = nl + 1;
    }
  }
}

export function encodeManifest(header: Record<string, unknown>, lists: Record<string, readonly object[] | EncodedList> = {}): string {
  return manifestParts(header, lists).join('');
}

/**
 * encodeManifest as its UTF-8 bytes, written piece by piece into one buffer: the text of a
 * million-item list never stands as one string beside the bytes that are written.
 */
export function encodeManifestBytes(header: Record<string, unknown>, lists: Record<string, readonly object[] | EncodedList> = {}): Buffer {
  const parts = manifestParts(header, lists);
  const out = Buffer.allocUnsafe(parts.reduce((n, p) => n + Buffer.byteLength(p, 'utf8'), 0));
  let at = 0;
  for (const p of parts) at += out.write(p, at, 'utf8');
  return out;
}

/** The manifest's text in pieces (whole lines each), its end line last. */
function manifestParts(header: Record<string, unknown>, lists: Record<string, readonly object[] | EncodedList>): string[] {
  const parts = [
    Object.entries(header)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}: ${JSON.stringify(v)}\n`)
      .join(''),
  ];
  const counts: Record<string, number> = {};
  for (const [key, items] of Object.entries(lists)) {
    const list = Array.isArray(items) ? encodeList(items) : (items as EncodedList);
    counts[key] = list.length;
    parts.push(list.length === 0 ? `${key}: []\n` : `${key}:\n`, ...list.chunks);
  }
  // Digested and counted piece by piece: the same as over the joined text, as no piece splits a line.
  const digest = createHash('sha256');
  let lineCount = 0;
  for (const p of parts) {
    digest.update(p, 'utf8');
    lineCount += countLines(p);
  }
  parts.push(`${END}${JSON.stringify({ lines: lineCount, lists: counts, sha256: digest.digest('hex') })}\n`);
  return parts;
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
