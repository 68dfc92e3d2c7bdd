// The one way a step meets its job (Hadoop's AbstractJobOrTaskStage): open it, take its lease when
// the step drives the job, check the state the step may run in, release the lease however the step
// ends. Each step is then only its logic.
// Keeps protocol.md §5.6 (one driver at a time).

import { isDeepStrictEqual } from 'node:util';
import { ConflictError, StoreError } from '../errors.js';
import { type JobState } from '../job/job.js';
import { Lease, type CurrentLease } from '../job/lease.js';
import { JobLayout } from '../job/layout.js';
import { JobGoneError, openJob, requireState, type OpenJob } from '../job/open.js';
import { dirsVanishWhenEmpty } from '../store/operations.js';
import { FencedStore } from '../store/fence.js';
import type { FencedEnv, StepEnv } from './env.js';
import { tidyGoneHandle } from './stray-lease.js';

export interface StepRule<T, A = never> {
  /** The step's name, recorded in the lease: 'commit-job'. */
  readonly name: string;
  /** States the step may start in, and what it does for the refusal ("cannot <doing>"). */
  readonly states?: { readonly allowed: readonly JobState[]; readonly doing: string };
  /**
   * The answer when the handle names no job, whenever the step finds that out: at its first look,
   * or because the job finished while the step took its lease (abort: nothing to do, like rm -f).
   */
  readonly ifGone?: (gone: JobGoneError) => T;
  /**
   * Reads the step starts once it holds the lease, at the same time as the job is read again
   * (one round trip, not two). The body gets them only if the job read again is the job these
   * reads were made for; they must not change anything, and their failure is the body's to see.
   */
  readonly readAhead?: (open: OpenJob) => A;
}

/** What a step that drives the job runs with: the job read again under its lease, and the store fenced by it. */
export interface LeasedRun<A = never> {
  readonly open: OpenJob;
  readonly lease: Lease;
  /** The step's environment with its store fenced by the lease: every change the step makes goes through it. */
  readonly env: FencedEnv;
  readonly ahead?: A;
}

/** A step that reads the job, or changes only its own task's files (no lease). */
export async function runStep<T>(
  env: StepEnv,
  stagingPath: string,
  rule: Omit<StepRule<T>, 'readAhead'>,
  body: (open: OpenJob) => Promise<T>,
): Promise<T> {
  let open: OpenJob;
  try {
    open = await openJob(env, stagingPath);
  } catch (e) {
    if (rule.ifGone && e instanceof JobGoneError) return rule.ifGone(e);
    throw e;
  }
  if (rule.states) requireState(open, rule.states.allowed, rule.states.doing);
  return body(open);
}

/** A step that drives the job (commit-job, abort, recover): run under the job lease, its changes fenced by it. */
export async function runLeasedStep<T, A = never>(
  env: StepEnv,
  stagingPath: string,
  rule: StepRule<T, A>,
  body: (run: LeasedRun<A>) => Promise<T>,
): Promise<T> {
  // The lease files are listed alongside the job: one round trip. On an object store the job's
  // first lease is tried in the same round trip (a local or HDFS create would make the
  // directories of a handle that names no job).
  const layout = new JobLayout(stagingPath);
  const [opened, look] = await Promise.allSettled([
    openJob(env, stagingPath),
    Lease.firstLook(env.store, layout, env, rule.name, dirsVanishWhenEmpty(env.store)),
  ]);
  const found = look.status === 'fulfilled' ? look.value : null;
  if (opened.status === 'rejected') {
    // On an object store the lease file alone would make a staging dir where no job is.
    await found?.held?.release();
    if (opened.reason instanceof JobGoneError && found)
      await tidyGoneHandle(env, layout, found.listed, opened.reason.debris);
    if (rule.ifGone && opened.reason instanceof JobGoneError) return rule.ifGone(opened.reason);
    throw opened.reason;
  }
  const open = opened.value;
  if (look.status === 'rejected') throw look.reason;
  return withJobLease(
    env,
    open,
    { op: rule.name, held: found!.held, current: found!.from },
    rule.readAhead,
    async (run) => {
      if (rule.states) requireState(run.open, rule.states.allowed, rule.states.doing);
      return body(run);
    },
  ).catch((e: unknown) => {
    if (rule.ifGone && e instanceof JobGoneError) return rule.ifGone(e);
    throw e;
  });
}

/**
 * Runs under the job lease: the job is read again once the lease is held, since another driver
 * may have moved it on meanwhile.
 */
async function withJobLease<T, A>(
  env: StepEnv,
  open: OpenJob,
  take: { readonly op: string; readonly held: Lease | null; readonly current: CurrentLease | null | undefined },
  readAhead: ((open: OpenJob) => A) | undefined,
  fn: (run: LeasedRun<A>) => Promise<T>,
): Promise<T> {
  const lease = take.held ?? (await takeLease(env, open, take.op, take.current));
  let again: OpenJob;
  let ahead: A | undefined;
  try {
    ahead = readAhead?.(open);
    again = await openJob(env, open.layout.root);
  } catch (e) {
    await lease.release();
    // The job finished while we took the lease: our lease file must not leave a staging dir
    // behind, nor the default layout's parents its create made again (protocol.md §5.12), nor
    // what a task step killed after the job ended left there.
    if (e instanceof JobGoneError) await tidyGoneHandle(env, open.layout, null, e.debris);
    throw e;
  }
  // Every change the step makes is fenced by the lease: none once the lease may lapse. The
  // fenced store is the step's alone, and goes with the lease.
  const fenced: FencedEnv = { ...env, store: new FencedStore(env.store, lease) };
  // Reads made for the job as first opened serve only while it is still that job.
  const same = again.state === open.state && isDeepStrictEqual(again.job, open.job);
  try {
    return await fn({ open: again, lease, env: fenced, ...(same && ahead !== undefined ? { ahead } : {}) });
  } catch (e) {
    throw await afterLostLease(env, open, lease, e);
  } finally {
    await lease.release();
  }
}

/**
 * A step that lost its lease stopped changing the job; if another run finished the job meanwhile,
 * its error says so (the job is committed, not by this run) instead of sending the user to
 * recover a job that needs nothing. Any other error, or a job still there, is the step's own.
 */
async function afterLostLease(env: StepEnv, open: OpenJob, lease: Lease, e: unknown): Promise<unknown> {
  const loss = lease.lossOf();
  if (!loss) return e;
  const done = await openJob(env, open.layout.root).then(
    () => null,
    (gone: unknown) => (gone instanceof JobGoneError ? gone.committed : null),
  );
  if (!done) return e;
  const { jobId, success, committedAt } = done;
  return new ConflictError(
    { reason: 'lease-lost-job-finished', jobId, takenBy: loss.takenBy, success, committedAt },
    undefined,
    {
      cause: e,
    },
  );
}

/**
 * Something may remove files from the staging dir while the lease is taken: an abort or a commit
 * finishing the job removes the tree, our lease's temporary file with it. Then say what the job is
 * now (gone: exit 2), or take the lease afresh: the remover holds it (exit 4) or it is free.
 */
async function takeLease(
  env: StepEnv,
  open: OpenJob,
  op: string,
  current: CurrentLease | null | undefined,
): Promise<Lease> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await Lease.acquire(env.store, open.layout, env, op, attempt === 1 ? current : undefined);
    } catch (e) {
      if (!(e instanceof StoreError && e.reason === 'not-found')) throw e;
      await openJob(env, open.layout.root);
      if (attempt === 2) {
        throw new ConflictError({ reason: 'lease-vanished', job: env.store.toUri(open.layout.root) });
      }
    }
  }
}
