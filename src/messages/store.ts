// The message of StoreError (exit 1; 'no-location' exit 2): the operation, its paths, the store's own words.

/**
 * What went wrong in a store: 'not-found' and 'exists' as the Store contract says; 'refused'
 * (permission, a capability that does not hold); 'io' (anything else); 'no-location' (the URI names
 * a place this store does not have, such as a missing bucket: bad input, exit 2).
 */
export type StoreErrorReason = 'not-found' | 'exists' | 'refused' | 'io' | 'no-location';

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
