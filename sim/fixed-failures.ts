// Schedules the simulation once found failing, whose defects are fixed: each must pass. A case
// replays its key, then runs its scenario as it was found (the random part's seed and clocks, or
// the exhaustive bound), since a key's choices may lead elsewhere once the code's store calls
// change. The comment above each names the invariant of docs/protocol.md it keeps.

import { exhaustive, parseReplayKey, randomRun, Replay, settingFor, FAR_BOUNDS, NTP_BOUNDS } from './explore.js';
import { isKnown } from './known-failures.js';
import { CROWDS, SCENARIOS } from './scenarios.js';
import { runSchedule, type ScheduleResult } from './schedule.js';

export interface FixedFailure {
  readonly title: string;
  /** The replay key as found: mode|scenario|store|seed|choices. */
  readonly key: string;
}

export const FIXED_FAILURES: readonly FixedFailure[] = [
  // §5.19 exit codes are honest: a second run of a committing attempt never ends in a raw error.
  {
    title: 'the same commit-task attempt run twice at once: the second exits 1 with an internal error',
    key: 'exhaustive-1-0|commit-task / commit-task (one attempt)|object||0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1',
  },
  // §5.6 one driver at a time; §10 rule 2: a lease is expired only by its observer's elapsed time.
  {
    title: "a commit-job whose clock is days ahead takes a live abort's lease: both exit 0",
    key: 'far|commit-job / abort|object|94|0.0.5.3.0.1.1.1.1.0.0.0.0.0.0.0.3.0.1',
  },
  // §5.6 one driver at a time (a live holder's lease is not taken); §5.10 a plan is called missing only when it is.
  {
    title: "a recover whose clock is ahead takes a live commit-job's lease and calls its plan damaged",
    key: 'far|crowd: two jobs, recover, clean-orphans|object|82|10.10.5.6.4.3.6.1.2.0.2.3.3.8.0.5.1.5.0.0.9.1.3.1.0.3.5.0.0.0.1.0.0.0.3.0.2.1.1.2.0.2.0.2.0.2.0.1.4.1.1',
  },
  // §5.19 exit codes are honest: commit-task's exit 0 means the job's commit includes the task.
  {
    title: "commit-task judges a live commit-job's lease by its own far-off clock: exit 0, task not published",
    key: 'far|commit-task / commit-job|filesystem|169|0.0.1.0.1.0.0.0.1.1.0.0.0.0.1.1.1.1.1.0.3.3.3',
  },
  // §5.5 the conflict check is linearizable; §3.3 a done marker without its entry keeps its number taken.
  {
    title: 'a deleted newest table-log entry whose .done remains lets an older overwrite commit over newer data',
    key: 'exhaustive-0-0|two jobs, the newer entry deleted by hand|filesystem||',
  },
  // §5.16 clean-orphans never deletes a leftover newer than --older-than; §10 rule 5: ages by the store's clock.
  {
    title: 'clean-orphans --delete with a clock days ahead aborts a job staged seconds earlier',
    key: 'far|clean-orphans / commit-task (fresh job)|filesystem|12|',
  },
];

/**
 * The case's failing runs (its replay, then its scenario run as found), their violations and
 * traces; a run showing a known defect still open (sim/known-failures.ts) is that defect's.
 */
export async function runFixed(k: FixedFailure): Promise<{ violations: string[]; trace: string[] }[]> {
  const r = parseReplayKey(k.key);
  const sc = [...SCENARIOS, ...CROWDS].find((s) => s.name === r.scenario);
  if (!sc) throw new Error(`no scenario '${r.scenario}'`);
  const setting = settingFor(r.mode, sc, r.kind, r.seed);
  const runs: ScheduleResult[] = [await runSchedule(sc, new Replay(r.choices), setting)];
  if (r.mode === 'far' || r.mode === 'random') {
    const f = await randomRun(sc, r.kind, r.seed ?? 0, r.mode === 'far' ? FAR_BOUNDS : NTP_BOUNDS);
    if (f) runs.push(f.result);
  } else {
    for (const f of (await exhaustive(sc, r.kind, setting.faults)).failures) runs.push(f.result);
  }
  return runs
    .filter((x) => x.violations.length && !x.violations.some((v) => isKnown(v, sc.name)))
    .map((x) => ({ violations: [...x.violations], trace: [...x.trace] }));
}
