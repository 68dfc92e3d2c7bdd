// The messages of CommitDeniedError (exit 3) and IncompleteError (exit 5), made from the reason's fields.

/** Why a task attempt may not commit. */
export type DeniedDetail = { readonly reason: 'unclassified'; readonly message: string };

export function deniedMessage(d: DeniedDetail): string {
  switch (d.reason) {
    case 'unclassified':
      return d.message;
  }
}

/** What commit-job found missing. */
export type IncompleteDetail = { readonly reason: 'unclassified'; readonly message: string };

export function incompleteMessage(d: IncompleteDetail): string {
  switch (d.reason) {
    case 'unclassified':
      return d.message;
  }
}
