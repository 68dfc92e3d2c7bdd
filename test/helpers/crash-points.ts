// Mutation points named by what happens there (never by their number in the order of
// operations), for tests that kill a step in-process at one place.

import { crashAt, type MutationHook } from '../../src/store/instrumented.js';

const file = (name: string) => new RegExp(`/${name.replace(/\./g, '\\.')}$`);

/** Points of commit-job and commit-task (paths as DESIGN §4 lays out a staging dir). */
export const killed = {
  /** commit-job: the table-log entry is held, the plan (the commit point) never written. */
  beforeCommitPoint: (): MutationHook => crashAt({ path: file('_commit.yaml') }),
  /** commit-job: the plan is written (the commit point), nothing else done. */
  atCommitPoint: (): MutationHook => crashAt({ path: file('_commit.yaml') }, { after: true }),
  /** commit-job: the job is marked committing; killed before its first change to the target. */
  applying: (): MutationHook => crashAt({ op: 'writeFile', path: file('_job.yaml') }, { after: true }),
  /** commit-task: the claim is made (and the output moved, where directories rename), not marked committed. */
  claimed: (task: string): MutationHook => crashAt({ op: 'writeFile', path: new RegExp(`/_claims/${task}\\.yaml$`) }),
};
