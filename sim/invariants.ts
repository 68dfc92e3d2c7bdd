// What must hold, as predicates over the store: when a step exits (its promise, judged against
// the store as it is at that moment) and once recovery has finished (the table, the staging
// root, everything outside them, and whether the exit codes told the truth).

import { posix } from 'node:path';
import { CorruptManifestError, InternalError, StageCommitError, StoreError } from '../src/errors.js';
import type { MemoryStore } from '../src/store/memory.js';
import type { Scenario } from './scenarios.js';
import { DAY_MS, LOG_DIR, STAGING_ROOT, TABLE, type StepDef } from './steps.js';
import type { Proc, World } from './world.js';

export interface Outcome {
  readonly proc: Proc;
  readonly step: StepDef;
  readonly phase: 'pair' | 'recovery';
}

/** Every file in the store and its text, as it is now (read in one go: no process runs meanwhile). */
export function filesNow(store: MemoryStore): Map<string, string> {
  const files = (store as unknown as { files: Map<string, { data: Buffer }> }).files;
  return new Map([...files].map(([k, f]) => [k, f.data.toString('utf8')]));
}

interface Source {
  readonly job: string;
  readonly task: string;
  readonly attempt: string;
  readonly name: string;
}

function sourceOf(text: string): Source | null {
  const [job, task, attempt, name] = text.split('|');
  return job && task && attempt && name ? { job, task, attempt, name } : null;
}

const PARTITION = `${TABLE}/dt=1`;

/** The data files of the partition the jobs overwrite, by what wrote them. */
function partition(files: Map<string, string>): { initial: boolean; sources: Source[]; strays: string[] } {
  const sources: Source[] = [];
  const strays: string[] = [];
  let initial = false;
  for (const [path, text] of files) {
    if (!path.startsWith(PARTITION + '/')) continue;
    const name = posix.basename(path);
    if (name.startsWith('_') || name.startsWith('.')) continue;
    if (text === 'initial|dt=1') initial = true;
    else {
      const s = sourceOf(text);
      if (s) sources.push(s);
      else strays.push(path);
    }
  }
  return { initial, sources, strays };
}

const ok = (o: Outcome) => o.proc.state === 'exited' && o.proc.exitCode === 0;
const result = <T>(o: Outcome) => o.proc.result as T;

interface Leftovers {
  readonly leftovers: readonly { readonly jobId?: string; readonly action: string }[];
}

/** The jobs a step that exited 0 published (not found committed before): commit-job, recover, clean-orphans' roll-forward. */
function published(o: Outcome): string[] {
  if (!ok(o)) return [];
  if (o.step.kind === 'commit-job')
    return result<{ outcome: string }>(o).outcome !== 'already-committed' ? [o.step.jobId!] : [];
  if (o.step.kind === 'recover') return result<{ rolledForward: boolean }>(o).rolledForward ? [o.step.jobId!] : [];
  if (o.step.kind === 'clean-orphans')
    return result<Leftovers>(o).leftovers.flatMap((l) => (l.action === 'rolled-forward' && l.jobId ? [l.jobId] : []));
  return [];
}

/** The jobs a step that exited 0 said are committed: published them, or found them so. */
function sawCommitted(o: Outcome): string[] {
  if (!ok(o)) return [];
  if (o.step.kind === 'commit-job') return [o.step.jobId!];
  if (o.step.kind === 'recover') return result<{ state: string }>(o).state === 'committed' ? [o.step.jobId!] : [];
  return published(o);
}

/** The jobs a step that exited 0 aborted: abort, or clean-orphans' removal of a stale job. */
function aborted(o: Outcome): string[] {
  if (!ok(o)) return [];
  if (o.step.kind === 'abort') return result<{ outcome: string }>(o).outcome === 'aborted' ? [o.step.jobId!] : [];
  if (o.step.kind === 'clean-orphans')
    return result<Leftovers>(o).leftovers.flatMap((l) => (l.action === 'deleted' && l.jobId ? [l.jobId] : []));
  return [];
}

