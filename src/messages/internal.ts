// The messages of InternalError (exit 1): a rule the code keeps was broken, or an error of no family.

export type InternalDetail =
  /** A rule the code itself keeps (a planner invariant) was broken. */
  | { readonly reason: 'invariant'; readonly rule: string }
  /** An error that is none of stagecommit's own (a TypeError, a fault injected by a test): its name and message. */
  | { readonly reason: 'unexpected'; readonly name: string; readonly message: string };

export function internalMessage(d: InternalDetail): string {
  switch (d.reason) {
    case 'invariant':
      return d.rule;
    case 'unexpected':
      return d.message;
  }
}
