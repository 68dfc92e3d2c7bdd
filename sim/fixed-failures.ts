// Schedules the simulation once found failing, whose defects are fixed: each must pass. A case
// replays its key, then runs its scenario as it was found (the random part's seed and clocks, or
// the exhaustive bound, its first 100 schedules), since a key's choices may lead elsewhere once the code's store calls
// change. The comment above each names the invariant of docs/protocol.md it keeps.

import { exhaustive, parseReplayKey, randomRun, Replay, settingFor, FAR_BOUNDS, NTP_BOUNDS } from './explore.js';
import { isKnown } from './known-failures.js';
import { CROWDS, SCENARIOS } from './scenarios.js';
import { runSchedule, type ScheduleResult } from './schedule.js';

/** The schedules of a case's exhaustive search run again, at most: the first ones, nearest its own. */
const FIXED_SEARCH_LIMIT = 100;

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
  // §5.12 no debris: a task step's take-back after its job ended tidies the default layout's parents.
  {
    title: "stage that takes its files back after an abort leaves the default layout's empty parents",
    key: 'exhaustive-1-0|stage / abort|filesystem||0.0.0.0.1',
  },
  // §5.12 no debris: records a killed task step left after its job ended are not a lost manifest.
  {
    title: 'a commit-task killed taking its decision back from an aborted job leaves a dir every step refuses',
    key: 'exhaustive-1-1|commit-task / abort|filesystem||0.0.0.0.0.0.0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1',
  },
  // §5.12 no debris: the next driving step at a committed job's handle removes a killed task step's records.
  {
    title: 'a commit-task killed after its job committed leaves its claim and decision where the job was',
    key: 'exhaustive-1-1|commit-task / commit-job|filesystem||0.0.0.0.0.0.0.0.0.0.0.0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1',
  },
  // §5.12 no debris: a lease taken at a job that ended meanwhile leaves neither the handle nor its parents.
  {
    title: 'a commit-job that finds its job aborted leaves the parents its lease file made again',
    key: 'far|commit-job / abort|filesystem|82|4.0.1.1.1.0.2.1',
  },
  // §5.3 a crash and a rerun end where an uninterrupted run ends: abort run again tidies the parents.
  {
    title: 'an abort killed after removing its job dir leaves the empty parents until it runs again',
    key: 'far|commit-task / abort|filesystem|74|0.1.0.1.0.3.0.4.3.2.1.0.0.0.1.0.1.0.1.0.0.0.1.0.0.0.2.1',
  },
  // §5.12 no debris: a killed run's clock probe goes at the next reading on its host.
  {
    title: 'a clean-orphans killed after writing its clock probe leaves the probe in the root it walks',
    key: 'exhaustive-0-1|clean-orphans / commit-task (fresh job)|filesystem||0.0.0.1',
  },
  // §5.12 no debris: a killed adopt's clock probe goes when adopt runs again.
  {
    title: 'an adopt killed after writing its clock probe leaves the probe under the target',
    key: 'exhaustive-0-1|adopt / commit-job|filesystem||0.0.0.0.0.0.0.0.1',
  },
  // §5.12 no debris: a killed commit-task's records alone, at a committed job's handle, go with the next driving step.
  {
    title: "a commit-task killed after its job committed leaves the app attempt's empty dirs at the handle",
    key: 'exhaustive-1-1|commit-task / commit-job|filesystem||0.0.0.0.0.0.0.0.0.0.0.0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1',
  },
  // §5.19 exit codes are honest: a claim committed in an app attempt recover left is not the job's unless carried.
  {
    title: 'abort --task says a committed attempt belongs to the job after recover moved on without it',
    key: 'exhaustive-1-1|commit-task / abort --task / recover|filesystem||0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.0.0.0.0.0.0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.2',
  },
  // §5.15 a late write never counts: a stopped driver's progress record landing after the clean-up is debris.
  {
    title: "a commit-job paused past its lease leaves its progress record after recover's commit",
    key: 'exhaustive-1-0-1|commit-job / recover|filesystem||0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.0.0.0.1',
  },
  // §5.15 a late write never counts: a stopped driver's `_trash` made again after the clean-up is debris.
  {
    title: "a commit-job paused past its lease makes its _trash dir again after recover's commit",
    key: 'exhaustive-1-0-1|commit-job / recover|filesystem||0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.0.0.0.1',
  },
  // §5.19 exit codes are honest: abort --task never says files belong to the job while recover may undo their commit.
  {
    title: 'abort --task says an attempt whose commit-task on another host died belongs to the job',
    key: 'random|commit-task / abort --task / recover|filesystem|191|0.4.2.3.2.0.2.0.0.0.2.0.0.0.3.1.0.1.3.4.0.1.3.3.1.0.0.3.1.1',
  },
  // §4.1 the commit point is one create: a plan no entry names is garbage; §3.3 an entry landing after its plan was
  // removed never counts.
  {
    title: 'a commit-job paused past its lease at its commit point: recover later finds a plan missing',
    key: 'exhaustive-1-0-1|commit-job / recover|filesystem||0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.0.0.0.0.0.0.1',
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
    for (const f of (await exhaustive(sc, r.kind, setting.faults, FIXED_SEARCH_LIMIT)).failures) runs.push(f.result);
  }
  return runs
    .filter((x) => x.violations.length && !x.violations.some((v) => isKnown(v, sc.name)))
    .map((x) => ({ violations: [...x.violations], trace: [...x.trace] }));
}
