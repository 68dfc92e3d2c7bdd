// Schedules the simulation found failing in today's code, kept as regression cases: each is
// expected to fail until its defect is fixed (the test marks them todo; `npm run simulate --
// --known` says which still fail). A violation that matches one of them is reported, not failed on,
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
    title: "a commit-job whose clock is days ahead takes a live abort's lease: both exit 0",
    key: 'far|commit-job / abort|object|94|0.0.5.3.0.1.1.1.1.0.0.0.0.0.0.0.3.0.1',
    violation: /both published \(exit 0\) and aborted|aborting j1, but dt=1 holds/,
  },
  {
    title: "a recover whose clock is ahead takes a live commit-job's lease and calls its plan damaged",
    key: 'far|crowd: two jobs, recover, clean-orphans|object|82|10.10.5.6.4.3.6.1.2.0.2.3.3.8.0.5.1.5.0.0.9.1.3.1.0.3.5.0.0.0.1.0.0.0.3.0.2.1.1.2.0.2.0.2.0.2.0.1.4.1.1',
    violation: /'recover j1' exits 1 calling a manifest damaged .*past its commit point, but its plan is missing/,
  },
  {
    title: "commit-task judges a live commit-job's lease by its own far-off clock: exit 0, task not published",
    key: 'far|commit-task / commit-job|filesystem|169|0.0.1.0.1.0.0.0.1.1.0.0.0.0.1.1.1.1.1.0.3.3.3',
    violation: /t0 committed by .*'commit-task j1 t0\/0' \(exit 0\) is not in the published job/,
  },
  {
    title: 'a deleted newest table-log entry whose .done remains lets an older overwrite commit over newer data',
    key: 'exhaustive-0-0|two jobs, the newer entry deleted by hand|filesystem||',
    violation: /both j2 and j1 committed an overwrite of dt=1/,
    scenario: 'two jobs, the newer entry deleted by hand',
  },
  {
    title: 'clean-orphans --delete with a clock days ahead aborts a job staged seconds earlier',
    key: 'far|clean-orphans / commit-task (fresh job)|filesystem|12|',
    violation: /'clean-orphans --delete' acted on j1, staged 0 s of true time before it ran/,
  },
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
