// The messages of UsageError (exit 2): bad usage or bad input, and what to do.

/** What was wrong with the command, its options or its input. */
export type UsageDetail =
  /** The command line did not parse (commander's own words: an unknown option, a missing argument). */
  | { readonly reason: 'command-line'; readonly problem: string }
  | { readonly reason: 'unclassified'; readonly message: string };

export function usageMessage(d: UsageDetail): string {
  switch (d.reason) {
    case 'command-line':
      return d.problem;
    case 'unclassified':
      return d.message;
  }
}
