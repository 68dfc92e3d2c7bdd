// `_plan/<name>.yaml`: the persisted commit plan, written under a name never used again before the
// table-log entry that names it, whose create is the commit point (protocol.md §4.1). Keeps
// protocol.md §5.10, §5.11 and §5.15 (created, never written over).

import { createHash, randomBytes } from 'node:crypto';
import { CorruptManifestError, withContext } from '../errors.js';
import { decodeManifest, decodeManifestLazy, encodeManifest, encodeManifestBytes, Fields } from '../manifest/codec.js';
import { checkRelativePath } from '../paths.js';
import { createWhole } from '../store/operations.js';
import type { Store } from '../store/types.js';
import { ADOPTED_DIR, OUTPUT_DIR, TRASH_DIR, type JobLayout } from '../job/layout.js';
import { readManifestFile } from '../job/manifest-io.js';
import { planRefOf, type PlanRef } from '../job/plan-names.js';
export { listPlans, planRefOf, type PlanRef } from '../job/plan-names.js';
import { opCount, PhaseOps, singleOps } from './ops.js';
import type { CommitPlan, Loc, PlanOp, PlannedUpload, SingleOp } from './plan.js';

const KIND = 'stagecommit/commit';
const VERSION = 1;
const OPS = ['mkdir', 'move', 'copy', 'swap', 'delete'] as const;
/** Where a plan may touch the staging dir: task output, the merge area, the trash. */
const STAGING_AREAS = ['_temporary', OUTPUT_DIR, TRASH_DIR, ADOPTED_DIR];

export interface PersistedPlan extends CommitPlan {
  readonly jobId: string;
  readonly appAttempt: number;
  readonly createdAtMs: number;
  /** Tasks whose output the plan publishes. */
  readonly tasks: readonly string[];
  /** The table-log entry this commit holds (null: v2, which does not use the log). */
  readonly logEntry: number | null;
}

/**
 * The plan's bytes; its ops are spelled out and encoded line by line as they are written (a million of them: no list of
 * objects, no text beside the bytes).
 */
export function encodePlan(p: PersistedPlan): Buffer {
  function* ops(): Generator<object> {
    for (const [i, phase] of p.phases.entries()) for (const op of singleOps(phase)) yield { phase: i, ...op };
  }
  return encodeManifestBytes(
    {
      kind: KIND,
      version: VERSION,
      jobId: p.jobId,
      appAttempt: p.appAttempt,
      logEntry: p.logEntry,
      createdAt: new Date(p.createdAtMs).toISOString(),
      createdAtMs: p.createdAtMs,
      files: p.files,
      bytes: p.bytes,
      phaseCount: p.phases.length,
      tasks: [...p.tasks],
      partitionsWritten: [...p.partitionsWritten],
      partitionsReplaced: [...p.partitionsReplaced],
      filenames: p.filenames.slice(0, 100),
    },
    { ops: { length: p.phases.reduce((n, phase) => n + opCount(phase), 0), items: ops } },
  );
}

/** A plan location read back: 's:' inside the staging areas or 't:' inside the target (protocol.md §5.11). */
function checkLoc(v: unknown, key: string): Loc {
  if (typeof v !== 'string') throw new Error(`'${key}' is missing or not a string`);
  const side = v.slice(0, 2);
  const rel = v.slice(2);
  if (side !== 's:' && side !== 't:')
    throw new Error(`'${key}' is '${v}': a location starts with s: (staging) or t: (target)`);
  if (rel === '') {
    if (side === 't:') return v;
    throw new Error(`'${key}' is the staging dir itself`);
  }
  try {
    checkRelativePath(rel, 'plan path');
  } catch (e) {
    throw new Error(`'${key}' ${(e as Error).message}`);
  }
  if (side === 's:' && !STAGING_AREAS.includes(rel.split('/')[0]!))
    throw new Error(`'${key}' is '${v}', outside the staging dir's task output, merge area and trash`);
  return v;
}

/** A pending upload completed at `to` (which must be inside the target): its id, parts and size. */
function checkUpload(v: unknown, to: Loc): PlannedUpload {
  const u = v as Record<string, unknown> | null;
  if (u === null || typeof u !== 'object') throw new Error("'upload' is not a mapping");
  if (!to.startsWith('t:') || to === 't:')
    throw new Error(`'to' is '${to}': a pending upload completes only at a file inside the target`);
  if (typeof u.id !== 'string' || u.id === '') throw new Error("'upload.id' is missing or empty");
  const etags = u.etags;
  if (!Array.isArray(etags) || etags.length === 0 || etags.some((e) => typeof e !== 'string' || e === ''))
    throw new Error("'upload.etags' is not a list of the parts' ETags");
  if (typeof u.size !== 'number' || !Number.isSafeInteger(u.size) || u.size < 0)
    throw new Error("'upload.size' is not a whole number");
  return { id: u.id, etags: etags as string[], size: u.size };
}

