// One schedule of a scenario, start to end: the table laid out, the setup run alone, the
// processes run under a chooser, then the recovery a user would run, then the invariants.

import { posix } from 'node:path';
import { idsDrawn, installTimers, resetIds, uninstallTimers } from './clock.js';
import { checkAtExit, checkEnd, type Outcome } from './invariants.js';
import type { Scenario } from './scenarios.js';
import { HADOOP_LEFTOVER } from './scenarios.js';
import { envOf, LEASE_TTL_MS, LOG_DIR, STAGING_ROOT, stagingOf, steps, type StepDef, type TaskDef } from './steps.js';
import { World, type Action, type Chooser, type Proc, type ProcClock, type WorldSnapshot } from './world.js';
import type { MemoryStoreKind } from '../src/store/memory.js';

export interface Faults {
  /** Processes that may crash for good, at most (exhaustive: 1). */
  readonly crashes: number;
  /** Switches away from a process that could go on (exhaustive: the preemption bound). */
  readonly preemptions: number;
  /** Processes that may be paused past the lease (1.5 TTL) at any point, their pending call landing when they wake. */
  readonly pauses?: number;
  /** Random part only: store faults, pauses and time jumps are offered. */
  readonly chaos?: {
    readonly faults: number;
    readonly pauses: number;
    readonly maxPauseMs: number;
  };
}

export interface ScheduleOptions {
  readonly kind: MemoryStoreKind;
  readonly faults: Faults;
  /** Each process's host clock; all on one host, on time, when absent. */
  readonly clocks?: readonly ProcClock[];
  /** Each process on a host of its own (a pid on another host is never known dead). */
  readonly hosts?: 'one' | 'each';
  /** How far off a host's clock may be: recovery waits the lease out plus this. */
  readonly maxSkewMs?: number;
}

export interface ScheduleResult {
  readonly violations: readonly string[];
  readonly trace: readonly string[];
  /** Actions the processes took (the schedule's length). */
  readonly actions: number;
}

/**
 * The scheduler's menu at each point: the running process's next call first (no preemption),
 * the other processes' calls while preemptions are left, a crash while crashes are left, and in
 * the random part store faults, pauses and time jumps.
 */
class Menu {
  last: Proc | undefined;
  preemptions = 0;
  crashes = 0;
  faults = 0;
  pauses = 0;
  actions = 0;
  constructor(
    private readonly f: Faults,
    private readonly pair: readonly Proc[],
  ) {}

  options(w: World): Action[] {
    const runnable = w.runnable();
    const out: Action[] = [];
    const cur = this.last && runnable.includes(this.last) ? this.last : undefined;
    const chaos = this.f.chaos;
    const mayPreempt = !cur || this.preemptions < this.f.preemptions;
    const order = cur ? [cur, ...runnable.filter((p) => p !== cur)] : runnable;
    for (const p of order) {
      if (p !== cur && !mayPreempt) continue;
      // The exhaustive part runs a process's calls in the order it sent them; the random part in any.
      const calls = chaos ? p.pending : p.pending.slice(0, 1);
      for (const call of calls) out.push({ kind: 'run', call });
    }
    if (!out.length) return out;
    if (this.crashes < this.f.crashes)
      for (const p of this.pair) if (p.alive && p.pending.length) out.push({ kind: 'crash', proc: p });
    if (this.pauses < (this.f.pauses ?? 0))
      for (const p of order) out.push({ kind: 'pause', proc: p, ms: Math.round(LEASE_TTL_MS * 1.5) });
    if (chaos) {
      if (this.faults < chaos.faults)
        for (const p of order)
          for (const when of ['before', 'after'] as const) out.push({ kind: 'fault', call: p.pending[0]!, when });
      if (this.pauses < chaos.pauses) {
        for (const p of order) out.push({ kind: 'pause', proc: p, ms: chaos.maxPauseMs });
        out.push({ kind: 'advance', ms: chaos.maxPauseMs });
      }
    }
    return out;
  }

  /** Counts what the chosen action spends. */
  spend(a: Action, w: World): void {
    this.actions++;
    if (a.kind === 'run' || a.kind === 'fault') {
      const p = a.call.proc;
      if (
        this.last &&
        p !== this.last &&
        this.last.alive &&
        this.last.pending.length &&
        this.last.pausedUntil <= w.time
      )
        this.preemptions++;
      this.last = p;
      if (a.kind === 'fault') this.faults++;
    } else if (a.kind === 'crash') this.crashes++;
    else this.pauses++;
  }
}

