// Making a commit plan durable at the commit point (protocol.md §4.1, §5.15): created at once with the
// table-log entry it names: `_commit.yaml`, created and never written over. (A small plan inside
// `_job.yaml`, written with 'committing', is built but off: INLINE_PLAN_MAX_BYTES.)

import { BlockedError, ExitCode, StageCommitError, withContext } from '../errors.js';
import { planVerdict, type OpenJob } from '../job/open.js';
import { encodeJob, saveJob, type JobManifest } from '../job/job.js';
import { encodePlan, writePlan, type PersistedPlan } from '../plan/plan-file.js';
import type { StepEnv } from './env.js';
import { readHeldPlan } from './held-plan.js';
import type { PlanWriter } from './prepare-plan.js';

/**
 * Another plan was there when ours was created: a late write of an earlier attempt's plan (a request
 * its store held, protocol.md §5.15). One that never became a commit point is removed and ours created;
 * one that did is not ours to replace or to apply here: recover finishes it.
 */
async function planAppeared(env: StepEnv, open: OpenJob, plan: PersistedPlan): Promise<void> {
  const verdict = await planVerdict(env.store, open.layout, open.job);
  if (verdict !== 'decided') {
    if (verdict !== 'absent') await readHeldPlan(env, { ...open, stalePlan: verdict });
    if (await writePlan(env.store, open.layout, plan)) return;
  }
  throw new BlockedError({
    reason: 'plan-appeared',
    jobId: open.job.jobId,
    handle: env.store.toUri(open.layout.root),
  });
}

/**
 * Off (protocol.md §5.15): `_job.yaml` is written over, not created, so a plan in it that a store held past
 * its driver's lease can land over the next attempt's plan and destroy it; `_commit.yaml` is
 * created and never written over. Kept for a conditional write (If-Match) that would close that.
 */
const INLINE_PLAN_MAX_BYTES = 0;

/**
 * Makes the plan durable (beside the table-log entry it names, when it names one: open.ts's
 * commit-point rule): a small one inside `_job.yaml`, written with 'committing' (no write of
 * its own before publishing begins), a larger one as `_commit.yaml`. Answers the job as written.
 */
export function planWriter(
  env: StepEnv,
  open: OpenJob,
): PlanWriter & { readonly carried: () => JobManifest | undefined } {
  const { store } = env;
  const { job, layout } = open;
  let carried: JobManifest | undefined;
  return {
    carried: () => carried,
    persist: async (plan: PersistedPlan): Promise<void> => {
      env.emit({ type: 'phase', label: 'writing the commit plan' });
      const text = encodePlan(plan);
      if (text.length <= (env.inlinePlanMaxBytes ?? INLINE_PLAN_MAX_BYTES)) {
        const next: JobManifest = { ...job, state: 'committing', inlinePlan: text.toString('utf8') };
        carried = next;
        return saveJob(store, layout, next).catch(async (e: unknown) => {
          // Read back: our bytes there, the write landed (its answer lost); the job's as before, nothing changed (a
          // full disk).
          const now = await store.readFile(layout.jobFile).catch(() => undefined);
          if (now?.equals(Buffer.from(encodeJob(next)))) return;
          if (now === undefined && e instanceof StageCommitError && e.exitCode === ExitCode.failed) {
            const handle = store.toUri(layout.root);
            throw withContext(e, {
              reason: 'commit-point-unknown',
              jobId: job.jobId,
              handle,
              made: 'plan was written',
            });
          }
          throw e;
        });
      }
      carried = undefined;
      if (!(await writePlan(store, layout, plan))) await planAppeared(env, open, plan);
    },
    // Another job took the entry's number: the plan naming it goes.
    withdraw: (): Promise<unknown> => (carried ? saveJob(store, layout, job) : store.delete(layout.commitFile, false)),
  };
}
