// adopt: turn a killed Hadoop, Spark or Hive job's leftover into a stagecommit job.

import { UsageError } from '../errors.js';
import { adopt as adoptStep, type AdoptResult } from '../steps/adopt.js';
import { storeKey } from '../store/resolve.js';
import { parseDuration } from './clean-orphans.js';
import { flag, oneOf, operation, positiveInt, required, text, type OptionTable } from './options.js';
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

const ADOPT_OPTIONS: OptionTable<AdoptOptions> = {
  leftover: required(text),
  target: text,
  mode: oneOf('append', 'overwrite'),
  tasks: positiveInt,
  olderThan: text,
  dryRun: flag,
};

/** `adopt --json`: `handle` names the new job in every later call. */
export type AdoptDoc = AdoptResult;

export const adopt = operation('adopt', ADOPT_OPTIONS, async (s: Session, o: AdoptOptions): Promise<AdoptDoc> => {
  const olderThanMs = parseDuration(o.olderThan ?? '15m');
  const loc = await s.location(o.leftover, false);
  let targetPath: string | undefined;
  if (o.target !== undefined) {
    const t = await s.location(o.target);
    if (storeKey(t.uri) !== storeKey(loc.uri))
      throw new UsageError({ reason: 'adopt-target-other-store', target: o.target, store: storeKey(loc.uri) });
    targetPath = t.path;
  }
  const stagingRoot = s.config.stagingRoot ? (await s.location(s.config.stagingRoot)).path : undefined;
  return adoptStep(s.stepEnv(loc.store), {
    leftoverPath: loc.path,
    targetPath,
    mode: o.mode,
    tasks: o.tasks,
    olderThanMs,
    stagingRoot,
    dryRun: Boolean(o.dryRun),
  });
});
