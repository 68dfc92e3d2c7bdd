// Ordering strings by UTF-16 code units: the order claims, walks and listings are written in.

/** a before b by code units (what `<` does), as a sort comparator. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
