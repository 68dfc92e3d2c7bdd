// The commit plan as data: what moves where and what an overwrite displaces. Pure: no store.

import { posix } from 'node:path';
import { ConflictError, UsageError } from '../errors.js';
import { isDataName } from '../paths.js';
import { OUTPUT_DIR, TRASH_DIR } from '../job/layout.js';

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
  /** Server-side copy of one file (stores without rename); the source goes with the staging dir. */
  | { readonly op: 'copy'; readonly from: Loc; readonly to: Loc }
  /** Park the old `path` in the trash, then move `from` into its place: one rename of gap. */
  | { readonly op: 'swap'; readonly path: Loc; readonly trash: Loc; readonly from: Loc; readonly dir: boolean }
  /** Remove old data that the overwrite replaces (after every new file is in place). */
  | { readonly op: 'delete'; readonly path: Loc; readonly dir: boolean };

export type PlanPhase = readonly PlanOp[];

export interface SourceTree {
  /** The task it came from. */
  readonly task: string;
  /** Staging-relative directory holding the files' table-relative paths ('t:REL': inside the target). */
  readonly root: string;
  readonly files: readonly { readonly path: string; readonly size: number }[];
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
  /** One rename moves a directory and all under it. */
  readonly renameDirs: boolean;
  readonly sources: readonly SourceTree[];
  readonly target: TargetSnapshot;
  /** Append clashes already found byte-identical: the staged copy is simply dropped. */
  readonly identical?: ReadonlySet<string>;
}

export interface CommitPlan {
  /** Phases run in order; the operations inside one phase run in parallel. */
  readonly phases: readonly PlanPhase[];
  readonly files: number;
  readonly bytes: number;
  /** Table-relative paths of the published files, sorted. */
  readonly filenames: readonly string[];
  readonly partitionsWritten: readonly string[];
  readonly partitionsReplaced: readonly string[];
}


interface Node {
  readonly name: string;
  readonly children: Map<string, Node>;
  /** Source index per contributing source → number of files under this node. */
  readonly sources: Map<number, number>;
  file?: { source: number; size: number };
}

function newNode(name: string): Node {
  return { name, children: new Map(), sources: new Map() };
}

const join = (a: string, b: string): string => (a === '' ? b : b === '' ? a : `${a}/${b}`);
/** A child of a location: 't:' + 'x' is 't:x', 's:_output' + 'x' is 's:_output/x'. */
const childLoc = (loc: Loc, name: string): Loc => (loc.endsWith(':') ? loc + name : `${loc}/${name}`);

/** Builds the output tree; two files with one destination are an error before the commit point. */
export function buildTree(sources: readonly SourceTree[], skip?: ReadonlySet<string>): Node {
  const root = newNode('');
  const seen = new Map<string, string>();
  sources.forEach((src, si) => {
    for (const f of src.files) {
      if (skip?.has(f.path)) continue;
      const other = seen.get(f.path);
      if (other !== undefined) {
        throw new ConflictError(`tasks ${other} and ${src.task} both wrote '${f.path}': every file must have one destination; rename one and commit that task again`);
      }
      seen.set(f.path, src.task);
      let node = root;
      node.sources.set(si, (node.sources.get(si) ?? 0) + 1);
      for (const seg of f.path.split('/')) {
        let child = node.children.get(seg);
        if (!child) node.children.set(seg, (child = newNode(seg)));
        if (child.file) throw new ConflictError(`'${f.path}' needs '${seg}' to be a directory, but another task wrote a file there`);
        node = child;
        node.sources.set(si, (node.sources.get(si) ?? 0) + 1);
      }
      if (node.children.size > 0) throw new ConflictError(`'${f.path}' is a file in one task and a directory in another`);
      node.file = { source: si, size: f.size };
    }
  });
  return root;
}

