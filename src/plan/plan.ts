// The commit plan as data: what moves where and what an overwrite displaces. Pure: no store.

import { posix } from 'node:path';
import { ConflictError, InternalError } from '../errors.js';
import { Planner } from './planner.js';
import { buildTree, findClashes } from './tree.js';
import type { CommitPlan, Loc, PlanInput, PlanPhase } from './types.js';

export type { CommitPlan, Loc, PlanInput, PlannedUpload, PlanOp, PlanPhase, SourceFile, SourceTree, TargetKind, TargetSnapshot } from './types.js';
export { buildTree, findClashes } from './tree.js';

/** Full partition paths ('' for an unpartitioned table) of the output's files. */
export function partitionsOf(files: readonly { path: string }[], depth: number): string[] {
  if (depth === 0) return [];
  const set = new Set<string>();
  for (const f of files) {
    let end = -1;
    for (let i = 0; i < depth && (end = f.path.indexOf('/', end + 1)) >= 0; i++);
    set.add(end < 0 ? f.path : f.path.slice(0, end));
  }
  return [...set].sort();
}

export function planCommit(input: PlanInput, partitionDepth: number): CommitPlan {
  if (input.mode === 'create' && input.target.exists) {
    throw new InternalError('planner: create mode needs an absent target');
  }
  const tree = buildTree(input.sources, input.identical);
  if (input.mode === 'append' && input.target.exists) {
    const clashes = findClashes(input).filter((p) => !input.identical?.has(p));
    if (clashes.length) {
      throw new ConflictError(`append would overwrite ${clashes.length} existing file(s) with different content, first '${clashes[0]}': use --mode overwrite or rename the files`);
    }
  }
  const planner = new Planner(input, tree);
  const phases = planner.plan();
  const published = input.sources.flatMap((s) => s.files).filter((f) => !input.identical?.has(f.path));
  return {
    phases,
    files: published.length,
    bytes: published.reduce((a, f) => a + f.size, 0),
    filenames: published.map((f) => f.path).sort(),
    partitionsWritten: partitionsOf(published, partitionDepth),
    partitionsReplaced: planner.replacedUnits(),
  };
}

/**
 * The target directories (table-relative, '' for the root) whose entries the plan changes: the
 * parent of everything it creates, moves or deletes there, and a deleted or swapped directory
 * itself. Checked for write access before the commit point (DESIGN §5.13).
 */
export function targetDirsChanged(phases: readonly PlanPhase[]): string[] {
  const out = new Set<string>();
  const parent = (rel: string) => {
    const d = posix.dirname(rel);
    return d === '.' ? '' : d;
  };
  const touch = (loc: Loc, self: boolean) => {
    if (!loc.startsWith('t:')) return;
    const rel = loc.slice(2);
    if (rel !== '') out.add(parent(rel));
    if (self) out.add(rel);
  };
  for (const phase of phases) {
    for (const op of phase) {
      if (op.op === 'mkdir') touch(op.path, false);
      else if (op.op === 'move' || op.op === 'copy') touch(op.to, false);
      else if (op.op === 'swap') touch(op.path, true);
      else touch(op.path, op.dir);
    }
  }
  return [...out].sort();
}
