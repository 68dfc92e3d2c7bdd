// A manifest's content as the codec reads it: the same scan over its text or over the bytes read.

import { createHash } from 'node:crypto';
import { END } from './encode.js';

/**
 * A manifest's content: its text, or its UTF-8 bytes as read (a plan of a million moves is 100 MB:
 * decoded from its bytes, it never stands as a string beside them). Offsets are the content's own.
 */
export class Content {
  private readonly bytes: Buffer | null;
  private readonly text: string | null;
  readonly length: number;

  constructor(content: string | Buffer) {
    this.bytes = typeof content === 'string' ? null : content;
    this.text = typeof content === 'string' ? content : null;
    this.length = content.length;
  }

  /** The next newline at or after `at`, or -1. */
  newline(at: number): number {
    return this.bytes ? this.bytes.indexOf(0x0a, at) : this.text!.indexOf('\n', at);
  }

  lastNewline(before: number): number {
    return this.bytes ? this.bytes.lastIndexOf(0x0a, before) : this.text!.lastIndexOf('\n', before);
  }

  endsWithNewline(): boolean {
    return this.length > 0 && (this.bytes ? this.bytes[this.length - 1] === 0x0a : this.text!.endsWith('\n'));
  }

  /** The text from `start` to `end`. */
  slice(start: number, end: number): string {
    return this.bytes ? this.bytes.toString('utf8', start, end) : this.text!.slice(start, end);
  }

  startsWith(prefix: string, at: number): boolean {
    if (!this.bytes) return this.text!.startsWith(prefix, at);
    return at + prefix.length <= this.length && this.bytes.toString('latin1', at, at + prefix.length) === prefix;
  }

  sha256(end: number): string {
    const h = createHash('sha256');
    return (this.bytes ? h.update(this.bytes.subarray(0, end)) : h.update(this.text!.slice(0, end), 'utf8')).digest(
      'hex',
    );
  }

  lines(end: number): number {
    let n = 0;
    for (let i = this.newline(0); i >= 0 && i < end; i = this.newline(i + 1)) n++;
    return n;
  }

  /**
   * A text with no 'end:' line anywhere (a hand-written manifest). Lines end at '\n' only, as
   * the codec reads them: a U+2028 or CR inside a value starts no line.
   */
  hasNoEndLine(): boolean {
    const text = this.whole();
    return !text.startsWith(END) && !text.includes(`\n${END}`);
  }

  whole(): string {
    return this.text ?? this.bytes!.toString('utf8');
  }
}
