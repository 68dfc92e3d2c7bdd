// A substring that does not keep its whole string alive.

// V8 makes a substring of 13 or more characters a view into the string it was cut from, which
// then lives as long as the piece does. A tree that keeps a million file names cut from their
// paths would keep the million paths too (40 MB at a million files, protocol.md §9.2).
const VIEW_FROM = 13;
const scratch = Buffer.allocUnsafe(1024);

/**
 * `s` as a string of its own, for a piece kept long after what it was cut from. Copied through
 * bytes (a few hundred nanoseconds); a name with characters beyond Latin-1, or a long one, stays
 * as it is.
 */
export function ownString(s: string): string {
  if (s.length < VIEW_FROM || s.length > scratch.length) return s;
  const copy = scratch.toString('latin1', 0, scratch.write(s, 0, 'latin1'));
  return copy === s ? copy : s;
}
