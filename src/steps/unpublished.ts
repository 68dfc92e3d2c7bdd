// Whether an engine's leftover may hold the only copy of output: what clean-orphans keeps (protocol.md §5.16).

import { posix } from 'node:path';
import { UsageError } from '../errors.js';
import { committedOutput, kindOfName, recogniseLeftover } from '../leftover/recognise.js';
import type { ListedEntry } from '../leftover/types.js';
import { isDataName } from '../paths.js';
import type { Store } from '../store/types.js';
import { listLeftover } from './adopt.js';
import type { LeftoverKind } from './orphan-scan.js';

export interface Unpublished {
  /** True when `adopt` can publish it; false when only the engine knew where it goes. */
  readonly adoptable: boolean;
  readonly reason: string;
}

const RISK = 'remove it only with --delete --delete-unpublished, which loses that output';

/**
 * Null when removing the leftover loses nothing the table may need; else why it is kept.
 * Kept: output whose engine had begun its job commit (Spark's partition dirs at the top of its
 * staging dir, Hive's finished `-ext-10000`), and Hadoop's committed task output, whose job commit
 * (FileOutputCommitter v1 moving it into the table task by task) leaves no mark of having begun.
 */
export async function unpublishedOutput(store: Store, path: string, kind: LeftoverKind): Promise<Unpublished | null> {
  const name = posix.basename(path);
  if (kind === 's3a-magic') return magicCommit(store, path);
  if (kindOfName(name) === null) return null; // stagecommit jobs are judged elsewhere
  const uri = store.toUri(path);
  const { entries, special } = await listLeftover(store, path);
  // An entry that is neither file nor dir: no engine's layout, but what beside it is output is unknown.
  if (special !== null) return notJudged(special);
  if (kind === 'spark-staging') {
    const flat = entries.filter((e) => e.kind === 'file' && !e.path.includes('/') && isDataName(e.path));
    if (flat.length) {
      return {
        adoptable: false,
        reason: `holds ${flat.length} Spark output file(s) for partitions at custom locations, which may be their only copy and which adopt cannot place; ${RISK}`,
      };
    }
  }
  let committed: ReturnType<typeof committedOutput>;
  try {
    committed = committedOutput(uri, name, entries);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    // Not a layout the recogniser reads (two jobs' tasks in one `_temporary`, a stray file, another
    // Hive sink): what looks like committed output in it is kept all the same.
    const n = looksCommitted(kind, entries);
    if (n === 0) return null;
    return {
      adoptable: false,
      reason: `holds ${n} file(s) that look like committed output the table may not have, in a layout adopt cannot read (${e.message.replace(`${uri} `, '').split(';')[0]}); ${RISK}`,
    };
  }
  if (!committed || (!committed.jobCommitBegun && kind !== 'hadoop-temporary')) return null;
  const what = `holds ${committed.files} output file(s) the table may not have (${committed.stage})`;
  try {
    recogniseLeftover(uri, name, entries, 0);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    return { adoptable: false, reason: `${what}, which adopt cannot publish (${e.message}); ${RISK}` };
  }
  return { adoptable: true, reason: `${what}: publish it with 'stagecommit adopt ${uri}', or ${RISK}` };
}

/** A leftover holding an entry that is neither a file nor a directory (`special`, its URI). */
function notJudged(special: string): Unpublished {
  return {
    adoptable: false,
    reason: `cannot be judged: ${special} is neither a file nor a directory: an engine never leaves one; ${RISK}`,
  };
}

/**
 * Files that sit where an engine puts committed output, whatever else the leftover holds: a Hadoop
 * committed task dir (`<n>/task_…/…`), a partition dir at the top of a Spark staging dir (its job
 * commit had begun), a finished Hive sink (`-ext-<n>/…`).
 */
function looksCommitted(kind: LeftoverKind, entries: readonly ListedEntry[]): number {
  const committed = (segs: string[]): boolean => {
    if (kind === 'hadoop-temporary') return segs.length >= 3 && /^\d+$/.test(segs[0]!) && segs[1]!.startsWith('task_');
    if (kind === 'spark-staging') return segs.length >= 2 && isDataName(segs[0]!);
    if (kind === 'hive-staging') return segs.length >= 2 && /^-ext-\d+$/.test(segs[0]!);
    return false;
  };
  return entries.filter((e) => e.kind === 'file' && committed(e.path.split('/'))).length;
}

/** S3A's magic committer records each pending upload in a `.pending` or `.pendingset` file. */
const MAGIC_RECORD = /\.pending(set)?$/;

/**
 * An S3A magic committer's dir that still holds commit records: its job was killed before or in
 * its job commit, and the uploads those records name (in the table, beside the dir) are the only
 * copy of output not yet completed. Only Hadoop can finish it; removing it loses that output.
 */
async function magicCommit(store: Store, path: string): Promise<Unpublished | null> {
  const { entries, special } = await listLeftover(store, path);
  if (special !== null) return notJudged(special);
  const records = entries.filter((e) => e.kind === 'file' && MAGIC_RECORD.test(e.path)).length;
  if (records === 0) return null;
  return {
    adoptable: false,
    reason: `holds ${records} S3A magic commit record(s) (.pending/.pendingset) naming uploads not yet completed, which may be the only copy of that output: finish or abort the job with Hadoop, or ${RISK}`,
  };
}