/** A move, copy or swap from a place to itself does nothing but lose the file with the staging dir. */
function distinct(...locs: Loc[]): void {
  if (new Set(locs).size !== locs.length)
    throw new Error(`names one location twice ('${locs.find((l, i) => locs.indexOf(l) !== i)!}')`);
}

/** Only a whole tree becomes the target itself ('t:'): a file or a copy never does. */
function notTargetRoot(to: Loc, dir: boolean): void {
  if (to === 't:' && !dir) throw new Error("'to' is the target itself (t:), which only a directory move may be");
}

function checkOp(o: Record<string, unknown>): SingleOp {
  const flag = (k: string) => {
    if (o[k] !== undefined && typeof o[k] !== 'boolean') throw new Error(`'${k}' is not true/false`);
    return o[k] === true;
  };
  switch (o.op) {
    case 'mkdir':
      return { op: 'mkdir', path: checkLoc(o.path, 'path') };
    case 'move': {
      const op: PlanOp = { op: 'move', from: checkLoc(o.from, 'from'), to: checkLoc(o.to, 'to') };
      distinct(op.from, op.to);
      notTargetRoot(op.to, flag('dir'));
      if (op.from === 't:') throw new Error("'from' is the target itself (t:)");
      return { ...op, ...(flag('dir') ? { dir: true } : {}), ...(flag('replace') ? { replace: true } : {}) };
    }
    case 'copy': {
      const op = { op: 'copy' as const, from: checkLoc(o.from, 'from'), to: checkLoc(o.to, 'to') };
      distinct(op.from, op.to);
      notTargetRoot(op.to, false);
      if (o.size !== undefined && (typeof o.size !== 'number' || !Number.isSafeInteger(o.size) || o.size < 0))
        throw new Error("'size' is not a whole number");
      if (o.upload !== undefined) return { ...op, upload: checkUpload(o.upload, op.to) };
      const sized = o.size === undefined ? op : { ...op, size: o.size };
      return flag('replace') ? { ...sized, replace: true } : sized;
    }
    case 'swap': {
      // The old data is parked in the staging dir, never elsewhere in the table.
      const trash = checkLoc(o.trash, 'trash');
      if (!trash.startsWith('s:'))
        throw new Error(`'trash' is '${trash}': old data is parked inside the staging dir (s:…)`);
      const op = {
        op: 'swap' as const,
        path: checkLoc(o.path, 'path'),
        trash,
        from: checkLoc(o.from, 'from'),
        dir: flag('dir'),
      };
      distinct(op.path, op.trash, op.from);
      return op;
    }
    case 'delete': {
      const path = checkLoc(o.path, 'path');
      if (!path.startsWith('t:') || path === 't:')
        throw new Error(`'path' is '${path}': a plan deletes only old data inside the target`);
      return { op: 'delete', path, dir: flag('dir') };
    }
    default:
      throw new Error(`'op' is '${String(o.op)}', expected one of ${OPS.join(', ')}`);
  }
}

export function decodePlan(text: string | Buffer, file: string): PersistedPlan {
  // Lazily: each op line is parsed as it is checked, never a second array of a million objects.
  const f = new Fields(decodeManifestLazy(text, file), file);
  f.kind(KIND, VERSION);
  const phaseCount = f.count('phaseCount');
  // No phase is empty: there are no more phases than ops (checked before any array is made of them).
  const lines = (f.doc.ops as { length?: unknown } | undefined)?.length;
  if (typeof lines === 'number' && phaseCount > lines)
    throw CorruptManifestError.badField(
      file,
      'phaseCount',
      `is ${phaseCount}, more than the plan's ${lines} op(s), and no phase is empty`,
    );
  const phases = Array.from({ length: phaseCount }, () => new PhaseOps());
  f.each('ops', (x) => {
    const o = x as Record<string, unknown>;
    if (o === null || typeof o !== 'object') throw new Error('is not a mapping');
    const phase = o.phase;
    if (typeof phase !== 'number' || !Number.isInteger(phase) || phase < 0 || phase >= phaseCount)
      throw new Error(`'phase' is not a whole number below phaseCount (${phaseCount})`);
    phases[phase]!.push(checkOp(o));
  });
  if (phases.some((p) => p.ops.length === 0)) throw CorruptManifestError.badField(file, 'ops', 'leaves a phase empty');
  return {
    jobId: f.string('jobId'),
    appAttempt: f.count('appAttempt'),
    logEntry: f.nullableCount('logEntry'),
    createdAtMs: (f.string('createdAt'), f.time('createdAtMs')),
    files: f.count('files'),
    bytes: f.count('bytes'),
    tasks: f.strings('tasks'),
    partitionsWritten: f.strings('partitionsWritten'),
    partitionsReplaced: f.strings('partitionsReplaced'),
    filenames: f.strings('filenames'),
    phases: phases.map((p) => p.ops),
  };
}

