// clean-orphans: find (and with delete: true remove) what killed jobs left behind under some roots.

import { UsageError } from '../errors.js';
import { cleanOrphans as cleanOrphansStep, type CleanOrphansResult, type Leftover } from '../steps/clean-orphans.js';
import { storeKey } from '../store/resolve.js';
import { flag, operation, required, text, texts, wholeNumber, type OptionTable } from './options.js';
import type { Session } from './session.js';

export interface CleanOrphansOptions {
  readonly roots: readonly string[];
  /** Only leftovers last changed longer ago than this: a number and a unit s, m, h or d (default '24h'). */
  readonly olderThan?: string;
  /** Remove them (default: a dry run that only lists them). */
  readonly delete?: boolean;
  /**
   * With delete: also remove leftovers that hold output the table may not have (action 'adopt',
   * or 'skipped' where adopt cannot place it). That output is lost.
   */
  readonly deleteUnpublished?: boolean;
  readonly maxDepth?: number;
}

const CLEAN_ORPHANS_OPTIONS: OptionTable<CleanOrphansOptions> = {
  roots: required(texts),
  olderThan: text,
  delete: flag,
  deleteUnpublished: flag,
  maxDepth: wholeNumber,
};

/** One leftover as `--json` shows it: `path` is its URI. */
export type LeftoverDoc = Omit<Leftover, 'path' | 'uri' | 'upload' | 'pastCommit' | 'unpublished'> & {
  readonly path: string;
};

export interface CleanOrphansDoc extends Omit<CleanOrphansResult, 'leftovers'> {
  readonly leftovers: readonly LeftoverDoc[];
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

export function parseDuration(raw: string): number {
  const m = /^(\d+)([smhd])$/.exec(raw.trim());
  if (!m) throw new UsageError({ reason: 'duration-invalid', duration: raw });
  return Number(m[1]) * UNITS[m[2]!]! * 1000;
}

export const cleanOrphans = operation(
  'cleanOrphans',
  CLEAN_ORPHANS_OPTIONS,
  async (s: Session, o: CleanOrphansOptions): Promise<CleanOrphansDoc> => {
    const olderThanMs = parseDuration(o.olderThan ?? '24h');
    if (o.roots.length === 0) throw new UsageError({ reason: 'no-roots', op: 'clean-orphans' });
    if (o.deleteUnpublished && !o.delete) throw new UsageError({ reason: 'delete-unpublished-alone' });
    const locs = await Promise.all(o.roots.map((r) => s.location(r, false)));
    if (new Set(locs.map((l) => storeKey(l.uri))).size > 1)
      throw new UsageError({ reason: 'roots-on-stores', op: 'clean-orphans' });
    const r = await cleanOrphansStep(s.stepEnv(locs[0]!.store), {
      roots: locs.map((l) => l.path),
      olderThanMs,
      delete: o.delete === true,
      deleteUnpublished: o.deleteUnpublished === true,
      maxDepth: o.maxDepth,
    });
    return {
      ...r,
      leftovers: r.leftovers.map(({ path: _p, uri, upload: _u, pastCommit: _c, unpublished: _n, ...l }) => ({
        ...l,
        path: uri,
      })),
    };
  },
);
