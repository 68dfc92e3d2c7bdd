// adopt: turn a killed Hadoop, Spark or Hive job's leftover into a stagecommit job.

import { UsageError } from '../errors.js';
import { adopt as adoptStep, type AdoptResult } from '../steps/adopt.js';
import { storeKey } from '../store/resolve.js';
import { parseDuration } from './clean-orphans.js';
import type { Session } from './session.js';

export interface AdoptOptions {
  /** The leftover dir: a `_temporary`, `.spark-staging-<id>` or `.hive-staging…` under the table. */
  readonly leftover: string;
  /** The table to publish into (default: the directory holding the leftover). */
  readonly target?: string;
  /** Default: overwrite of the partitions present for .spark-staging, append otherwise. */
  readonly mode?: 'append' | 'overwrite';
  /** The job had tasks 0…N-1: commit-job refuses (exit 5) while one is missing. */
  readonly tasks?: number;
  /** Refuse (exit 4) a leftover changed more recently: a number and a unit s, m, h or d (default '15m'). */
  readonly olderThan?: string;
  /** Say what adopting would do; change nothing. */
  readonly dryRun?: boolean;
}

/** `adopt --json`: `handle` names the new job in every later call. */
export type AdoptDoc = AdoptResult;

export async function adopt(s: Session, o: AdoptOptions): Promise<AdoptDoc> {
  const olderThanMs = parseDuration(o.olderThan ?? '15m');
  if (o.tasks !== undefined && (!Number.isInteger(o.tasks) || o.tasks < 1)) throw new UsageError(`--tasks must be a positive whole number, got '${o.tasks}'`);
  if (o.mode !== undefined && o.mode !== 'append' && o.mode !== 'overwrite') throw new UsageError(`--mode must be append or overwrite, got '${String(o.mode)}'`);
  const loc = await s.location(o.leftover);
  let targetPath: string | undefined;
  if (o.target !== undefined) {
    const t = await s.location(o.target);
    if (storeKey(t.uri) !== storeKey(loc.uri)) throw new UsageError(`--target ${o.target} is not on the leftover's store (${storeKey(loc.uri)}): adopting moves no data between stores`);
    targetPath = t.path;
  }
  const stagingRoot = s.config.stagingRoot ? (await s.location(s.config.stagingRoot)).path : undefined;
  return adoptStep(s.stepEnv(loc.store), { leftoverPath: loc.path, targetPath, mode: o.mode, tasks: o.tasks, olderThanMs, stagingRoot, dryRun: Boolean(o.dryRun) });
}
