// The overwrite log beside the default staging root: each overwrite records the partitions it
// replaces at its commit point, so a job whose partitions were replaced after its `stage`
// fails instead of silently undoing the other job's commit (optimistic transactions, DESIGN §5.5).

import { posix } from 'node:path';
import { ConflictError } from '../errors.js';
import { decodeManifest, encodeManifest, Fields } from '../manifest/codec.js';
import type { Store } from '../store/types.js';
import { commitLogDir } from './layout.js';

const KIND = 'stagecommit/overwrite';
const KEEP_MS = 7 * 24 * 3600 * 1000;

export interface OverwriteIntent {
  readonly jobId: string;
  readonly atMs: number;
  /** Replaced partition paths; [''] replaces the whole table. */
  readonly partitions: readonly string[];
}

function entryName(atMs: number, jobId: string): string {
  return `${String(atMs).padStart(15, '0')}-${jobId}.yaml`;
}

function parseName(name: string): { atMs: number; jobId: string } | null {
  const m = /^(\d{15})-(.+)\.yaml$/.exec(name);
  return m ? { atMs: Number(m[1]), jobId: m[2]! } : null;
}

function overlaps(a: readonly string[], b: readonly string[]): string | null {
  for (const p of a) {
    for (const q of b) {
      if (p === '' || q === '' || p === q || p.startsWith(q + '/') || q.startsWith(p + '/')) return p === '' ? q || 'the whole table' : p;
    }
  }
  return null;
}

async function readIntent(store: Store, path: string): Promise<OverwriteIntent | null> {
  const data = await store.readFile(path);
  if (!data || data.length === 0) return null;
  const f = new Fields(decodeManifest(data.toString('utf8'), store.toUri(path)), store.toUri(path));
  f.kind(KIND, 1);
  return {
    jobId: f.string('jobId'),
    atMs: f.number('atMs'),
    partitions: f.array('partitions', (x) => {
      if (typeof x !== 'string') throw new Error('is not a string');
      return x;
    }),
  };
}

/**
 * Records this job's overwrite and checks it against every overwrite recorded after the job
 * was staged and before this record. Throws ConflictError (and withdraws the record) on overlap.
 */
export async function recordOverwrite(
  store: Store,
  targetPath: string,
  intent: { jobId: string; stagedAtMs: number; partitions: readonly string[] },
  nowMs: number,
): Promise<void> {
  const dir = commitLogDir(targetPath);
  const entries = await store.list(dir);
  let mine = entries.find((e) => parseName(e.name)?.jobId === intent.jobId);
  if (!mine) {
    const name = entryName(nowMs, intent.jobId);
    const path = posix.join(dir, name);
    const body = encodeManifest({ kind: KIND, version: 1, jobId: intent.jobId, atMs: nowMs, at: new Date(nowMs).toISOString(), partitions: [...intent.partitions] });
    await store.createExclusive(path, body);
    mine = { name, path, kind: 'file', size: -1, mtimeMs: -1 };
  }
  const myName = mine.name;
  for (const e of entries) {
    const parsed = parseName(e.name);
    if (!parsed || parsed.jobId === intent.jobId) continue;
    if (parsed.atMs < nowMs - KEEP_MS && parsed.atMs < intent.stagedAtMs) {
      await store.delete(e.path, false);
      continue;
    }
    if (parsed.atMs <= intent.stagedAtMs || e.name > myName) continue;
    const other = await readIntent(store, e.path);
    if (!other) continue;
    const where = overlaps(intent.partitions, other.partitions);
    if (where !== null) {
      await store.delete(mine.path, false);
      throw new ConflictError(
        `job ${intent.jobId} conflicts with job ${other.jobId}, which replaced ${where === '' ? 'the whole table' : `'${where}'`} at ${new Date(other.atMs).toISOString()} after this job was staged: nothing was changed; stage the job again on the new data`,
      );
    }
  }
}

/** Withdraws this job's record (abort, or recover before the commit point). */
export async function withdrawOverwrite(store: Store, targetPath: string, jobId: string): Promise<void> {
  const dir = commitLogDir(targetPath);
  for (const e of await store.list(dir)) {
    if (parseName(e.name)?.jobId === jobId) await store.delete(e.path, false);
  }
}
