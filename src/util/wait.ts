// Waiting on the store for another process to move on: the same poll everywhere.

import { setTimeout as sleep } from 'node:timers/promises';

/** How often a step looks again while it waits for another process. */
export const POLL_MS = 200;

/**
 * Calls `look` until it answers (anything but undefined) or `ms` has passed since the first call;
 * undefined then. `now`: the step's clock.
 */
export async function waitFor<T>(
  now: () => number,
  ms: number,
  look: () => Promise<T | undefined>,
): Promise<T | undefined> {
  const until = now() + ms;
  for (;;) {
    const answer = await look();
    if (answer !== undefined || now() >= until) return answer;
    await sleep(POLL_MS);
  }
}