/** Paths in the output that already exist in the target as files (append clashes to compare). */
export function findClashes(input: Pick<PlanInput, 'sources' | 'target'>): string[] {
  const out: string[] = [];
  for (const src of input.sources) {
    for (const f of src.files) {
      const dir = posix.dirname(f.path);
      const kind = input.target.dirs.get(dir === '.' ? '' : dir)?.get(posix.basename(f.path));
      if (kind !== undefined) out.push(f.path);
    }
  }
  return out.sort();
}

class Planner {
  private readonly phases: PlanOp[][] = [];
  private readonly replaceUnits: Set<string>;
  private readonly deletes: PlanOp[] = [];
  private readonly replaced = new Set<string>();

  constructor(private readonly input: PlanInput, private readonly tree: Node) {
    this.replaceUnits = new Set(input.mode === 'overwrite' ? input.replaceUnits : []);
  }

  private add(phase: number, op: PlanOp): void {
    while (this.phases.length <= phase) this.phases.push([]);
    this.phases[phase]!.push(op);
  }

  private src(si: number, rel: string): Loc {
    const root = this.input.sources[si]!.root;
    // An adopted leftover's output on a store without rename stays where it is in the target.
    return root.startsWith('t:') ? (rel === '' ? root : childLoc(root, rel)) : 's:' + join(root, rel);
  }

  private targetKind(rel: string): TargetKind | undefined {
    if (rel === '') return this.input.target.exists ? 'dir' : undefined;
    const parent = posix.dirname(rel);
    return this.input.target.dirs.get(parent === '.' ? '' : parent)?.get(posix.basename(rel));
  }

  private targetChildren(rel: string): ReadonlyMap<string, TargetKind> {
    const c = this.input.target.dirs.get(rel);
    if (!c) throw new Error(`planner: target directory '${rel}' was not listed`);
    return c;
  }

  /** The source that contributes most files under a node: it moves whole, the rest join it. */
  private static largest(node: Node, exclude: ReadonlySet<number>): number {
    let best = -1;
    let bestN = -1;
    for (const [si, n] of node.sources) if (!exclude.has(si) && n > bestN) [best, bestN] = [si, n];
    return best;
  }

  private remaining(node: Node, placed: ReadonlySet<number>): number[] {
    if (placed.size === 0) return [...node.sources.keys()];
    return [...node.sources.keys()].filter((si) => !placed.has(si));
  }

  /**
   * Moves `node` (table-relative `rel`) to the absent location `dest`, starting at `phase`.
   * `placed`: sources whose content under this node is already at dest. Returns the last phase used.
   */
  private moveIntoAbsent(node: Node, rel: string, dest: Loc, placed: ReadonlySet<number>, phase: number): number {
    if (node.file) {
      this.add(phase, this.fileOp(this.src(node.file.source, rel), dest, false));
      return phase;
    }
    const rest = this.remaining(node, placed);
    if (rest.length === 0) return phase - 1;
    if (!this.input.renameDirs) {
      let last = phase;
      for (const [name, child] of node.children) last = Math.max(last, this.moveIntoAbsent(child, join(rel, name), childLoc(dest, name), placed, phase));
      return last;
    }
    const lead = Planner.largest(node, placed);
    this.add(phase, { op: 'move', from: this.src(lead, rel), to: dest, dir: true });
    if (rest.length === 1) return phase;
    const inPlace = new Set(placed).add(lead);
    let last = phase;
    for (const [name, child] of node.children) {
      const childDest = childLoc(dest, name);
      const childRel = join(rel, name);
      if (child.sources.has(lead)) last = Math.max(last, this.mergeInto(child, childRel, childDest, inPlace, phase + 1, null));
      else last = Math.max(last, this.moveIntoAbsent(child, childRel, childDest, inPlace, phase + 1));
    }
    return last;
  }

