// npm run simulate: the exhaustive part over every pair, then the random part over the crowds
// and pairs, by seed. A failure prints its readable trace, the seed and the key that replays it.
//
//   npm run simulate -- [--pair TEXT] [--store filesystem|object] [--preemptions N] [--limit N]
//                       [--crashes N] [--pauses N] [--seed N] [--count N] [--far-clocks] [--only exhaustive|random]
//                       [--replay KEY] [--known] [--stop-first] [--quiet] [--help]

import { parseArgs } from 'node:util';
import type { MemoryStoreKind } from '../src/store/memory.js';
import {
  CHAOS,
  exhaustive,
  FAR_BOUNDS,
  normalise,
  NTP_BOUNDS,
  parseReplayKey,
  randomRun,
  randomSetting,
  Replay,
  replayKey,
  settingFor,
  exhaustiveMode,
  shrink,
  type Failure,
} from './explore.js';
import { FIXED_FAILURES, runFixed } from './fixed-failures.js';
import { isKnown, KNOWN_FAILURES, runKnown } from './known-failures.js';
import { CROWDS, SCENARIOS, type Scenario } from './scenarios.js';
import { runSchedule, type Faults } from './schedule.js';
import { installTimers } from './clock.js';

const { values } = parseArgs({
  options: {
    pair: { type: 'string' },
    store: { type: 'string' },
    preemptions: { type: 'string', default: '1' },
    crashes: { type: 'string', default: '1' },
    pauses: { type: 'string', default: '0' },
    limit: { type: 'string' },
    seed: { type: 'string', default: '1' },
    count: { type: 'string', default: '200' },
    'far-clocks': { type: 'boolean', default: false },
    only: { type: 'string' },
    replay: { type: 'string' },
    known: { type: 'boolean', default: false },
    quiet: { type: 'boolean', default: false },
    'stop-first': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});

const USAGE = `npm run simulate -- [options]   (or: node dist/sim/main.js [options])
  --pair TEXT            only the scenarios whose name holds TEXT
  --store KIND           filesystem or object (default: both)
  --only PART            exhaustive or random (default: both)
  --preemptions N        exhaustive: switches away from a process that could go on (default 1)
  --crashes N            exhaustive: processes killed for good, then recovery (default 1)
  --pauses N             exhaustive: processes paused past their lease (default 0)
  --limit N              exhaustive: at most N schedules per scenario and store
  --seed N --count N     random: seeds N.. (default 1, 200)
  --far-clocks           random: clocks days off, not seconds
  --stop-first           stop each scenario at its first failure not known, and shrink it
  --quiet                one line per failure, not its trace
  --replay KEY           print a failure's trace again
  --known                which known failures still fail; whether a fixed one fails again`;

const ALL = [...SCENARIOS, ...CROWDS];
const fresh = (vs: readonly string[], scenario: string) => !vs.some((v) => isKnown(v, scenario));
const kinds: MemoryStoreKind[] = values.store ? [values.store as MemoryStoreKind] : ['filesystem', 'object'];
const chosen = (list: readonly Scenario[]) =>
  list.filter((s) => !values.pair || s.name.toLowerCase().includes(values.pair.toLowerCase()));
const byName = (name: string) => {
  const sc = ALL.find((s) => s.name === name);
  if (!sc) throw new Error(`no scenario '${name}'`);
  return sc;
};

function printFailure(f: Failure, mode: string): void {
  console.log(`\nFAIL ${f.scenario} on ${f.kind}${f.seed === undefined ? '' : ` (seed ${f.seed})`}`);
  for (const v of f.result.violations) console.log(`  violation: ${v}`);
  console.log(`  schedule (${f.result.actions} actions, ${f.choices.length} choices):`);
  for (const l of f.result.trace) console.log(`    ${l}`);
  console.log(`  replay: npm run simulate -- --replay '${replayKey(f, mode)}'`);
}

async function replay(key: string): Promise<number> {
  const k = parseReplayKey(key);
  const sc = byName(k.scenario);
  const r = await runSchedule(sc, new Replay(k.choices), settingFor(k.mode, sc, k.kind, k.seed));
  printFailure({ scenario: sc.name, kind: k.kind, seed: k.seed, choices: k.choices, result: r }, k.mode);
  return r.violations.length ? 1 : 0;
}

function exhaustiveFaults(): Faults {
  return { crashes: Number(values.crashes), preemptions: Number(values.preemptions), pauses: Number(values.pauses) };
}

async function main(): Promise<number> {
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  installTimers();
  if (values.replay) return replay(values.replay);
  if (values.known) {
    let still = 0;
    for (const k of KNOWN_FAILURES) {
      const r = await runKnown(k);
      still += r.violations.length ? 1 : 0;
      console.log(`${r.violations.length ? 'still fails' : 'FIXED      '}  ${k.title}`);
    }
    console.log(`${still} of ${KNOWN_FAILURES.length} known failures still fail`);
    let again = 0;
    for (const k of FIXED_FAILURES) {
      const runs = await runFixed(k);
      again += runs.length ? 1 : 0;
      for (const r of runs) console.log(`FAILS AGAIN  ${k.title}\n  violation: ${r.violations[0]}`);
    }
    console.log(`${again} of ${FIXED_FAILURES.length} fixed failures fail again`);
    return 0;
  }
  const limit = values.limit ? Number(values.limit) : Infinity;
  const found = new Map<string, Failure & { mode: string }>();
  const t0 = Date.now();
  let total = 0;
  if (values.only !== 'random') {
    const faults = exhaustiveFaults();
    console.log(
      `exhaustive: every schedule with at most ${faults.preemptions} preemption(s), ${faults.crashes} crash(es), ${faults.pauses} pause(s) past the lease`,
    );
    for (const sc of chosen(SCENARIOS)) {
      for (const kind of kinds) {
        const r = await exhaustive(sc, kind, faults, limit, 5, (vs) => fresh(vs, sc.name), values['stop-first']);
        total += r.schedules;
        const distinct = new Set(r.failures.map((f) => normalise(f.result.violations[0]!)));
        console.log(
          `  ${sc.name.padEnd(46)} ${kind.padEnd(10)} ${String(r.schedules).padStart(7)} schedules${r.complete ? '' : r.firstFailureAt ? ' (stopped at the first failure)' : ' (cut at --limit)'}  ${(r.ms / 1000).toFixed(1)}s  ${distinct.size ? `${distinct.size} failing` : 'ok'}`,
        );
        if (r.firstFailureAt && values['stop-first']) {
          // The first failure, shrunk: the shortest schedule found that fails the same way.
          const first = r.failures[0]!;
          const small = await shrink(sc, first, { kind, faults });
          r.failures[0] = small;
          console.log(
            `    first failure at schedule ${r.firstFailureAt}, ${first.result.actions} actions; shrunk to ${small.result.actions}`,
          );
        } else if (r.firstFailureAt)
          console.log(`    first failure at schedule ${r.firstFailureAt}, ${r.failures[0]!.result.actions} actions`);
        for (const f of r.failures) {
          const key = normalise(f.result.violations[0]!);
          if (!found.has(key)) found.set(key, { ...f, mode: exhaustiveMode(faults) });
        }
      }
    }
  }
  if (values.only !== 'exhaustive') {
    const seed0 = Number(values.seed);
    const count = Number(values.count);
    const bounds = values['far-clocks'] ? FAR_BOUNDS : NTP_BOUNDS;
    const mode = values['far-clocks'] ? 'far' : 'random';
    const pool = chosen([...CROWDS, ...SCENARIOS]);
    console.log(
      `random: seeds ${seed0}..${seed0 + count - 1}, clocks within ±${bounds.maxSkewMs} ms (rate ±${bounds.maxDrift}), up to ${CHAOS.crashes} crashes, ${CHAOS.chaos!.faults} store faults, ${CHAOS.chaos!.pauses} pauses`,
    );
    let fails = 0;
    let ran = 0;
    for (let i = 0; i < count; i++) {
      ran++;
      const seed = seed0 + i;
      const sc = pool[seed % pool.length]!;
      const kind = kinds[Math.floor(seed / pool.length) % kinds.length]!;
      const f = await randomRun(sc, kind, seed, bounds);
      total++;
      if (!f) continue;
      fails++;
      const key = normalise(f.result.violations[0]!);
      if (found.has(key)) continue;
      const small = await shrink(sc, f, randomSetting(sc, kind, seed, bounds));
      found.set(key, { ...small, mode });
      if (values['stop-first'] && fresh(f.result.violations, sc.name)) {
        console.log(
          `  first failure at seed ${seed} (schedule ${i + 1}), ${f.result.actions} actions, shrunk to ${small.result.actions}`,
        );
        break;
      }
    }
    console.log(`  ${ran} seeds, ${fails} failing`);
  }
  for (const f of found.values()) {
    if (values.quiet)
      console.log(`FAIL ${f.scenario} ${f.kind}: ${f.result.violations[0]}\n  replay '${replayKey(f, f.mode)}'`);
    else printFailure(f, f.mode);
  }
  console.log(`\n${total} schedules in ${((Date.now() - t0) / 1000).toFixed(1)}s; ${found.size} distinct failure(s)`);
  return found.size ? 1 : 0;
}

process.exitCode = await main();
