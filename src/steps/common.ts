// What several steps share: opening a job by its staging dir, and walking a directory's files.

import { posix } from 'node:path';
import { ConflictError, UsageError } from '../errors.js';
import { loadJob, type JobManifest, type JobState } from '../job/job.js';
import { JobLayout, SUCCESS_FILE } from '../job/layout.js';
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
export async function openJob(store: Store, stagingPath: string): Promise<OpenJob> {
  const layout = new JobLayout(stagingPath);
  const job = await loadJob(store, layout);
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

/** Every file under a directory, paths relative to it; does not follow symbolic links. */
export async function walkFiles(store: Store, dir: string, details = false): Promise<Entry[]> {
  const out: Entry[] = [];
  const visit = async (d: string, rel: string): Promise<void> => {
    const entries = await store.list(d, { details });
    await Promise.all(
      entries.map(async (e) => {
        const r = rel ? `${rel}/${e.name}` : e.name;
        if (e.kind === 'dir') await visit(e.path, r);
        else if (e.kind === 'file') out.push({ ...e, name: r });
      }),
    );
  };
  await visit(dir, '');
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