/** A chooser that always takes the first option: a process alone, or recovery. */
export const FIRST: Chooser = { pick: () => 0 };

async function runAlone(w: World, name: string, host: string, pid: number, step: StepDef): Promise<Proc> {
  const p = w.spawn(name, host, pid);
  w.start(p, () => step.run(envOf(w, p)));
  await w.run(FIRST, (x) =>
    x.runnable().flatMap((q) => q.pending.slice(0, 1).map((call) => ({ kind: 'run', call }) as const)),
  );
  return p;
}

export function layTable(w: World, leftover: boolean): Promise<void> {
  const files: Record<string, string> = {
    '/w/sales/dt=1/old.csv': 'initial|dt=1',
    '/w/sales/dt=2/keep.csv': 'initial|dt=2',
    '/w/other/x.csv': 'outside',
  };
  if (leftover) files[`${HADOOP_LEFTOVER}/1/task_20261130221500_0003_m_000000/dt=3/part-m-00000`] = 'hadoop|dt=3';
  return Promise.all(Object.entries(files).map(([p, c]) => w.store.writeFile(p, c))).then(() => undefined);
}

export async function runSchedule(sc: Scenario, chooser: Chooser, opts: ScheduleOptions): Promise<ScheduleResult> {
  installTimers();
  resetIds();
  try {
    return await runInside(sc, chooser, opts);
  } finally {
    uninstallTimers();
  }
}

/** The store after each scenario's setup (the setup runs alone: the same every time). */
const afterSetup = new Map<string, { world: WorldSnapshot; ids: number }>();

async function setUp(sc: Scenario, w: World): Promise<void> {
  const key = `${sc.name}|${w.opts.kind}`;
  const done = afterSetup.get(key);
  if (done) {
    w.restore(done.world);
    resetIds(done.ids);
    return;
  }
  await layTable(w, !!sc.leftover);
  let pid = 10;
  for (const s of sc.setup) {
    const p = await runAlone(w, 'setup', 'h0', pid++, s);
    if (p.exitCode !== 0) throw new Error(`setup step '${s.label}' exited ${p.exitCode}: ${String(p.error)}`);
  }
  w.procs.length = 0;
  w.trace.length = 0;
  afterSetup.set(key, { world: w.snapshot(), ids: idsDrawn() });
}

async function runInside(sc: Scenario, chooser: Chooser, opts: ScheduleOptions): Promise<ScheduleResult> {
  const w = new World({ kind: opts.kind });
  await setUp(sc, w);
  w.time += sc.idleMs ?? 0;
  w.log(`--- ${sc.name} (${opts.kind}): ${sc.procs.map((s, i) => `P${i + 1} ${s.label}`).join(', ')}`);

  const outcomes: Outcome[] = [];
  const violations: string[] = [];
  w.onExit = (p) => {
    const o = outcomes.find((x) => x.proc === p);
    if (o) violations.push(...checkAtExit(w, sc, o, outcomes));
  };
  const pair = sc.procs.map((s, i) => {
    const host = opts.hosts === 'each' ? `h${i + 1}` : 'h1';
    const p = w.spawn(`P${i + 1}`, host, 100 + i, opts.clocks?.[i]);
    outcomes.push({ proc: p, step: s, phase: 'pair' });
    return p;
  });
  pair.forEach((p, i) => w.start(p, () => sc.procs[i]!.run(envOf(w, p))));
  const menu = new Menu(opts.faults, pair);
  const counting: Chooser = {
    pick: (o, world) => {
      const i = chooser.pick(o, world);
      menu.spend(o[i]!, world);
      return i;
    },
  };
  try {
    await w.run(counting, (x) => menu.options(x));
  } catch (e) {
    violations.push(`the processes never ended: ${(e as Error).message}`);
    return { violations, trace: w.trace.map(line), actions: menu.actions };
  }

  // What a user runs next: once every lease the processes held could have run out.
  w.time += 2 * LEASE_TTL_MS + 2 * (opts.maxSkewMs ?? 0) + 1000;
  w.log('--- recovery');
  const ran = await recoverAll(w, sc, outcomes);
  violations.push(...ran);
  violations.push(...(await checkEnd(w, sc, outcomes)));
  return { violations, trace: w.trace.map(line), actions: menu.actions };
}

