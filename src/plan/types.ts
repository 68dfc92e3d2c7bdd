// The commit plan's types: what a plan is made of (persisted, so store-neutral), and what the
// planner is given.

import type { PublishStrategy } from '../store/operations.js';
import type { TaskFile } from '../job/claim-files.js';

/**
 * A location: 's:REL' inside the staging dir, 't:REL' inside the target ('t:' is the target
 * itself). Plans are persisted, so locations are relative and store-neutral.
 */
export type Loc = string;

export type PlanOp =
  /** Create a directory (and its parents). */
  | { readonly op: 'mkdir'; readonly path: Loc }
  /** Rename a file or directory; `replace` lets a file replace an old file of the same name. */
  | { readonly op: 'move'; readonly from: Loc; readonly to: Loc; readonly dir?: boolean; readonly replace?: boolean }
  /**
   * Plain file moves (no `dir`, no `replace`) from the directory `from` into the directory `to`,
   * each file keeping its name: a `move` per file in the plan file, one object in memory (a
   * million separate moves were most of a commit's memory, protocol.md §9.2). Built by ops.ts.
   */
  | { readonly op: 'moves'; readonly from: Loc; readonly to: Loc; readonly names: readonly string[] }
  /**
   * Server-side copy of one file (stores without rename); the source goes with the staging dir.
   * With `upload`, the file is a pending upload to `to`, completed in place: nothing is copied.
   * `size` (its bytes, as the claim recorded them) paces the copies in flight.
   */
  | {
      readonly op: 'copy';
      readonly from: Loc;
      readonly to: Loc;
      readonly upload?: PlannedUpload;
      readonly size?: number;
      readonly replace?: true;
    }
  /** Park the old `path` in the trash, then move `from` into its place: one rename of gap. */
  | { readonly op: 'swap'; readonly path: Loc; readonly trash: Loc; readonly from: Loc; readonly dir: boolean }
  /** Remove old data that the overwrite replaces (after every new file is in place). */
  | { readonly op: 'delete'; readonly path: Loc; readonly dir: boolean };

export type PlanPhase = readonly PlanOp[];

/** An operation as the plan file writes it: one per line, a `moves` group spelled out. */
export type SingleOp = Exclude<PlanOp, { op: 'moves' }>;

export interface PlannedUpload {
  readonly id: string;
  readonly etags: readonly string[];
  readonly size: number;
}

/** A task file; `upload` when it waits as a pending upload at its final path (a claim's file). */
export type SourceFile = TaskFile;

export interface SourceTree {
  /** The task it came from. */
  readonly task: string;
  /** Staging-relative directory holding the files' table-relative paths ('t:REL': inside the target). */
  readonly root: string;
  readonly files: readonly SourceFile[];
}

export type TargetKind = 'file' | 'dir' | 'other';

/** What the target holds where the job's output touches it: children of each listed directory. */
export interface TargetSnapshot {
  readonly exists: boolean;
  /** Directory (table-relative, '' for the root) → its children's names and kinds. */
  readonly dirs: ReadonlyMap<string, ReadonlyMap<string, TargetKind>>;
}

export interface PlanInput {
  readonly mode: 'create' | 'append' | 'overwrite';
  /** Table-relative paths whose old data the job replaces wholesale ('' = the root's data). */
  readonly replaceUnits: readonly string[];
  /** How the store publishes: directory and file renames, or server-side copies of files (store/operations). */
  readonly strategy: PublishStrategy;
  readonly sources: readonly SourceTree[];
  readonly target: TargetSnapshot;
  /** Append clashes already found byte-identical: the staged copy is simply dropped. */
  readonly identical?: ReadonlySet<string>;
  /** A v2 task's publication: an append clash cannot be met by an overwrite (v2 refuses it). */
  readonly v2?: boolean;
}

export interface CommitPlan {
  /** Phases run in order; the operations inside one phase run in parallel. */
  readonly phases: readonly PlanPhase[];
  readonly files: number;
  readonly bytes: number;
  /** Table-relative paths of the first published files (FILENAMES_KEPT of them), sorted. */
  readonly filenames: readonly string[];
  readonly partitionsWritten: readonly string[];
  readonly partitionsReplaced: readonly string[];
}