/** The tasks of `job` whose commit is final: committed in the setup, or by a commit-task that exited 0. */
function promisedTasks(
  sc: Scenario,
  job: string,
  outcomes: readonly Outcome[],
): { task: string; attempt: string; by: string }[] {
  const out = sc.setup
    .filter((s) => s.kind === 'commit-task' && s.jobId === job)
    .map((s) => ({ task: s.task!.task, attempt: String(s.task!.attempt), by: `the setup's '${s.label}'` }));
  // A job id staged again (a new job: the first had ended): the processes' commit-tasks opened the
  // first job (a record of it found in the new one is refused, which recovery's checks see).
  const firstAborted = sc.idReused && outcomes.some((o) => o.phase === 'pair' && o.step.kind === 'stage-job' && ok(o));
  for (const o of outcomes) {
    if (o.step.kind !== 'commit-task' || o.step.jobId !== job || !ok(o)) continue;
    if (firstAborted && o.phase === 'pair') continue;
    const r = result<{ taskAttempt: string; task: string }>(o);
    const attempt = r.taskAttempt.slice(r.taskAttempt.lastIndexOf('_') + 1);
    out.push({ task: r.task, attempt, by: `${o.proc.label} '${o.step.label}' (exit 0)` });
  }
  return out;
}

/**
 * The partition holds `job`'s data alone, each task once and whole, every task whose commit is
 * final among them; or, for a job that committed no task, is as it was.
 */