const line = (l: { t: number; text: string }) => `${(l.t / 1000).toFixed(3).padStart(10)}s  ${l.text}`;

/**
 * The steps a user runs after: for each job left in the staging root, recover, run again the
 * tasks it names, commit-job; a job that cannot commit any more (lost to another, aborted
 * meanwhile) is aborted. A killed abort is run again, and clean-orphans --delete runs once any step
 * was killed. A Hadoop leftover still in the table is adopted and committed.
 */
async function recoverAll(w: World, sc: Scenario, outcomes: Outcome[]): Promise<string[]> {
  const problems: string[] = [];
  let pid = 300;
  const run = async (s: StepDef): Promise<Proc> => {
    const p = await runAlone(w, 'R', 'h1', pid++, s);
    outcomes.push({ proc: p, step: s, phase: 'recovery' });
    return p;
  };
  const expect = (p: Proc, s: StepDef, ok: readonly number[]) => {
    if (!ok.includes(p.exitCode!))
      problems.push(`recovery: ${s.label} exits ${p.exitCode}: ${String((p.error as Error)?.message ?? '')}`);
  };
  for (let round = 0; round < 3; round++) {
    const handles = (await w.store.list(STAGING_ROOT)).filter((e) => e.kind === 'dir' && e.path !== LOG_DIR);
    if (!handles.length) break;
    for (const h of handles) {
      const jobId = h.name;
      const defs = sc.jobs.find((j) => j.id === jobId)?.taskDefs ?? [];
      const rec = steps.recover(jobId);
      const r = await run(rec);
      expect(r, rec, sc.damaged ? [0, 1, 2, 4, 5, 6] : [0, 2, 4, 5, 6]);
      if (r.exitCode === 0) {
        const res = r.result as { state: string; tasksToRun: readonly string[]; appAttempt: number | null };
        if (res.state !== 'staged') continue;
        for (const task of res.tasksToRun) {
          const def: TaskDef = { ...(defs.find((d) => d.task === task) ?? { task, files: ['z.csv'] }), attempt: 7 };
          for (const s of [steps.stage(jobId, def), steps.commitTask(jobId, def)]) expect(await run(s), s, [0]);
        }
      }
      if (r.exitCode === 2 && !(await w.store.stat(stagingOf(jobId)))) continue;
      const cj = steps.commitJob(jobId);
      const c = await run(cj);
      // A job staged again under a used id contends with no one: only a late step of the first job
      // could stop it (its records left in the new job).
      expect(c, cj, sc.damaged ? [0, 1, 2, 4, 5, 6] : sc.idReused ? [0, 2] : [0, 2, 4, 5, 6]);
      if (c.exitCode === 0 || (c.exitCode === 2 && !(await w.store.stat(stagingOf(jobId))))) continue;
      const ab = steps.abort(jobId);
      expect(await run(ab), ab, sc.damaged ? [0, 1, 4, 6] : [0]);
    }
  }
  // A killed abort (or one a store fault failed) is finished by running it again; what other such
  // steps left outside any job (the default layout's empty parents, a clock probe) is clean-orphans --delete's.
  const killed = outcomes.filter(
    (x) => x.phase === 'pair' && (x.proc.state === 'crashed' || (x.proc.exitCode !== 0 && x.proc.faulted > 0)),
  );
  for (const o of killed) if (o.step.kind === 'abort') expect(await run(o.step), o.step, [0, 2, 4, 6]);
  if (killed.length) {
    const co = steps.cleanOrphans();
    expect(await run(co), co, [0]);
  }
  if (sc.leftover && (await w.store.stat(HADOOP_LEFTOVER))) {
    const ad = steps.adopt(HADOOP_LEFTOVER);
    const a = await run(ad);
    expect(a, ad, [0]);
    const handle = (a.result as { handle?: string } | undefined)?.handle;
    if (a.exitCode === 0 && handle) {
      const jobId = posix.basename(handle.replace(/^memory:\/\//, ''));
      const cj = steps.commitJob(jobId);
      expect(await run(cj), cj, [0]);
    }
  }
  return problems;
}
