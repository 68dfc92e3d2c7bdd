// Schedules the simulation found failing in today's code, kept as regression cases: each is
// expected to fail until its defect is fixed (the test marks them todo; `npm run simulate --
// --known` says which still fail), then moves to sim/fixed-failures.ts. A violation that matches
// one of them is reported, not failed on, by the exhaustive and random runs.

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
    title: "a recover paused past its lease writes _job.yaml after the job committed: abort then says 'aborted'",
    key: 'exhaustive-0-0-1|commit-job / recover|filesystem||1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1',
    violation: /both published \(exit 0\) and aborted by 'abort j1' \(exit 0\)/,
  },
  {
    title: "a commit-task exits 4 'another run moved its files' while its attempt is published",
    key: 'random|commit-task / abort --task / recover|filesystem|193|5.0.3.13.0.1.0.2.0.3.0.0.1.0.0.0.0.1.2.3.1.2.8.1.0.0.0.0.0.4',
    violation: /exited 4 \(another run of attempt_\S+ moved its files while this one committed, and has not finished/,
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
