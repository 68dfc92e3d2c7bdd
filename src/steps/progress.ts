// Progress of a step that moves or scans data: items and bytes done of their totals, sent as
// 'progress' events at most ten times a second (and once when all is done), so that a terminal
// can show the rate and the time left without a step ever waiting on it.

import type { StepEnv } from './env.js';

const EVERY_MS = 100;

export class Progress {
  private done = 0;
  private bytesDone = 0;
  /** Bytes of items still in flight, by item. */
  private readonly partial = new Map<unknown, number>();
  private lastMs = -Infinity;
  /** Whether bytes move at all (a total given, or some counted): counts alone otherwise. */
  private movesBytes: boolean;

  /** `bytesTotal` undefined: not known (data read from a stream). */
  constructor(
    private readonly env: Pick<StepEnv, 'emit' | 'now'>,
    private readonly label: string,
    private readonly total: number,
    private readonly bytesTotal?: number,
  ) {
    this.movesBytes = bytesTotal !== undefined;
    this.send(true);
  }

  /** Bytes of an item so far, as they go. */
  bytes(item: unknown, sent: number): void {
    this.partial.set(item, sent);
    this.movesBytes = true;
    this.send(false);
  }

  /** An item done, with its bytes (0 where none moved). */
  item(item: unknown, bytes = 0): void {
    this.partial.delete(item);
    this.done++;
    this.bytesDone += bytes;
    if (bytes > 0) this.movesBytes = true;
    this.send(this.done === this.total);
  }

  private send(force: boolean): void {
    const now = this.env.now();
    if (this.total === 0 || (!force && now - this.lastMs < EVERY_MS)) return;
    this.lastMs = now;
    let bytes = this.bytesDone;
    for (const b of this.partial.values()) bytes += b;
    this.env.emit({
      type: 'progress',
      label: this.label,
      done: this.done,
      total: this.total,
      ...(this.movesBytes ? { bytes } : {}),
      ...(this.bytesTotal !== undefined ? { bytesTotal: this.bytesTotal } : {}),
    });
  }
}