function holdsJob(files: Map<string, string>, sc: Scenario, job: string, outcomes: readonly Outcome[]): string[] {
  const { initial, sources, strays } = partition(files);
  const mine = sources.filter((s) => s.job === job);
  const promised = promisedTasks(sc, job, outcomes);
  const out: string[] = [];
  if (strays.length) out.push(`dt=1 holds files of no job: ${strays.join(', ')}`);
  if (!mine.length && !promised.length) return out;
  const others = [...new Set(sources.filter((s) => s.job !== job).map((s) => s.job))];
  if (initial) out.push(`dt=1 still holds the data the overwrite replaces${mine.length ? ` beside ${job}'s` : ''}`);
  if (others.length) out.push(`dt=1 holds files of ${others.join(', ')}${mine.length ? ` beside ${job}'s` : ''}`);
  out.push(...wholeTasks(mine, sc, job));
  for (const p of promised) {
    const there = mine.filter((s) => s.task === p.task);
    if (!there.length) out.push(`${p.task} committed by ${p.by} is not in the published job`);
    else if (there.some((s) => s.attempt !== p.attempt))
      out.push(`${p.task} attempt ${p.attempt} committed by ${p.by}, yet another attempt was published`);
  }
  for (const o of outcomes) {
    const t = o.step.task;
    if (o.step.jobId !== job || !t || o.proc.state !== 'exited') continue;
    const published = mine.some((s) => s.task === t.task && s.attempt === String(t.attempt));
    // stage exit 0: its files are in the attempt, so in the job once that attempt is published.
    if (o.step.kind === 'stage' && ok(o) && published) {
      const missing = t.files.filter((n) => !mine.some((s) => s.task === t.task && s.name === n));
      if (missing.length)
        out.push(
          `${o.proc.label} '${o.step.label}' exited 0, yet its attempt was published without ${missing.join(', ')}`,
        );
    }
    // abort --task exit 0: the attempt is not in the job; exit 4 'its files belong to the job': it is.
    if (o.step.kind === 'abort-task' && ok(o) && published)
      out.push(`${o.proc.label} '${o.step.label}' exited 0 (aborted), yet its attempt was published`);
    if (
      o.step.kind === 'abort-task' &&
      (o.proc.exitCode === 4 || o.proc.exitCode === 6) &&
      /belong to the job/.test(firstLine(o.proc.error)) &&
      !published
    )
      out.push(
        `${o.proc.label} '${o.step.label}' exited 4 saying its files belong to the job, yet the job was published without them`,
      );
    // commit-task exit 2, 3 or 4 says the attempt is not committed (or not into this job).
    if (o.step.kind === 'commit-task' && [2, 3, 4, 6].includes(o.proc.exitCode!) && published)
      out.push(
        `${o.proc.label} '${o.step.label}' exited ${o.proc.exitCode} (${firstLine(o.proc.error)}), yet its attempt was published`,
      );
  }
  return out;
}

/** Each task's files come from one attempt, all of them. */
function wholeTasks(sources: readonly Source[], sc: Scenario, job: string): string[] {
  const out: string[] = [];
  const byTask = new Map<string, Source[]>();
  for (const s of sources) byTask.set(s.task, [...(byTask.get(s.task) ?? []), s]);
  for (const [task, ss] of byTask) {
    const attempts = [...new Set(ss.map((s) => s.attempt))];
    if (attempts.length > 1) out.push(`dt=1 holds ${job} ${task} from attempts ${attempts.join(' and ')}`);
    const def = sc.jobs.find((j) => j.id === job)?.taskDefs.find((d) => d.task === task);
    const want = def?.files ?? [];
    const have = new Set(ss.map((s) => s.name));
    const missing = want.filter((n) => !have.has(n));
    if (attempts[0] !== '7' && missing.length) out.push(`dt=1 holds ${job} ${task} without ${missing.join(', ')}`);
  }
  return out;
}

/** Checked the moment a process ends: the promise its exit 0 makes holds now. */
export function checkAtExit(w: World, sc: Scenario, o: Outcome, outcomes: readonly Outcome[]): string[] {
  if (!ok(o)) return [];
  const files = filesNow(w.store);
  const who = `${o.proc.label} '${o.step.label}' exited 0`;
  const out: string[] = [];
  for (const job of published(o))
    out.push(...holdsJob(files, sc, job, outcomes).map((v) => `${who} publishing ${job}, but ${v}`));
  for (const job of aborted(o)) {
    const mine = partition(files).sources.filter((s) => s.job === job);
    if (mine.length) out.push(`${who} aborting ${job}, but dt=1 holds ${mine.length} of its files`);
  }
  // 'Nothing to abort' (exit 0) is no answer for a job that committed: that abort is refused (exit 4).
  if (o.step.kind === 'abort' && result<{ outcome: string }>(o).outcome === 'nothing') {
    const mine = partition(files).sources.filter((s) => s.job === o.step.jobId);
    if (mine.length) out.push(`${who} (nothing to abort), but ${o.step.jobId} is committed: dt=1 holds its files`);
  }
  return out;
}

/** Checked once recovery has finished. */
export async function checkEnd(w: World, sc: Scenario, outcomes: readonly Outcome[]): Promise<string[]> {
  const out: string[] = [];
  const files = filesNow(w.store);

  // Nothing outside the table and its staging dirs is touched.
  if (files.get('/w/other/x.csv') !== 'outside') out.push('/w/other/x.csv, outside the table, was changed');
  if (files.get(`${TABLE}/dt=2/keep.csv`) !== 'initial|dt=2') out.push('dt=2, which no job writes, was changed');
  for (const p of files.keys())
    if (!p.startsWith(`${TABLE}/`) && !p.startsWith(`${STAGING_ROOT}/`) && p !== '/w/other/x.csv')
      out.push(`a file outside the table and its staging dirs: ${p}`);

  // Nothing left once recovery has finished (where no damage asks for a hand to finish it).
  for (const p of sc.damaged ? [] : files.keys()) {
    if (p.startsWith(`${STAGING_ROOT}/`) && !p.startsWith(`${LOG_DIR}/`)) out.push(`left after recovery: ${p}`);
    if (p.startsWith(`${TABLE}/`)) {
      const rel = p.slice(TABLE.length + 1).split('/');
      const name = rel.pop()!;
      const dirsOk = rel.every((d) => /^dt=\d+$/.test(d));
      if (!dirsOk || (name !== '_SUCCESS' && (name.startsWith('_') || name.startsWith('.'))))
        out.push(`left in the table after recovery: ${p}`);
    }
  }
  const dirs = (w.store as unknown as { dirs: Map<string, number> }).dirs;
  for (const d of sc.damaged ? [] : dirs.keys())
    if (d.startsWith('/w/.stagecommit') && d !== LOG_DIR && ![...files.keys()].some((f) => f.startsWith(d + '/')))
      out.push(`an empty dir left after recovery: ${d}`);
  if (sc.leftover && files.get(`${TABLE}/dt=3/part-m-00000`) !== 'hadoop|dt=3')
    out.push("the Hadoop leftover's committed output is not in the table after recovery");

  // Each partition holds one job's data, whole; every exit-0 promise holds.
  const { initial, sources } = partition(files);
  const jobs = [...new Set(sources.map((s) => s.job))];
  const committed = new Set(outcomes.flatMap(published));
  // A setup's commit-job ran alone and exited 0 (the schedule stops otherwise): it said so too.
  const setupCommits = sc.setup.flatMap((s) => (s.kind === 'commit-job' ? [s.jobId!] : []));
  const toldCommitted = new Set([...outcomes.flatMap(sawCommitted), ...setupCommits]);
  if (jobs.length > 1) out.push(`dt=1 holds the files of ${jobs.join(' and ')}`);
  else if (jobs.length === 1) {
    out.push(...holdsJob(files, sc, jobs[0]!, outcomes));
    if (!toldCommitted.has(jobs[0]!))
      out.push(`dt=1 holds ${jobs[0]}'s files, and no step exited 0 saying it committed`);
  } else if (!initial) out.push('dt=1 lost its data: neither the old data nor a job is there');
  for (const o of outcomes) {
    for (const job of published(o))
      if (promisedTasks(sc, job, outcomes).length && !jobs.length && initial)
        out.push(`${o.proc.label} '${o.step.label}' exited 0 publishing ${job}, yet dt=1 holds the old data`);
  }

  // The conflict rule: of two overwrites of dt=1 staged before either committed, one commits.
  // (Every job is staged in the setup, before any commits: the setup's own commit-job included.)
  const overwrites = new Set(
    [...sc.setup.filter((s) => s.kind === 'commit-job').map((s) => s.jobId!), ...committed].filter((j) =>
      sc.jobs.some((d) => d.id === j),
    ),
  );
  if (overwrites.size > 1)
    out.push(
      `both ${[...overwrites].join(' and ')} committed an overwrite of dt=1, each staged before the other committed`,
    );

  // clean-orphans --delete removes only what is older than --older-than (24 h) in true time.
  if ((sc.idleMs ?? 0) < DAY_MS)
    for (const o of outcomes)
      if (o.step.kind === 'clean-orphans')
        for (const job of [...aborted(o), ...published(o)])
          out.push(
            `${o.proc.label} '${o.step.label}' acted on ${job}, staged ${Math.round((sc.idleMs ?? 0) / 1000)} s of true time before it ran (--older-than 24 h)`,
          );

  // Exit codes tell the truth.
  for (const o of outcomes) out.push(...honest(w, sc, o));
  // (A job id staged again names two jobs: the first aborted, the second committed.)
  for (const job of sc.idReused ? [] : committed) {
    const ab = outcomes.find((o) => aborted(o).includes(job));
    if (ab) out.push(`${job} both published (exit 0) and aborted by '${ab.step.label}' (exit 0)`);
  }
  return out;
}

const firstLine = (e: unknown): string =>
  String((e as Error)?.message ?? e)
    .split('\n')[0]!
    .slice(0, 160);

function honest(w: World, sc: Scenario, o: Outcome): string[] {
  const p = o.proc;
  if (p.state !== 'exited' || p.exitCode === 0) return [];
  const t = o.step.task;
  // A job whose id was staged again: the attempt was staged in the first job only.
  const staged =
    t &&
    !sc.idReused &&
    sc.setup.some(
      (s) => s.kind === 'stage' && s.jobId === o.step.jobId && s.task?.task === t.task && s.task.attempt === t.attempt,
    );
  // (In a later app attempt it was not: recover started that, and the message says so.)
  const message = String((p.error as Error)?.message);
  if (o.step.kind === 'commit-task' && staged && /never staged/.test(message) && !/recover started it/.test(message))
    return [
      `${p.label} '${o.step.label}' exits ${p.exitCode} saying the attempt was never staged (it was): ${firstLine(p.error)}`,
    ];
  const e = p.error;
  const who = `${p.label} '${o.step.label}' exits ${p.exitCode}`;
  const msg = String((e as Error)?.message ?? e).split('\n')[0];
  if (!(e instanceof StageCommitError)) return [`${who} with a raw error: ${(e as Error)?.name}: ${msg}`];
  if (e instanceof InternalError) return [`${who}: an internal error: ${msg}`];
  if (e instanceof CorruptManifestError && !sc.damaged) return [`${who} calling a manifest damaged (none was): ${msg}`];
  if (e instanceof StoreError && e.reason !== 'no-location') {
    const excused = p.faulted > 0 || p.paused > 0 || w.advanced > 0;
    if (!excused) return [`${who} on a store error with no fault, pause or time jump: ${msg}`];
  }
  return [];
}
