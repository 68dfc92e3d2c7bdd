// The message of StoreError (exit 1; 'no-location' exit 2): the operation, its paths, the store's own words.

/** What went wrong in a store. */
export type StoreErrorReason =
  /** A path that is not there (as the Store contract says). */
  | 'not-found'
  /** A path that is there already, or a directory that is not empty (as the Store contract says). */
  | 'exists'
  /** Permission denied, or a capability that does not hold. */
  | 'refused'
  /** Anything else the store answered, or no answer. */
  | 'io'
  /** The URI names a place this store does not have, such as a missing bucket (bad input: exit 2). */
  | 'no-location';

export interface StoreDetail {
  readonly reason: StoreErrorReason;
  /** The store operation (read, rename, …). */
  readonly op: string;
  readonly paths: readonly string[];
  /** The store's own words. */
  readonly problem: string;
}

export function storeMessage(d: StoreDetail): string {
  return d.paths.length ? `${d.op} ${d.paths.join(' -> ')}: ${d.problem}` : d.problem;
}
