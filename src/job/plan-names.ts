// The names of the files in a job's `_plan/` (protocol.md §2.2): what a listing tells of a plan
// without reading it. Below the plan code, so that reading a job (open.ts) finds its plans.

import type { Store } from '../store/types.js';
import type { JobLayout } from './layout.js';

/**
 * A file in `_plan/`, by its name alone: a plan of app attempt `appAttempt` naming table-log entry
 * `entry` (null: a plan that names none, decided by its own create), or anything else found there
 * (a temp of a killed write: `appAttempt` null), which is garbage.
 */
export interface PlanRef {
  readonly name: string;
  readonly path: string;
  readonly appAttempt: number | null;
  readonly entry: number | null;
}

/** `<appAttempt>.yaml` names no entry; `<appAttempt>-<entry>-<random>.yaml` names entry `<entry>`. */
const PLAN_NAME = /^(\d+)(?:-(\d+)-([0-9a-f]+))?\.yaml$/;

export function planRefOf(layout: JobLayout, fileName: string): PlanRef {
  const m = PLAN_NAME.exec(fileName);
  const name = m ? fileName.slice(0, -'.yaml'.length) : fileName;
  return {
    name,
    path: m ? layout.planFile(name) : `${layout.planDir}/${fileName}`,
    appAttempt: m ? Number(m[1]) : null,
    entry: m && m[2] !== undefined ? Number(m[2]) : null,
  };
}

/** The files in the job's `_plan/` (one listing). */
export async function listPlans(store: Store, layout: JobLayout): Promise<PlanRef[]> {
  return (await store.list(layout.planDir)).filter((e) => e.kind === 'file').map((e) => planRefOf(layout, e.name));
}
