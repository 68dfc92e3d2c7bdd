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
  if (kindOfName(name) === null) return null; // s3a-magic and stagecommit are judged elsewhere
  const uri = store.toUri(path);
  let entries: ListedEntry[];
  try {
    entries = await listLeftover(store, path);
  } catch (e) {
    if (e instanceof UsageError) return null; // an entry that is neither file nor dir: no engine's layout
    throw e;
  }
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
    if (e instanceof UsageError) return null; // not an engine's layout, or nothing final in it
    throw e;
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
