// How schedules are chosen: every one in turn (depth first over the choice points, bounded by
// preemptions and crashes), at random from a seed, or replayed from a list of choices; and how a
// failing one is shrunk to a short schedule that still fails.

import type { MemoryStoreKind } from '../src/store/memory.js';
import type { Scenario } from './scenarios.js';
import { runSchedule, type Faults, type ScheduleOptions, type ScheduleResult } from './schedule.js';
import { DAY_MS, LEASE_TTL_MS } from './steps.js';
import type { Action, Chooser, ProcClock } from './world.js';

/** Replays `choices`, then takes option 0 (go on with the running process) once they run out. */
export class Replay implements Chooser {
  readonly taken: { i: number; n: number }[] = [];
  constructor(private readonly choices: readonly number[]) {}
  pick(options: readonly Action[]): number {
    const k = this.taken.length;
    const i = k < this.choices.length ? Math.min(this.choices[k]!, options.length - 1) : 0;
    this.taken.push({ i, n: options.length });
    return i;
  }
}

export interface Failure {
  readonly scenario: string;
  readonly kind: MemoryStoreKind;
  readonly seed?: number;
  readonly choices: readonly number[];
  readonly result: ScheduleResult;
}

export interface ExhaustiveReport {
  readonly scenario: string;
  readonly kind: MemoryStoreKind;
  readonly schedules: number;
  /** Schedules whose run stopped at the limit (the search was cut off). */
  readonly complete: boolean;
  readonly failures: Failure[];
  /** How many schedules ran until the first failing one (0: none failed). */
  readonly firstFailureAt: number;
  readonly ms: number;
}

/**
 * Every schedule of `sc` within the bounds, depth first: each run replays a prefix of choices and
 * then takes option 0 at every later point; the next prefix moves the deepest choice that has an
 * option left on by one. Stops after `limit` schedules.
 */
export async function exhaustive(
  sc: Scenario,
  kind: MemoryStoreKind,
  faults: Faults,
  limit = Infinity,
  keepFailures = 5,
  /** Which failures count (default: all); the search stops at the first that counts when `stopAtFirst`. */
  filter: (violations: readonly string[]) => boolean = () => true,
  stopAtFirst = false,
): Promise<ExhaustiveReport> {
  const t0 = Date.now();
  let prefix: number[] = [];
  let schedules = 0;
  const failures: Failure[] = [];
  const seen = new Set<string>();
  let firstFailureAt = 0;
  for (;;) {
    const chooser = new Replay(prefix);
    const result = await runSchedule(sc, chooser, { kind, faults });
    schedules++;
    const choices = chooser.taken.map((t) => t.i);
    if (result.violations.length && filter(result.violations)) {
      firstFailureAt ||= schedules;
      const key = result.violations.map(normalise).join('\n');
      if (!seen.has(key) && failures.length < keepFailures) {
        seen.add(key);
        failures.push({ scenario: sc.name, kind, choices, result });
      }
    }
    const t = chooser.taken;
    while (t.length && t[t.length - 1]!.i + 1 >= t[t.length - 1]!.n) t.pop();
    const done = (complete: boolean): ExhaustiveReport => {
      return { scenario: sc.name, kind, schedules, complete, failures, firstFailureAt, ms: Date.now() - t0 };
    };
    if (!t.length) return done(true);
    if (schedules >= limit || (stopAtFirst && firstFailureAt)) return done(false);
    prefix = t.map((x) => x.i);
    prefix[prefix.length - 1]!++;
  }
}

/** A violation without the numbers that differ from one schedule to the next (pids, counts). */
export function normalise(v: string): string {
  return v.replace(/P\d+@h\d+:\d+/g, 'P').replace(/\d+/g, '#');
}

/** mulberry32: a small seeded generator, the same on every platform. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface RandomBounds {
  /** How far a host's clock may be off, either way (ms). */
  readonly maxSkewMs: number;
  /** How far its rate may be off (0.001: a millisecond a second). */
  readonly maxDrift: number;
}

/** The docs promise nothing yet; the default keeps hosts within a few seconds, as NTP does. */
export const NTP_BOUNDS: RandomBounds = { maxSkewMs: 5_000, maxDrift: 0.0005 };
/** Clocks off by any amount: days ahead or behind (what item 4 of the protocol issue asks to survive). */
export const FAR_BOUNDS: RandomBounds = { maxSkewMs: 3 * DAY_MS, maxDrift: 0.01 };

export const CHAOS: Faults = {
  crashes: 2,
  preemptions: Infinity,
  chaos: { faults: 3, pauses: 2, maxPauseMs: Math.round(LEASE_TTL_MS * 1.5) },
};

/** The random part's setting for a seed: every process on a host of its own, with its own clock. */
export function randomSetting(
  sc: Scenario,
  kind: MemoryStoreKind,
  seed: number,
  bounds: RandomBounds,
): ScheduleOptions {
  const r = prng(seed ^ 0x9e3779b9);
  const clocks: ProcClock[] = sc.procs.map(() => ({
    offsetMs: Math.round((r() * 2 - 1) * bounds.maxSkewMs),
    rate: 1 + (r() * 2 - 1) * bounds.maxDrift,
  }));
  return { kind, faults: CHAOS, clocks, hosts: 'each', maxSkewMs: bounds.maxSkewMs };
}

