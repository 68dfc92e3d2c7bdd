// Schedules the simulation found failing in today's code, kept as regression cases: each is
// expected to fail until its defect is fixed (the test marks them todo; `npm run simulate --
// --known` says which still fail), then moves to sim/fixed-failures.ts. A violation that matches one of them is reported, not failed on,
// by the exhaustive and random runs.

import { parseReplayKey, Replay, settingFor } from './explore.js';
import { CROWDS, SCENARIOS } from './scenarios.js';
import { runSchedule, type ScheduleResult } from './schedule.js';

export interface KnownFailure {
  readonly title: string;
  /** The replay key: mode|scenario|store|seed|choices. */
  readonly key: string;
  /** What the violation says (its first line), as found. */
  readonly violation: RegExp;
  /** A scenario that exists to show this defect: every violation in it is this defect's (its crashes leave it to a person). */
  readonly scenario?: string;
}

export const KNOWN_FAILURES: readonly KnownFailure[] = [
  {
    title: "stage that takes its files back after an abort leaves the default layout's empty parents",
    key: 'exhaustive-1-0|stage / abort|filesystem||0.0.0.0.1',
    violation: /an empty dir left after recovery: \/w\/\.stagecommit(\/sales)?$/,
  },
  {
    title: 'a commit-task killed taking its decision back from an aborted job leaves a dir every step refuses',
    key: 'exhaustive-1-1|commit-task / abort|filesystem||0.0.0.0.0.0.0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1',
    violation:
      /_job\.yaml: is missing, but the staging dir still holds a job's files \(_temporary\/0\/_(decisions|claims)\)/,
  },
  {
    title: 'a commit-task killed after its job committed leaves its claim and decision where the job was',
    key: 'exhaustive-1-1|commit-task / commit-job|filesystem||0.0.0.0.0.0.0.0.0.0.0.0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1',
    violation: /left after recovery: \/w\/\.stagecommit\/sales\/j1\/_temporary\/0\/_(claims|decisions)\//,
  },
  {
    title: 'a commit-job that finds its job aborted leaves the parents its lease file made again',
    key: 'far|commit-job / abort|filesystem|82|4.0.1.1.1.0.2.1',
    violation: /an empty dir left after recovery: \/w\/\.stagecommit(\/sales)?$/,
  },
  {
    title: 'an abort killed after removing its job dir leaves the empty parents; no recovery removes them',
    key: 'far|commit-task / abort|filesystem|74|0.1.0.1.0.3.0.4.3.2.1.0.0.0.1.0.1.0.1.0.0.0.1.0.0.0.2.1',
    violation: /an empty dir left after recovery: \/w\/\.stagecommit(\/sales)?$/,
  },
  {
    title: 'a clean-orphans killed after writing its clock probe leaves the probe in the root it walks',
    key: 'exhaustive-0-1|clean-orphans / commit-task (fresh job)|filesystem||0.0.0.1',
    violation: /a file outside the table and its staging dirs: .*clock-probe\/probe$/,
  },
  {
    title: 'an adopt killed after writing its clock probe leaves the probe under the target',
    key: 'exhaustive-0-1|adopt / commit-job|filesystem||0.0.0.0.0.0.0.0.1',
    violation: /left in the table after recovery: .*clock-probe\/probe$/,
  },
];

export function isKnown(violation: string, scenario: string): KnownFailure | undefined {
  return KNOWN_FAILURES.find((k) => k.violation.test(violation) || k.scenario === scenario);
}

export async function runKnown(k: KnownFailure): Promise<ScheduleResult> {
  const r = parseReplayKey(k.key);
  const sc = [...SCENARIOS, ...CROWDS].find((s) => s.name === r.scenario);
  if (!sc) throw new Error(`no scenario '${r.scenario}'`);
  return runSchedule(sc, new Replay(r.choices), settingFor(r.mode, sc, r.kind, r.seed));
}