  /**
   * Merges `node` into the existing directory `dest`. `existing` lists what dest held before the
   * job (null when dest was created by this plan: only `placed` sources are there).
   */
  private mergeInto(node: Node, rel: string, dest: Loc, placed: ReadonlySet<number>, phase: number, existing: ReadonlyMap<string, TargetKind> | null): number {
    let last = phase;
    for (const [name, child] of node.children) {
      const childRel = join(rel, name);
      const childDest = childLoc(dest, name);
      const placedHere = placed.size > 0 && [...child.sources.keys()].some((si) => placed.has(si));
      if (placedHere && this.remaining(child, placed).length === 0) continue;
      const old = existing?.get(name);
      if (old === undefined && !placedHere) {
        last = Math.max(last, this.publishNew(child, childRel, childDest, placed, phase));
      } else if (child.file) {
        if (old !== undefined && old !== 'file') throw new ConflictError(`'${childRel}' is a file in the job's output but a directory in the target`);
        this.add(phase, this.fileOp(this.src(child.file.source, childRel), childDest, old !== undefined));
      } else {
        if (old !== undefined && old !== 'dir') throw new ConflictError(`'${childRel}' is a directory in the job's output but a file in the target`);
        const childExisting = old !== undefined && dest.startsWith('t:') ? this.targetChildren(childRel) : null;
        last = Math.max(last, this.mergeInto(child, childRel, childDest, placed, phase, childExisting));
      }
    }
    return last;
  }

  /** A node new to the target: a single source moves whole; several meet in staging first. */
  private publishNew(node: Node, rel: string, dest: Loc, placed: ReadonlySet<number>, phase: number): number {
    const rest = this.remaining(node, placed);
    const direct = node.file || rest.length === 1 || !this.input.renameDirs || dest.startsWith('s:');
    if (direct) return this.moveIntoAbsent(node, rel, dest, placed, phase);
    const staged = 's:' + join(OUTPUT_DIR, rel);
    this.add(phase, { op: 'mkdir', path: 's:' + posix.dirname(join(OUTPUT_DIR, rel)) });
    const last = this.moveIntoAbsent(node, rel, staged, placed, phase + 1);
    this.add(last + 1, { op: 'move', from: staged, to: dest, dir: true });
    return last + 1;
  }

  private fileOp(from: Loc, to: Loc, replace: boolean): PlanOp {
    if (!this.input.renameDirs) return { op: 'copy', from, to };
    return replace ? { op: 'move', from, to, replace: true } : { op: 'move', from, to };
  }

  /** Old data under a replaced unit that the output does not overwrite: deleted at the end. */
  private deleteOldData(rel: string, node: Node | undefined): void {
    const kind = this.targetKind(rel);
    if (kind === undefined) return;
    if (kind !== 'dir') {
      if (!node?.file) this.deletes.push({ op: 'delete', path: 't:' + rel, dir: false });
      return;
    }
    if (!node) {
      if (rel !== '' && !this.hasNonData(rel)) {
        this.deletes.push({ op: 'delete', path: 't:' + rel, dir: true });
        return;
      }
    }
    for (const [name, k] of this.targetChildren(rel)) {
      if (!isDataName(name)) continue;
      const childRel = join(rel, name);
      const child = node?.children.get(name);
      if (!child) this.deletes.push({ op: 'delete', path: 't:' + childRel, dir: k === 'dir' });
      else if (k === 'dir' && !child.file) this.deleteOldData(childRel, child);
    }
  }

  private hasNonData(rel: string): boolean {
    const c = this.input.target.dirs.get(rel);
    return c === undefined || [...c.keys()].some((n) => !isDataName(n));
  }

  private nodeAt(rel: string): Node | undefined {
    let node: Node | undefined = this.tree;
    if (rel === '') return node;
    for (const seg of rel.split('/')) node = node?.children.get(seg);
    return node;
  }

  plan(): PlanPhase[] {
    const { target } = this.input;
    if (!target.exists) {
      this.planAbsentTarget();
    } else {
      this.planExistingTarget();
    }
    if (this.deletes.length) this.phases.push(this.deletes);
    return this.phases.filter((p) => p.length > 0);
  }

