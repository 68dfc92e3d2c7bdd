// Reading the target where the output touches it, and publishing a planned output (commit-job, v2 tasks).

import { posix } from 'node:path';
import { claimRootPath, type TaskFile } from '../job/claims.js';
import type { JobManifest } from '../job/job.js';
import type { JobLayout } from '../job/layout.js';
import { applyPhases } from '../plan/apply.js';
import { findClashes, planCommit, type CommitPlan, type SourceTree, type TargetKind, type TargetSnapshot } from '../plan/plan.js';
import type { Store } from '../store/types.js';
import { mapLimit } from '../util/pool.js';
import { walkFiles } from './common.js';
import type { StepEnv } from './env.js';

/** Every directory prefix of the given table-relative paths, plus the paths themselves. */
function prefixes(paths: Iterable<string>, includeSelf: boolean): Set<string> {
  const out = new Set<string>(['']);
  for (const p of paths) {
    let end = includeSelf ? p.length : p.lastIndexOf('/');
    // Walk up until a prefix is already known: siblings share their parents.
    while (end > 0 && !out.has(p.slice(0, end))) {
      out.add(p.slice(0, end));
      end = p.lastIndexOf('/', end - 1);
    }
  }
  return out;
}

/**
 * Lists the target's directories that the output (or a replaced unit) reaches into: one
 * listing per existing directory touched, never the whole table.
 */
export async function snapshotTarget(store: Store, targetPath: string, sources: readonly SourceTree[], replaceUnits: readonly string[], concurrency: number): Promise<TargetSnapshot> {
  const root = await store.stat(targetPath);
  const dirs = new Map<string, Map<string, TargetKind>>();
  if (!root) return { exists: false, dirs };
  const wanted = prefixes(sources.flatMap((s) => s.files.map((f) => f.path)), false);
  for (const u of prefixes(replaceUnits.filter((u) => u !== ''), true)) wanted.add(u);
  let level = [''];
  while (level.length) {
    const listed = await mapLimit(level, concurrency, async (rel) => {
      const entries = await store.list(rel === '' ? targetPath : posix.join(targetPath, rel));
      const children = new Map<string, TargetKind>();
      for (const e of entries) children.set(e.name, e.kind === 'file' ? 'file' : e.kind === 'dir' ? 'dir' : 'other');
      dirs.set(rel, children);
      return [...children].filter(([name, kind]) => kind === 'dir' && wanted.has(rel ? `${rel}/${name}` : name)).map(([name]) => (rel ? `${rel}/${name}` : name));
    });
    level = listed.flat();
  }
  return { exists: true, dirs };
}

/** Append clashes whose bytes equal the existing file's: those staged copies are dropped. */
export async function identicalClashes(store: Store, layout: JobLayout, targetPath: string, sources: readonly SourceTree[], target: TargetSnapshot, concurrency: number): Promise<Set<string>> {
  const clashes = findClashes({ sources, target });
  if (clashes.length === 0) return new Set();
  const where = new Map<string, string>();
  for (const s of sources) for (const f of s.files) where.set(f.path, posix.join(claimRootPath(layout, targetPath, s.root), f.path));
  const same = await mapLimit(clashes, concurrency, async (rel) => {
    const [a, b] = await Promise.all([store.readFile(where.get(rel)!), store.readFile(posix.join(targetPath, rel))]);
    return a !== null && b !== null && a.equals(b);
  });
  return new Set(clashes.filter((_, i) => same[i]));
}

/** v2: a task's files go straight into the target when it commits (create/append only). */
export async function publishV2(env: StepEnv, layout: JobLayout, job: JobManifest, attemptDir: string, files: readonly TaskFile[]): Promise<CommitPlan> {
  const { store } = env;
  // Files already published by an interrupted run of this commit are no longer in the attempt dir.
  const present = new Set((await walkFiles(store, attemptDir)).map((e) => e.name));
  const sources: SourceTree[] = [{ task: 'v2', root: layout.relative(attemptDir), files: files.filter((f) => present.has(f.path)) }];
  const target = await snapshotTarget(store, job.targetPath, sources, [], env.concurrency);
  const identical = await identicalClashes(store, layout, job.targetPath, sources, target, env.concurrency);
  const plan = planCommit({ mode: 'append', replaceUnits: [], renameDirs: store.caps.directoryRename, sources, target, identical }, job.partitionBy.length);
  await applyPhases({ store, stagingPath: layout.root, targetPath: job.targetPath, concurrency: env.concurrency }, plan.phases);
  return plan;
}
