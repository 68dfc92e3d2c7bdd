// Per task attempt, the decision: commit or abort, whichever creates it first (protocol.md §5.9).
// Created exclusively and checked on every read.

import { CorruptManifestError } from '../errors.js';
import { decodeManifest, encodeManifest, Fields } from '../manifest/codec.js';
import type { Store } from '../store/types.js';
import { mapLimit } from '../util/pool.js';
import { checkOfInstance } from './instance.js';
import type { JobLayout } from './layout.js';
import { manifestNames, readManifestFile } from './manifest-io.js';

export type DecisionOutcome = 'commit' | 'abort';

export interface Decision {
  readonly taskAttempt: string;
  readonly outcome: DecisionOutcome;
  readonly atMs: number;
  readonly by: string;
  /** The stagedAtMs of the job it was made for (absent in decisions of earlier versions). */
  readonly jobStagedAtMs?: number;
}

/** The job a reader expects a decision of: one made for an earlier job of the same id is refused (exit 4). */
export interface DecisionJob {
  readonly jobId: string;
  readonly stagedAtMs: number;
}

const DECISION = 'stagecommit/decision';

/** Who makes a decision, as it records it (`by`): "user@host pid N". */
export function decidedBy(who: { readonly user: string; readonly host: string; readonly pid: number }): string {
  return `${who.user}@${who.host} pid ${who.pid}`;
}

/** The process a decision's `by` names (decidedBy's form, `adopt by …` too), or null where it names none. */
export function decider(by: string): { readonly host: string; readonly pid: number } | null {
  const m = /@(.+) pid (\d+)$/.exec(by);
  return m ? { host: m[1]!, pid: Number(m[2]) } : null;
}

function decodeDecision(text: string | Buffer, file: string, taskAttempt: string, job?: DecisionJob): Decision {
  const f = new Fields(decodeManifest(text, file), file);
  // 2: the job's stagedAtMs (jobStagedAtMs).
  f.kind(DECISION, 2);
  const jobStagedAtMs = (f.doc.version as number) >= 2 ? f.time('jobStagedAtMs') : undefined;
  const d: Decision = {
    taskAttempt: f.string('taskAttempt'),
    outcome: f.oneOf('outcome', ['commit', 'abort'] as const),
    atMs: (f.string('at'), f.count('atMs')),
    by: f.string('by'),
    ...(jobStagedAtMs === undefined ? {} : { jobStagedAtMs }),
  };
  if (d.taskAttempt !== taskAttempt)
    throw CorruptManifestError.badField(
      file,
      'taskAttempt',
      `is '${d.taskAttempt}', but the file is the decision of ${taskAttempt}`,
    );
  if (job)
    checkOfInstance(
      { file, what: `the decision (${d.outcome}) of ${taskAttempt}`, stagedAtMs: jobStagedAtMs },
      job,
      'stage the task as a new --attempt',
    );
  return d;
}

/** An attempt's decision (null: none); with `job`, one made for an earlier job of the same id is refused (exit 4). */
export function readDecision(
  store: Store,
  layout: JobLayout,
  app: number,
  taskAttempt: string,
  job?: DecisionJob,
): Promise<Decision | null> {
  return readManifestFile(store, layout.decisionFile(app, taskAttempt), (text, file) =>
    decodeDecision(text, file, taskAttempt, job),
  );
}

/**
 * Decides an attempt's fate with one exclusive create: the first of commit-task and
 * abort --task to get here wins. Returns the decision that stands (ours, or the earlier one).
 */
export async function decide(
  store: Store,
  layout: JobLayout,
  app: number,
  d: Decision,
  job?: DecisionJob,
): Promise<Decision> {
  const tag = d.jobStagedAtMs === undefined ? {} : { jobStagedAtMs: d.jobStagedAtMs };
  const body = encodeManifest({
    kind: DECISION,
    version: d.jobStagedAtMs === undefined ? 1 : 2,
    taskAttempt: d.taskAttempt,
    outcome: d.outcome,
    atMs: d.atMs,
    at: new Date(d.atMs).toISOString(),
    by: d.by,
    ...tag,
  });
  if (await store.createExclusive(layout.decisionFile(app, d.taskAttempt), body)) return d;
  const standing = await readDecision(store, layout, app, d.taskAttempt, job);
  // A create retried after a lost response may find its own first try: it stands either way.
  return standing ?? d;
}

/** Every decision of one app attempt, by task attempt. */
export async function readDecisions(
  store: Store,
  layout: JobLayout,
  app: number,
  concurrency = 16,
  job?: DecisionJob,
): Promise<Map<string, Decision>> {
  const names = (await manifestNames(store, layout.decisionsDir(app))).map((n) => n.slice(0, -5));
  const read = await mapLimit(names, concurrency, (n) => readDecision(store, layout, app, n, job));
  return new Map(read.filter((d): d is Decision => d !== null).map((d) => [d.taskAttempt, d]));
}
