// The deterministic simulation, CI-sized: the real steps over the in-memory store, every store
// call a point where the harness picks what happens next. Every pair's schedules with one
// preemption, and with one crash at every point followed by recovery; random schedules of three
// or more processes on hosts with drifting clocks, store faults and pauses, by seed. Failures the
// simulation found in today's code are todo cases until fixed (sim/known-failures.ts); fixed
// ones must pass (sim/fixed-failures.ts).
// The full run is `npm run simulate`.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { installTimers, uninstallTimers } from '../sim/clock.js';
import {
  exhaustive,
  NTP_BOUNDS,
  randomRun,
  RandomChooser,
  randomSetting,
  replayKey,
  exhaustiveMode,
} from '../sim/explore.js';
import { FIXED_FAILURES, runFixed } from '../sim/fixed-failures.js';
import { isKnown, KNOWN_FAILURES, runKnown } from '../sim/known-failures.js';
import { CROWDS, SCENARIOS } from '../sim/scenarios.js';
import { runSchedule, type Faults } from '../sim/schedule.js';
import type { MemoryStoreKind } from '../src/store/memory.js';

before(installTimers);
after(uninstallTimers);

/** Violations no known failure accounts for, each with its replay key and trace. */
function unexplained(
  failures: readonly { scenario: string; result: { violations: readonly string[]; trace: readonly string[] } }[],
  key: (i: number) => string,
): string[] {
  const out: string[] = [];
  failures.forEach((f, i) => {
    // A schedule that shows a known defect shows its other symptoms too: it is that defect's.
    const fresh = f.result.violations.some((v) => isKnown(v, f.scenario)) ? [] : f.result.violations;
    if (fresh.length)
      out.push(`${fresh.join('\n')}\nreplay: npm run simulate -- --replay '${key(i)}'\n${f.result.trace.join('\n')}`);
  });
  return out;
}

/** The pairs whose commit point a driver paused past its lease may reach late (protocol.md §4.1, §5.15). */
const COMMIT_POINT_PAIRS = [
  'commit-job / commit-job',
  'commit-job / recover',
  'commit-job / abort',
  'two jobs commit-job over one partition',
];

const BOUNDS: readonly { faults: Faults; kinds: readonly MemoryStoreKind[]; only?: readonly string[] }[] = [
  { faults: { preemptions: 1, crashes: 0 }, kinds: ['filesystem', 'object'] },
  { faults: { preemptions: 0, crashes: 1 }, kinds: ['filesystem'] },
  { faults: { preemptions: 0, crashes: 0, pauses: 1 }, kinds: ['filesystem'], only: COMMIT_POINT_PAIRS },
];

describe('simulation: every schedule of each pair within the bound', () => {
  for (const sc of SCENARIOS) {
    for (const { faults, kinds, only } of BOUNDS) {
      if (only && !only.includes(sc.name)) continue;
      // Three processes on the object store only in the full run: the CI share stays within its time.
      for (const kind of sc.procs.length > 2 ? kinds.filter((k) => k === 'filesystem') : kinds) {
        const what = faults.crashes
          ? 'a crash at every point, then recovery'
          : faults.pauses
            ? 'a pause past the lease at every point'
            : 'one preemption at every point';
        test(`${sc.name} on ${kind}: ${what}`, async (t) => {
          const r = await exhaustive(sc, kind, faults);
          t.diagnostic(`${r.schedules} schedules, ${(r.ms / 1000).toFixed(1)} s`);
          for (const f of r.failures)
            for (const v of f.result.violations) if (isKnown(v, sc.name)) t.diagnostic(`known failure: ${v}`);
          const fresh = unexplained(r.failures, (i) => replayKey(r.failures[i]!, exhaustiveMode(faults)));
          assert.deepEqual(fresh, []);
        });
      }
    }
  }
});

describe('simulation: random schedules by seed', () => {
  const SEEDS = Number(process.env.STAGECOMMIT_SIM_SEEDS ?? 40);
  const pool = [...CROWDS, ...SCENARIOS];
  test(`${SEEDS} seeds: 3+ processes on their own hosts, clocks off by up to 5 s, faults, pauses`, async (t) => {
    const fresh: string[] = [];
    for (let seed = 1; seed <= SEEDS; seed++) {
      const sc = pool[seed % pool.length]!;
      const kind: MemoryStoreKind = seed % 2 ? 'filesystem' : 'object';
      const f = await randomRun(sc, kind, seed, NTP_BOUNDS);
      if (f) fresh.push(...unexplained([f], () => replayKey(f, 'random')));
    }
    t.diagnostic(`${SEEDS} schedules`);
    assert.deepEqual(fresh, []);
  });

  test('a seed replays: the same schedule, action for action', async () => {
    const sc = CROWDS[0]!;
    const run = () => runSchedule(sc, new RandomChooser(7), randomSetting(sc, 'filesystem', 7, NTP_BOUNDS));
    const [a, b] = [await run(), await run()];
    assert.ok(a.actions > 20, 'the crowd takes many actions');
    assert.deepEqual(a.trace, b.trace);
  });
});

describe("simulation: failures found in today's code (todo until fixed)", () => {
  for (const k of KNOWN_FAILURES) {
    test(k.title, { todo: 'a known defect: sim/known-failures.ts' }, async () => {
      const r = await runKnown(k);
      assert.deepEqual(r.violations, [], r.trace.join('\n'));
    });
  }
});

describe('simulation: failures found once and fixed since', () => {
  for (const k of FIXED_FAILURES) {
    test(`holds: ${k.title}`, async () => {
      const runs = await runFixed(k);
      assert.deepEqual(
        runs.map((r) => r.violations),
        [],
        runs.map((r) => r.trace.join('\n')).join('\n\n'),
      );
    });
  }
});
