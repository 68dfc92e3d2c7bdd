// Mutation points named by what happens there (never by their number in the order of
// operations), for tests that kill a step in-process at one place.

import { InjectedFault } from '../src/errors.js';
import { crashAt, matches, type CallMatch, type MutationHook } from '../src/store/instrumented.js';

const file = (name: string) => new RegExp(`/${name.replace(/\./g, '\\.')}$`);

/**
 * The plan's creation, made at once with its table-log entry: a small plan in `_job.yaml`, written
 * with 'committing' (commit-job's first write of it); a larger one as `_commit.yaml`, in place
 * (local, S3), or the rename of its temp into place where a created file shows before its bytes
 * (HDFS; a rename is named by its source, the temp).
 */
export const planCreated: CallMatch = {
  call: (op, path) =>
    (op === 'writeFile' && /\/_job\.yaml$/.test(path)) ||
    (op === 'createExclusive' && /\/_commit\.yaml$/.test(path)) ||
    (op === 'rename' && /\/\.stagecommit-tmp-[0-9a-f]+-_commit\.yaml$/.test(path)),
};

/** Points of commit-job and commit-task (paths as protocol.md §2.1 lays out a staging dir). */
export const killed = {
  /** commit-job: the table-log entry is held, the plan (the commit point) never written. */
  beforeCommitPoint: (): MutationHook => crashAt(planCreated),
  /**
   * commit-job: the plan and the table-log entry it names are both created (at once: the commit point), nothing else
   * done.
   */
  atCommitPoint: (): MutationHook => {
    const seen = new Set<string>();
    return (n, op, path) => {
      if (seen.size === 2) throw new InjectedFault(n, op, path);
      if (matches(planCreated, op, path)) seen.add('plan');
      else if (op === 'createExclusive' && /\/_log\/\d{20}\.yaml$/.test(path)) seen.add('entry');
    };
  },
  /**
   * commit-job: the job is marked committing (with its plan, when small: the commit point); killed before its first
   * change to the target.
   */
  applying: (): MutationHook => crashAt({ op: 'writeFile', path: file('_job.yaml') }, { after: true }),
  /** commit-task: the claim is made (and the output moved, where directories rename), not marked committed. */
  claimed: (task: string): MutationHook => crashAt({ op: 'writeFile', path: new RegExp(`/_claims/${task}\\.yaml$`) }),
};
