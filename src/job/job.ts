// The job manifest `_job.yaml`: typed, versioned, validated on load, written whole.
// Keeps protocol.md §5.4 (written whole), §5.10 (checks itself) and §5.11 (paths read back).

import { CorruptManifestError } from '../errors.js';
import { decodeManifest, encodeManifest, Fields, itemString, type DecodeOptions } from '../manifest/codec.js';
import { posix } from 'node:path';
import { kindOfName } from '../leftover/recognise.js';
import { checkStorePath, checkTaskId, normalizeColumn, partitionPath, type PartitionValue } from '../paths.js';
import { sameLocation, type Store } from '../store/types.js';
import type { JobLayout } from './layout.js';
import { readManifestBytes } from './manifest-io.js';

export const MODES = ['create', 'append', 'overwrite'] as const;
export const ALGORITHMS = ['v1', 'v2'] as const;
export const JOB_STATES = ['staged', 'committing', 'committed', 'aborted'] as const;
export type Mode = (typeof MODES)[number];
export type Algorithm = (typeof ALGORITHMS)[number];
export type JobState = (typeof JOB_STATES)[number];

export interface Owner {
  readonly user: string;
  readonly host: string;
  readonly pid: number;
}

export interface JobManifest {
  readonly jobId: string;
  readonly target: string;
  readonly targetPath: string;
  readonly staging: string;
  readonly mode: Mode;
  readonly algorithm: Algorithm;
  /** All partition columns, in order (static ones first). */
  readonly partitionBy: readonly string[];
  /** Values of the leading (static) columns. */
  readonly staticPartition: readonly PartitionValue[];
  /** Declared tasks 0…N-1, if any. */
  readonly tasks?: number;
  /** The newest table-log entry when the job was staged (null: the log was empty), protocol.md §5.5. */
  readonly logPosition: number | null;
  /** The table log's id when the job was staged, if it had one: a log made again has another. */
  readonly logId?: string;
  /**
   * The lowest table-log number not finished when the job was staged: its commit reads the log
   * from there (protocol.md §3.4). Absent (a job staged before jobs had it): the whole log.
   */
  readonly logReadFrom?: number;
  readonly appAttempt: number;
  readonly state: JobState;
  readonly stagedAtMs: number;
  readonly owner: Owner;
  /** Set when `adopt` made the job out of an engine's leftover (manifest version 2). */
  readonly adopted?: Adoption;
  /**
   * An aborted v2 job: the tasks that had claimed their output, whose published files stay in the target (kept for a
   * re-run of the abort, once the claims are gone).
   */
  readonly publishedTasks?: readonly string[];
  /** The plan a committing job rolls forward (`_plan/<planName>.yaml`), written with 'committing'. */
  readonly planName?: string;
}

/** What `adopt` records: where the leftover was, so that `abort` can give it back. */
export interface Adoption {
  /** The leftover's URI and store path when adopt found it. */
  readonly leftover: string;
  readonly leftoverPath: string;
  /**
   * The committed tasks adopt claims; the adoption is whole once every claim exists (and, where directories rename,
   * `_adopted`).
   */
  readonly tasks: number;
}

const KIND = 'stagecommit/job';
/** Version 2 adds `adopted`; jobs that are not adopted are still written as version 1. */
const VERSION = 2;

/** Whether two reads of a staging dir found the same job: a job id may be staged again once its job ended (abort). */
export function isSameJob(a: JobManifest, b: JobManifest): boolean {
  return a.jobId === b.jobId && a.stagedAtMs === b.stagedAtMs;
}

export function staticPrefix(job: JobManifest): string {
  return partitionPath(job.staticPartition);
}

/** True when every partition column has a static value (a static partition overwrite). */
export function isFullyStatic(job: JobManifest): boolean {
  return job.partitionBy.length > 0 && job.staticPartition.length === job.partitionBy.length;
}

export function encodeJob(job: JobManifest): string {
  return encodeManifest({
    kind: KIND,
    version: job.adopted ? 2 : 1,
    jobId: job.jobId,
    state: job.state,
    target: job.target,
    targetPath: job.targetPath,
    staging: job.staging,
    mode: job.mode,
    algorithm: job.algorithm,
    partitionBy: [...job.partitionBy],
    staticPartition: job.staticPartition.map((p) => ({ column: p.column, value: p.value })),
    tasks: job.tasks ?? null,
    logPosition: job.logPosition,
    ...(job.logId === undefined ? {} : { logId: job.logId }),
    ...(job.logReadFrom === undefined ? {} : { logReadFrom: job.logReadFrom }),
    appAttempt: job.appAttempt,
    stagedAt: new Date(job.stagedAtMs).toISOString(),
    stagedAtMs: job.stagedAtMs,
    owner: { ...job.owner },
    ...(job.adopted ? { adopted: { ...job.adopted } } : {}),
    ...(job.publishedTasks ? { publishedTasks: [...job.publishedTasks] } : {}),
    ...(job.planName === undefined ? {} : { plan: job.planName }),
  });
}

