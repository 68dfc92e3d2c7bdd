// The messages of ConflictError (exit 4), one per reason, made from the reason's fields.

/** Why a step refused to go on: the job or the target is not as the step needs it. */
export type ConflictDetail = { readonly reason: 'unclassified'; readonly message: string };

export function conflictMessage(d: ConflictDetail): string {
  switch (d.reason) {
    case 'unclassified':
      return d.message;
  }
}