/** The plan's name: never used again (protocol.md §2.2). */
function nameFor(plan: PersistedPlan): string {
  return plan.logEntry === null
    ? String(plan.appAttempt)
    : `${plan.appAttempt}-${plan.logEntry}-${randomBytes(8).toString('hex')}`;
}

export function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Writes the plan under a name never used before (protocol.md §2.2, §4.2). A plan that names a
 * table-log entry is only a proposal until the entry naming it is created; one that names none
 * is the commit point itself, created once per app attempt: null when a plan of this app attempt
 * was there already. Where a created file shows before all its bytes (HDFS), the plan is written
 * under a temp name and renamed into place without replace, so that no reader sees part of it.
 */
export async function writePlan(
  store: Store,
  layout: JobLayout,
  plan: PersistedPlan,
): Promise<{ readonly ref: PlanRef; readonly sha256: string } | null> {
  const bytes = encodePlan(plan);
  const ref = planRefOf(layout, `${nameFor(plan)}.yaml`);
  if (!(await createWhole(store, ref.path, bytes))) return null;
  return { ref, sha256: sha256(bytes) };
}

/**
 * Reads plan `ref` of job `jobId`; `digest`: the SHA-256 its table-log entry names (protocol.md §4.1),
 * which the bytes must have. Null when it is not there.
 */
export async function loadPlan(
  store: Store,
  ref: Pick<PlanRef, 'path'>,
  jobId: string,
  digest?: string,
): Promise<PersistedPlan | null> {
  const plan = await readManifestFile(store, ref.path, (bytes, file) => {
    const p = decodePlan(bytes, file);
    if (digest !== undefined && sha256(bytes) !== digest)
      throw CorruptManifestError.badField(
        file,
        'end',
        `digests to another SHA-256 than ${digest}, which its table-log entry names`,
      );
    return p;
  });
  if (plan && plan.jobId !== jobId)
    throw CorruptManifestError.badField(
      store.toUri(ref.path),
      'jobId',
      `is '${plan.jobId}', but the job is '${jobId}'`,
    );
  return plan;
}

const PROGRESS_KIND = 'stagecommit/commit-progress';

/** `_commit.progress`: how many of the plan's phases are done (a replay never runs a finished phase again). */
export function encodeProgress(plan: Pick<PersistedPlan, 'jobId'>, phasesDone: number): string {
  return encodeManifest({ kind: PROGRESS_KIND, version: 1, jobId: plan.jobId, phasesDone });
}

/**
 * How many of `plan`'s phases are done: 0 without a record. A record that cannot be read, or that
 * counts past the plan, is refused: skipping an unfinished phase would lose its files with the
 * staging dir. Signed, as every manifest is: a flipped byte never reads as another count (a bare
 * number, as stagecommit 0.1 wrote it, is refused too).
 */
export async function readProgress(store: Store, layout: JobLayout, plan: PersistedPlan): Promise<number> {
  const decode = (data: Buffer, file: string): number => {
    const f = new Fields(decodeManifest(data, file), file);
    f.kind(PROGRESS_KIND, 1);
    if (f.string('jobId') !== plan.jobId)
      throw CorruptManifestError.badField(
        file,
        'jobId',
        `is '${String(f.doc.jobId)}', but the plan is job ${plan.jobId}'s`,
      );
    const done = f.count('phasesDone');
    if (done > plan.phases.length)
      throw CorruptManifestError.badField(
        file,
        'phasesDone',
        `is ${done}, but the plan has ${plan.phases.length} phase(s)`,
      );
    return done;
  };
  try {
    return (await readManifestFile(store, layout.progressFile, decode)) ?? 0;
  } catch (e) {
    if (e instanceof CorruptManifestError)
      throw withContext(e, { reason: 'progress-unknown', phases: plan.phases.length });
    throw e;
  }
}
