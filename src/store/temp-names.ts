// The one reserved name pattern for temporary files: every store's temps carry it, no step takes them for output.
// Keeps protocol.md §5.12 (no partial file is published).

import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';

/**
 * A file whose name starts with this is a write in progress, or the debris of a killed one:
 * never data. The leading dot hides it from Hive and Spark readers too.
 */
export const TEMP_PREFIX = '.stagecommit-tmp-';

/** How much of the final name a temp name keeps (bytes), so it stays under NAME_MAX (255). */
const KEPT_NAME_BYTES = 160;

/** A store's probe that a step writes and removes at once (S3: the conditional-write check). */
export const PROBE_PREFIX = '.stagecommit-probe-';

/** A name another step writing at this moment may have put there, or a killed one left: never a job's file. */
export function isInFlightName(name: string): boolean {
  return isTempName(name) || name.startsWith(PROBE_PREFIX);
}

export function isTempName(name: string): boolean {
  return name.startsWith(TEMP_PREFIX);
}

/** A fresh temp path beside `finalPath`: `.stagecommit-tmp-<random>-<final name>`. */
export function tempPathFor(finalPath: string): string {
  const kept = headBytes(posix.basename(finalPath), KEPT_NAME_BYTES);
  return posix.join(posix.dirname(finalPath), `${TEMP_PREFIX}${randomBytes(6).toString('hex')}-${kept}`);
}

/** The longest prefix of `s` that is at most `max` bytes in UTF-8, never splitting a character. */
function headBytes(s: string, max: number): string {
  if (Buffer.byteLength(s) <= max) return s;
  let out = '';
  let bytes = 0;
  for (const ch of s) {
    bytes += Buffer.byteLength(ch);
    if (bytes > max) break;
    out += ch;
  }
  return out;
}
