// The commit plan as data: what moves where and what an overwrite displaces. Pure: no store.

import { posix } from 'node:path';
import { BlockedError, InternalError } from '../errors.js';
import { Planner } from './planner.js';
import { buildTree, childLoc, findClashes, type OutputTree } from './tree.js';
import type { CommitPlan, Loc, PlanInput, PlanPhase } from './types.js';

export type {
  CommitPlan,
  Loc,
  PlanInput,
  PlannedUpload,
  PlanOp,
  PlanPhase,
  SingleOp,
  SourceFile,
  SourceTree,
  TargetKind,
  TargetSnapshot,
} from './types.js';
export { buildTree, findClashes, OutputTree, PathClash } from './tree.js';
export { opCount, PhaseOps, singleOps } from './ops.js';

/** The partition path ('' for an unpartitioned table) of a table-relative file path. */
export function partitionOf(path: string, depth: number): string {
  let end = -1;
  for (let i = 0; i < depth && (end = path.indexOf('/', end + 1)) >= 0; i++);
  return end < 0 ? path : path.slice(0, end);
}

/** Full partition paths ('' for an unpartitioned table) of the output's files. */
export function partitionsOf(files: readonly { path: string }[], depth: number): string[] {
  if (depth === 0) return [];
  const set = new Set<string>();
  for (const f of files) set.add(partitionOf(f.path, depth));
  return [...set].sort();
}

/** How many file names a plan keeps: the first ones in order, as `_SUCCESS` lists them. */
export const FILENAMES_KEPT = 100;

/**
 * Counts, bytes, the first file names and the partitions of files seen one at a time: a million
 * paths are never held (protocol.md §9.2).
 */
export class OutputStats {
  files = 0;
  bytes = 0;
  private names: string[] = [];
  private readonly partitions = new Set<string>();

  constructor(private readonly depth: number) {}

  add(path: string, size: number): void {
    this.files++;
    this.bytes += size;
    if (this.depth > 0) this.partitions.add(partitionOf(path, this.depth));
    this.names.push(path);
    if (this.names.length >= 8 * FILENAMES_KEPT) this.trim();
  }

  private trim(): void {
    this.names = this.names.sort().slice(0, FILENAMES_KEPT);
  }

  filenames(): string[] {
    this.trim();
    return [...this.names];
  }

  partitionsWritten(): string[] {
    return [...this.partitions].sort();
  }
}

export function planCommit(input: PlanInput, partitionDepth: number): CommitPlan {
  return planTree(input, buildTree(input.sources, input.identical), partitionDepth);
}

/** Plans from an output tree already built (identical append clashes already taken out). */
export function planTree(input: PlanInput, tree: OutputTree, partitionDepth: number): CommitPlan {
  if (input.mode === 'create' && input.target.exists) {
    throw new InternalError('planner: create mode needs an absent target');
  }
  if (input.mode === 'append' && input.target.exists) {
    const clashes = findClashes(tree, input.target);
    if (clashes.length) {
      throw new BlockedError({
        reason: 'append-clash',
        count: clashes.length,
        first: clashes[0]!,
        v2: input.v2 === true,
      });
    }
  }
  const planner = new Planner(input, tree);
  const phases = planner.plan();
  const stats = new OutputStats(partitionDepth);
  tree.forEachFile((path, f) => stats.add(path, f.size));
  return {
    phases,
    files: stats.files,
    bytes: stats.bytes,
    filenames: stats.filenames(),
    partitionsWritten: stats.partitionsWritten(),
    partitionsReplaced: planner.replacedUnits(),
  };
}

/**
 * The target directories (table-relative, '' for the root) whose entries the plan changes: the
 * parent of everything it creates, moves or deletes there, and a deleted or swapped directory
 * itself. Checked for write access before the commit point (protocol.md §5.13).
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
      else if (op.op === 'moves') {
        if (op.names.length > 0) touch(childLoc(op.to, op.names[0]!), false);
      } else if (op.op === 'swap') touch(op.path, true);
      else touch(op.path, op.dir);
    }
  }
  return [...out].sort();
}
