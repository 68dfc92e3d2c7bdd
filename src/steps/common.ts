// What several steps share: opening a job by its staging dir, and walking a directory's files.

import { posix } from 'node:path';
import { ConflictError, StoreError, UsageError } from '../errors.js';
import { loadJob, type JobManifest, type JobState } from '../job/job.js';
import { ATTEMPT_MARKER, COMMIT_FILE, JobLayout, JOB_FILE, SUCCESS_FILE } from '../job/layout.js';
import { Lease } from '../job/lease.js';
import type { StepEnv } from './env.js';
import { isTempName } from '../store/temp-names.js';
import type { Entry, Store } from '../store/types.js';

export interface OpenJob {
  readonly layout: JobLayout;
  readonly job: JobManifest;
  /** The job's state, counting an existing `_commit.yaml` as 'committing' (the commit point). */
  readonly state: JobState;
}

/** A handle that names no job: finished (cleaned up) or never existed. */
export class JobGoneError extends UsageError {}

/** Reads the job; a missing `_job.yaml` is reported with where its `_SUCCESS` is, if we can tell. */
export async function openJob(env: Pick<StepEnv, 'store' | 'allowUnsignedJob'>, stagingPath: string): Promise<OpenJob> {
  const { store } = env;
  const layout = new JobLayout(stagingPath);
  const job = await loadJob(store, layout, { allowUnsigned: env.allowUnsignedJob });
  if (job) {
    const past = job.state === 'staged' && (await store.stat(layout.commitFile)) !== null;
    return { layout, job, state: past ? 'committing' : job.state };
  }
  throw new JobGoneError(await goneMessage(store, stagingPath));
}

async function goneMessage(store: Store, stagingPath: string): Promise<string> {
  const handle = store.toUri(stagingPath);
  // The default layout `<parent>/.stagecommit/<table>/<jobId>` tells us the target.
  const parts = stagingPath.split('/');
  const n = parts.length;
  if (n >= 4 && parts[n - 3] === '.stagecommit') {
    const target = posix.join(parts.slice(0, n - 3).join('/') || '/', parts[n - 2]!);
    const success = posix.join(target, SUCCESS_FILE);
    const data = await store.readFile(success).catch(() => null);
    if (data) {
      try {
        const s = JSON.parse(data.toString('utf8')) as { jobId?: string; date?: string };
        if (s.jobId === parts[n - 1]) {
          return `job ${s.jobId} is finished: it was committed (${store.toUri(success)}, ${s.date}); there is nothing more to do`;
        }
      } catch {
        // not ours to judge: fall through
      }
    }
  }
  return `no job at ${handle}: it is finished (committed or aborted) or never existed; check the handle that 'stagecommit stage' printed`;
}

export function requireState(open: OpenJob, allowed: readonly JobState[], doing: string): void {
  if (!allowed.includes(open.state)) {
    const hint = open.state === 'committing' ? "it is past its commit point: run 'stagecommit recover' to finish it" : 'there is nothing more to do';
    throw new ConflictError(`cannot ${doing}: job ${open.job.jobId} is ${open.state}; ${hint}`);
  }
}

/**
 * Every file under a directory, paths relative to it; does not follow symbolic links. Temp files
 * (the reserved pattern: writes in progress, or a killed step's debris) are never output.
 */
export async function walkFiles(store: Store, dir: string, details = false, opts: { removeTemps?: boolean } = {}): Promise<Entry[]> {
  const out: Entry[] = [];
  const visit = async (d: string, rel: string): Promise<void> => {
    const entries = await store.list(d, { details });
    await Promise.all(
      entries.map(async (e) => {
        // Temp files are never output; a killed step's ones go when the next step asks (§5.12).
        if (isTempName(e.name)) {
          if (opts.removeTemps) await store.delete(e.path, e.kind === 'dir');
          return;
        }
        if (rel === '' && e.name === ATTEMPT_MARKER) return;
        const r = rel ? `${rel}/${e.name}` : e.name;
        if (e.kind === 'dir') await visit(e.path, r);
        else if (e.kind === 'file') out.push({ ...e, name: r });
      }),
    );
  };
  await visit(dir, '');
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Runs a step that drives the job (commit-job, abort, recover) under the job lease: the job is
 * read again once the lease is held, since another driver may have moved it on meanwhile.
 */
export async function withJobLease<T>(env: StepEnv, open: OpenJob, op: string, fn: (open: OpenJob, lease: Lease) => Promise<T>): Promise<T> {
  const lease = await Lease.acquire(env.store, open.layout, env, op);
  let again: OpenJob;
  try {
    again = await openJob(env, open.layout.root);
  } catch (e) {
    await lease.release();
    // The job finished while we took the lease: our lease file must not leave a staging dir behind.
    if (e instanceof JobGoneError && env.store.caps.realDirectories) await env.store.delete(open.layout.root, false).catch(() => false);
    throw e;
  }
  try {
    return await fn(again, lease);
  } finally {
    await lease.release();
  }
}

/** Removes the staging dir whole, `_job.yaml` last, so a half-done cleanup is still a job. */
export async function removeStagingDir(env: StepEnv, layout: JobLayout, lease?: Lease): Promise<void> {
  const { store } = env;
  await lease?.stopRenewal();
  // Uploads a killed `stage` left behind (S3 multipart) would be billed forever: abort them.
  if (store.listUploads && store.abortUpload) {
    for (const u of await store.listUploads(layout.root)) await store.abortUpload(u);
  }
  if (store.listTree && store.deleteMany) {
    // Object stores: one listing of every key, then bulk deletes (the plan goes with the rest).
    const keep = new Set([layout.jobFile, lease?.path ?? '']);
    await store.deleteMany((await store.listTree(layout.root)).map((e) => e.path).filter((p) => !keep.has(p)));
  } else {
    const entries = await store.list(layout.root);
    const last = new Set([JOB_FILE, COMMIT_FILE, lease ? posix.basename(lease.path) : '']);
    await Promise.all(entries.filter((e) => !last.has(e.name)).map((e) => store.delete(e.path, e.kind === 'dir')));
    await store.delete(layout.commitFile, false);
  }
  // `_job.yaml` (and our lease) is all that is left: they and the directory go in one operation.
  // A racing step's lease file can appear meanwhile (it will find no job): remove it too.
  for (let i = 0; ; i++) {
    try {
      await store.delete(layout.root, true);
      break;
    } catch (e) {
      if (!(e instanceof StoreError && e.kind === 'exists') || i >= 5) throw e;
    }
  }
  // Tidy the default layout's empty parents; another job's files keep them in place.
  const parent = posix.dirname(layout.root);
  if (posix.basename(posix.dirname(parent)) === '.stagecommit' && store.caps.realDirectories) {
    for (const dir of [parent, posix.dirname(parent)]) {
      if ((await store.list(dir)).length > 0) break;
      await store.delete(dir, false).catch(() => false);
    }
  }
}