  private planAbsentTarget(): void {
    const root = this.tree;
    const sources = [...root.sources.keys()];
    if (sources.length === 0) {
      this.add(0, { op: 'mkdir', path: 't:' });
    } else if (sources.length === 1 && this.input.renameDirs) {
      this.add(0, { op: 'move', from: this.src(sources[0]!, ''), to: 't:', dir: true });
    } else if (this.input.renameDirs) {
      // Several tasks: their trees meet in staging, and the target appears with one rename.
      const last = this.moveIntoAbsent(root, '', 's:' + OUTPUT_DIR, new Set(), 0);
      this.add(last + 1, { op: 'move', from: 's:' + OUTPUT_DIR, to: 't:', dir: true });
    } else {
      this.moveIntoAbsent(root, '', 't:', new Set(), 0);
    }
  }

  private planExistingTarget(): void {
    const units = [...this.replaceUnits].sort();
    // Replaced units the target holds as a directory with only data in it are swapped whole.
    const swapped = new Set<string>();
    for (const u of units) {
      const node = this.nodeAt(u);
      const kind = this.targetKind(u);
      if (kind !== undefined) this.replaced.add(u);
      if (u === '' || !node || kind === undefined) continue;
      if (kind === 'dir' && this.hasNonData(u)) continue;
      if (!this.input.renameDirs) continue;
      swapped.add(u);
      const trash = 's:' + join(TRASH_DIR, u);
      const parentTrash = 's:' + posix.dirname(join(TRASH_DIR, u));
      this.add(0, { op: 'mkdir', path: parentTrash });
      let from: Loc;
      let phase = 1;
      const rest = this.remaining(node, new Set());
      if (node.file || rest.length === 1) {
        from = this.src(rest[0]!, u);
      } else {
        from = 's:' + join(OUTPUT_DIR, u);
        this.add(0, { op: 'mkdir', path: 's:' + posix.dirname(join(OUTPUT_DIR, u)) });
        phase = this.moveIntoAbsent(node, u, from, new Set(), 1) + 1;
      }
      this.add(phase, { op: 'swap', path: 't:' + u, trash, from, dir: !node.file });
    }
    for (const u of units) if (!swapped.has(u)) this.deleteOldData(u, this.nodeAt(u));
    this.mergeSkipping(this.tree, '', swapped);
  }

  /** Merges the output into the existing target, leaving out the units already swapped. */
  private mergeSkipping(node: Node, rel: string, swapped: ReadonlySet<string>): void {
    if (swapped.size === 0) {
      this.mergeInto(node, rel, 't:' + rel, new Set(), 0, this.targetChildren(rel));
      return;
    }
    const pruned = newNode(node.name);
    for (const [name, child] of node.children) {
      const childRel = join(rel, name);
      if (swapped.has(childRel)) continue;
      const inside = [...swapped].some((s) => s.startsWith(childRel + '/'));
      if (inside && this.targetKind(childRel) === 'dir') {
        this.mergeSkipping(child, childRel, swapped);
        continue;
      }
      pruned.children.set(name, child);
      for (const [si, n] of child.sources) pruned.sources.set(si, (pruned.sources.get(si) ?? 0) + n);
    }
    this.mergeInto(pruned, rel, rel === '' ? 't:' : 't:' + rel, new Set(), 0, this.targetChildren(rel));
  }

  replacedUnits(): string[] {
    return [...this.replaced].sort();
  }
}

/** Full partition paths ('' for an unpartitioned table) of the output's files. */
export function partitionsOf(files: readonly { path: string }[], depth: number): string[] {
  if (depth === 0) return [];
  const set = new Set<string>();
  for (const f of files) set.add(f.path.split('/').slice(0, depth).join('/'));
  return [...set].sort();
}

export function planCommit(input: PlanInput, partitionDepth: number): CommitPlan {
  if (input.mode === 'create' && input.target.exists) {
    throw new UsageError('planner: create mode needs an absent target');
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
