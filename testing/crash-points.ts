// Mutation points named by what happens there (never by their number in the order of
// operations), for tests that kill a step in-process at one place.

import { InjectedFault } from '../src/errors.js';
import { crashAt, matches, type CallMatch, type MutationHook } from '../src/store/instrumented.js';

const file = (name: string) => new RegExp(`/${name.replace(/\./g, '\\.')}$`);

/**
 * A plan's creation in `_plan/`: in place (local, S3), or the rename of its temp into place where a
 * created file shows before its bytes (HDFS; a rename is named by its source, the temp).
 */
export const planCreated: CallMatch = {
  call: (op, path) =>
    (op === 'createExclusive' && /\/_plan\/[^/]+\.yaml$/.test(path) && !/\.stagecommit-tmp-/.test(path)) ||
    (op === 'rename' && /\/_plan\/\.stagecommit-tmp-[0-9a-f]+-[^/]+\.yaml$/.test(path)),
};

/**
 * The create that is the commit point (protocol.md §4.1): the table-log entry naming the plan, or a
 * plan that names no entry (`_plan/<appAttempt>.yaml`, or the rename of its temp).
 */
export const commitPointCreated: CallMatch = {
  call: (op, path) =>
    (op === 'createExclusive' && (/\/_log\/\d{20}\.yaml$/.test(path) || /\/_plan\/\d+\.yaml$/.test(path))) ||
    (op === 'rename' && /\/_plan\/\.stagecommit-tmp-[0-9a-f]+-\d+\.yaml$/.test(path)),
};

/** Points of commit-job and commit-task (paths as protocol.md §2.1 lays out a staging dir). */
export const killed = {
  /** commit-job: the plan written (v1), the create that is the commit point never made. */
  beforeCommitPoint: (): MutationHook => crashAt(commitPointCreated),
  /** commit-job: the commit point's create made (and the log's id beside it), nothing after it. */
  atCommitPoint: (): MutationHook => {
    let passed = false;
    return (n, op, path) => {
      if (passed && !/\/_log\/log-id\.yaml$/.test(path)) throw new InjectedFault(n, op, path);
      if (matches(commitPointCreated, op, path)) passed = true;
    };
  },
  /** commit-job: the job is marked committing, naming its plan; killed before its first change to the target. */
  applying: (): MutationHook => crashAt({ op: 'writeFile', path: file('_job.yaml') }, { after: true }),
  /** commit-task: the claim is made (and the output moved, where directories rename), not marked committed. */
  claimed: (task: string): MutationHook => crashAt({ op: 'writeFile', path: new RegExp(`/_claims/${task}\\.yaml$`) }),
};
