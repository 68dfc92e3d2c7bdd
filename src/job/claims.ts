// Commit claims: the task-commit coordinator (first attempt to create the claim wins) and,
// once committed, the record of the task's files.

import { setTimeout as sleep } from 'node:timers/promises';
import { CorruptManifestError, StoreError } from '../errors.js';
import { decodeManifest, encodeManifest, Fields, itemNumber, itemString } from '../manifest/codec.js';
import type { Store } from '../store/types.js';
import { mapLimit } from '../util/pool.js';
import type { JobLayout } from './layout.js';

export interface TaskFile {
  /** Path relative to the table root (partition path included). */
  readonly path: string;
  readonly size: number;
}

export interface Claim {
  readonly task: string;
  readonly attempt: number;
  readonly taskAttempt: string;
  readonly appAttempt: number;
  readonly state: 'claimed' | 'committed';
  readonly claimedAtMs: number;
  readonly host: string;
  readonly pid: number;
  /** Once committed: where the files are, relative to the staging root ('' for v2: in the target). */
  readonly root?: string;
  /** The attempt's files, recorded when it claims (so an interrupted commit knows them). */
  readonly files: readonly TaskFile[];
}

const KIND = 'stagecommit/claim';
const VERSION = 1;

export function encodeClaim(c: Claim): string {
  const { files, ...rest } = c;
  const header = { kind: KIND, version: VERSION, ...rest, bytes: files.reduce((a, f) => a + f.size, 0) };
  return encodeManifest(header, { files });
}

export function decodeClaim(text: string, file: string): Claim {
  const f = new Fields(decodeManifest(text, file), file);
  f.kind(KIND, VERSION);
  const state = f.oneOf('state', ['claimed', 'committed'] as const);
  return {
    task: f.string('task'),
    attempt: f.number('attempt'),
    taskAttempt: f.string('taskAttempt'),
    appAttempt: f.number('appAttempt'),
    state,
    claimedAtMs: f.number('claimedAtMs'),
    host: f.string('host'),
    pid: f.number('pid'),
    root: state === 'committed' ? (f.optString('root') ?? '') : undefined,
    files: f.array('files', (x) => ({ path: itemString(x, 'path'), size: itemNumber(x, 'size') })),
  };
}

/**
 * Reads a claim. A claim that reads empty (or cut short) is one being written: WebHDFS shows a
 * created file before all its bytes arrive. It is read again shortly, never taken for free.
 */
export async function readClaim(store: Store, path: string, retries = 20): Promise<Claim | null> {
  for (let i = 0; ; i++) {
    const data = await store.readFile(path);
    if (data === null) return null;
    try {
      if (data.length > 0) return decodeClaim(data.toString('utf8'), store.toUri(path));
      if (i >= retries) throw new StoreError('io', 'readFile', [store.toUri(path)], 'claim is still empty after retries; is a writer stuck?');
    } catch (e) {
      if (!(e instanceof CorruptManifestError) || i >= retries) throw e;
    }
    await sleep(50 * Math.min(i + 1, 5));
  }
}

/** Every claim of one app attempt, by task. */
export async function readClaims(store: Store, layout: JobLayout, app: number, concurrency = 16): Promise<Map<string, Claim>> {
  const files = (await store.list(layout.claimsDir(app))).filter((e) => e.kind === 'file' && e.name.endsWith('.yaml'));
  const claims = await mapLimit(files, concurrency, (e) => readClaim(store, e.path));
  const out = new Map<string, Claim>();
  for (const c of claims) if (c) out.set(c.task, c);
  return out;
}