export function decodeJob(text: string | Buffer, file: string, opts: DecodeOptions = {}): JobManifest {
  const f = new Fields(decodeManifest(text, file, opts), file);
  f.kind(KIND, VERSION);
  const ownerOf = (): Owner => {
    const o = new Fields(f.object('owner'), file);
    return { user: o.string('user'), host: o.string('host'), pid: o.number('pid') };
  };
  const job: JobManifest = {
    jobId: f.string('jobId'),
    state: f.oneOf('state', JOB_STATES),
    target: f.string('target'),
    targetPath: f.string('targetPath'),
    staging: f.string('staging'),
    mode: f.oneOf('mode', MODES),
    algorithm: f.oneOf('algorithm', ALGORITHMS),
    partitionBy: f.array('partitionBy', (c) => column(c)),
    staticPartition: f.array('staticPartition', (p) => ({
      column: column(itemString(p, 'column')),
      value: itemString(p, 'value'),
    })),
    tasks: f.nullableCount('tasks') ?? undefined,
    logPosition: f.nullableCount('logPosition'),
    ...(Object.hasOwn(f.doc, 'logId') ? { logId: f.string('logId') } : {}),
    ...(Object.hasOwn(f.doc, 'logReadFrom') ? { logReadFrom: f.count('logReadFrom') } : {}),
    appAttempt: f.count('appAttempt'),
    stagedAtMs: (f.string('stagedAt'), f.time('stagedAtMs')),
    owner: ownerOf(),
    ...(f.doc.version === 1 ? {} : { adopted: adoptionOf(f, file) }),
    ...(Object.hasOwn(f.doc, 'publishedTasks') ? { publishedTasks: f.array('publishedTasks', (t) => taskId(t)) } : {}),
    ...(Object.hasOwn(f.doc, 'plan') ? { planName: f.string('plan') } : {}),
  };
  if (job.planName !== undefined && job.state !== 'committing' && job.state !== 'committed')
    throw CorruptManifestError.badField(
      file,
      'plan',
      `is there, but the job is ${job.state}: a job names its plan only once past its commit point`,
    );
  if (job.staticPartition.some((p, i) => p.column !== job.partitionBy[i])) {
    throw CorruptManifestError.badField(
      file,
      'staticPartition',
      'does not name the leading columns of partitionBy, in order',
    );
  }
  if (job.tasks === 0)
    throw CorruptManifestError.badField(file, 'tasks', 'is 0: a job declares at least one task, or null');
  if (job.algorithm === 'v2' && job.mode === 'overwrite')
    throw CorruptManifestError.badField(file, 'algorithm', "is 'v2' with mode 'overwrite', which stage never writes");
  try {
    checkStorePath(job.targetPath);
  } catch (e) {
    throw CorruptManifestError.badField(file, 'targetPath', (e as Error).message);
  }
  return job;
}

/**
 * Version 2's `adopted`: null, or where the adopted leftover was (a path checked like any from a manifest,
 * protocol.md §5.11).
 */
function adoptionOf(f: Fields, file: string): Adoption | undefined {
  if (!Object.hasOwn(f.doc, 'adopted'))
    throw CorruptManifestError.badField(file, 'adopted', 'is missing (write null for a job that was not adopted)');
  if (f.doc.adopted === null) return undefined;
  const a = new Fields(f.object('adopted'), file);
  const adoption: Adoption = {
    leftover: a.string('leftover'),
    leftoverPath: a.string('leftoverPath'),
    tasks: a.count('tasks'),
  };
  try {
    checkStorePath(adoption.leftoverPath);
    if (kindOfName(posix.basename(adoption.leftoverPath)) === null)
      throw new Error(`'${adoption.leftoverPath}' is not the name of an engine's leftover`);
  } catch (e) {
    throw CorruptManifestError.badField(file, 'adopted.leftoverPath', (e as Error).message);
  }
  return adoption;
}

function taskId(t: unknown): string {
  if (typeof t !== 'string') throw new Error('is not a string');
  checkTaskId(t);
  return t;
}

function column(c: unknown): string {
  if (typeof c !== 'string') throw new Error('is not a string');
  if (normalizeColumn(c) !== c) throw new Error(`'${c}' is not a partition column name`);
  return c;
}

export async function loadJob(store: Store, layout: JobLayout, opts: DecodeOptions = {}): Promise<JobManifest | null> {
  const data = await readManifestBytes(store, layout.jobFile);
  if (data === null) return null;
  const file = store.toUri(layout.jobFile);
  const job = decodeJob(data, file, opts);
  // A URI names its location in any spelling (a name service or its name node, s3a:// or s3://).
  if (!sameLocation(store, job.target, job.targetPath)) {
    throw CorruptManifestError.badField(
      file,
      'target',
      `is ${job.target}, but targetPath is ${store.toUri(job.targetPath)}`,
    );
  }
  if (job.adopted && !sameLocation(store, job.adopted.leftover, job.adopted.leftoverPath)) {
    throw CorruptManifestError.badField(
      file,
      'adopted.leftover',
      `is ${job.adopted.leftover}, but leftoverPath is ${store.toUri(job.adopted.leftoverPath)}`,
    );
  }
  // A staging dir copied or moved elsewhere is not the job it names: never adopt its files.
  if (!sameLocation(store, job.staging, layout.root)) {
    throw CorruptManifestError.badField(
      file,
      'staging',
      `is ${job.staging}, but the file is in ${store.toUri(layout.root)}: a staging dir is never moved or copied; stage a new job`,
    );
  }
  return job;
}

export async function saveJob(store: Store, layout: JobLayout, job: JobManifest): Promise<void> {
  await store.writeFile(layout.jobFile, encodeJob(job));
}