/** Picks at random, the store's calls far more often than a crash, fault, pause or time jump. */
export class RandomChooser implements Chooser {
  readonly taken: number[] = [];
  private readonly r: () => number;
  constructor(seed: number) {
    this.r = prng(seed);
  }
  pick(options: readonly Action[]): number {
    const weight = (a: Action) => (a.kind === 'run' ? 1 : a.kind === 'crash' ? 0.01 : 0.015);
    const total = options.reduce((s, a) => s + weight(a), 0);
    let x = this.r() * total;
    let i = 0;
    for (; i < options.length - 1; i++) {
      x -= weight(options[i]!);
      if (x < 0) break;
    }
    this.taken.push(i);
    return i;
  }
}

export async function randomRun(
  sc: Scenario,
  kind: MemoryStoreKind,
  seed: number,
  bounds: RandomBounds,
): Promise<Failure | null> {
  const chooser = new RandomChooser(seed);
  const result = await runSchedule(sc, chooser, randomSetting(sc, kind, seed, bounds));
  return result.violations.length ? { scenario: sc.name, kind, seed, choices: chooser.taken, result } : null;
}

/**
 * Shrinks a failing schedule: drops runs of choices and lowers single ones to 0 (go on with the
 * running process) while the schedule still fails with the same first violation; then stops at
 * the first choice after which only 0s follow.
 */
export async function shrink(sc: Scenario, f: Failure, opts: ScheduleOptions, budget = 400): Promise<Failure> {
  const want = normalise(f.result.violations[0]!);
  let best = { choices: trimZeros(f.choices), result: f.result };
  let runs = 0;
  const tryChoices = async (cs: number[]): Promise<boolean> => {
    if (runs++ >= budget) return false;
    const chooser = new Replay(cs);
    const result = await runSchedule(sc, chooser, opts);
    if (!result.violations.some((v) => normalise(v) === want)) return false;
    best = { choices: trimZeros(chooser.taken.map((t) => t.i)), result };
    return true;
  };
  for (let chunk = Math.max(1, best.choices.length >> 1); chunk >= 1; chunk >>= 1) {
    for (let at = 0; at + chunk <= best.choices.length;) {
      const cs = [...best.choices.slice(0, at), ...best.choices.slice(at + chunk)];
      if (!(await tryChoices(cs))) at += chunk;
    }
  }
  for (let i = 0; i < best.choices.length; i++) {
    for (const v of best.choices[i]! > 1 ? [0, 1] : [0]) {
      if (best.choices[i]! <= v) continue;
      const cs = [...best.choices];
      cs[i] = v;
      if (await tryChoices(cs)) break;
    }
  }
  return { ...f, choices: best.choices, result: best.result };
}

function trimZeros(cs: readonly number[]): number[] {
  let n = cs.length;
  while (n > 0 && cs[n - 1] === 0) n--;
  return cs.slice(0, n);
}

/** How a failure is replayed: `npm run simulate -- --replay '<this>'`. */
export function replayKey(f: Pick<Failure, 'scenario' | 'kind' | 'seed' | 'choices'>, mode: string): string {
  return `${mode}|${f.scenario}|${f.kind}|${f.seed ?? ''}|${trimZeros(f.choices).join('.')}`;
}

export function parseReplayKey(key: string): {
  mode: string;
  scenario: string;
  kind: MemoryStoreKind;
  seed: number | undefined;
  choices: number[];
} {
  const [mode, scenario, kind, seed, choices] = key.split('|');
  return {
    mode: mode!,
    scenario: scenario!,
    kind: kind as MemoryStoreKind,
    seed: seed ? Number(seed) : undefined,
    choices: choices ? choices.split('.').map(Number) : [],
  };
}

/** The mode of an exhaustive search, as a replay key names it: its bounds. */
export const exhaustiveMode = (f: Faults): string =>
  `exhaustive-${f.preemptions}-${f.crashes}${f.pauses ? `-${f.pauses}` : ''}`;

/** The setting a replay key's mode stands for: the exhaustive bounds, or the random part's seed and clocks. */
export function settingFor(
  mode: string,
  sc: Scenario,
  kind: MemoryStoreKind,
  seed: number | undefined,
): ScheduleOptions {
  const ex = /^exhaustive-(\w+)-(\d+)(?:-(\d+))?$/.exec(mode);
  if (ex) return { kind, faults: { preemptions: Number(ex[1]), crashes: Number(ex[2]), pauses: Number(ex[3] ?? 0) } };
  if (mode === 'random' || mode === 'far')
    return randomSetting(sc, kind, seed ?? 0, mode === 'far' ? FAR_BOUNDS : NTP_BOUNDS);
  throw new Error(`unknown mode '${mode}' in a replay key`);
}
