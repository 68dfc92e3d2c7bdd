// The planner proper: turns the output tree and the target snapshot into ordered phases of
// renames or copies, swaps and deletes.
// Keeps protocol.md §5.2 (exactly the output) and §5.3 (old data goes once the new is in place).

import { posix } from 'node:path';
import { BlockedError, InternalError } from '../errors.js';
import { OUTPUT_DIR, TRASH_DIR } from '../job/layout.js';
import { dirsHolding, isDataName } from '../paths.js';
import { PhaseOps } from './ops.js';
import { childLoc, join, newNode, type Node, type OutputTree } from './tree.js';
import type { Loc, PlanInput, PlanOp, PlanPhase, TargetKind } from './types.js';

/** A directory of the output merged into one that exists: `existing` lists what it held before the job. */
interface MergeInto {
  readonly node: Node;
  /** Table-relative. */
  readonly rel: string;
  readonly dest: Loc;
  readonly existing: ReadonlyMap<string, TargetKind> | null;
}

export class Planner {
  private readonly phases: PhaseOps[] = [];
  private readonly replaceUnits: Set<string>;
  private readonly deletes: PlanOp[] = [];
  private readonly replaced = new Set<string>();
  private readonly madeDirs = new Set<string>();

  /** Directories (and files) move by rename; else each file is copied. */
  private readonly renames: boolean;

  constructor(
    private readonly input: PlanInput,
    private readonly tree: OutputTree,
  ) {
    this.renames = input.strategy === 'rename';
    this.replaceUnits = new Set(input.mode === 'overwrite' ? input.replaceUnits : []);
  }

  private add(phase: number, op: PlanOp): void {
    while (this.phases.length <= phase) this.phases.push(new PhaseOps());
    this.phases[phase]!.push(op);
  }

  /** A mkdir, once per phase: two partitions parked under one trash dir need it made once. */
  private mkdir(phase: number, path: Loc): void {
    const key = `${phase} ${path}`;
    if (this.madeDirs.has(key)) return;
    this.madeDirs.add(key);
    this.add(phase, { op: 'mkdir', path });
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
    if (!c) throw new InternalError(`planner: target directory '${rel}' was not listed`);
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
      this.add(phase, this.fileOp(this.src(node.file.source, rel), dest, false, node.file));
      return phase;
    }
    const rest = this.remaining(node, placed);
    if (rest.length === 0) return phase - 1;
    if (!this.renames) {
      let last = phase;
      for (const [name, child] of this.tree.children(node))
        last = Math.max(last, this.moveIntoAbsent(child, join(rel, name), childLoc(dest, name), placed, phase));
      return last;
    }
    const lead = Planner.largest(node, placed);
    this.add(phase, { op: 'move', from: this.src(lead, rel), to: dest, dir: true });
    if (rest.length === 1) return phase;
    const inPlace = new Set(placed).add(lead);
    let last = phase;
    for (const [name, child] of this.tree.children(node)) {
      const childDest = childLoc(dest, name);
      const childRel = join(rel, name);
      if (child.sources.has(lead))
        last = Math.max(
          last,
          this.mergeInto({ node: child, rel: childRel, dest: childDest, existing: null }, inPlace, phase + 1),
        );
      else last = Math.max(last, this.moveIntoAbsent(child, childRel, childDest, inPlace, phase + 1));
    }
    return last;
  }

  /**
   * Merges `node` into the existing directory `dest`. `existing` lists what dest held before the
   * job (null when dest was created by this plan: only `placed` sources are there).
   */
  private mergeInto(into: MergeInto, placed: ReadonlySet<number>, phase: number): number {
    const { node, rel, dest, existing } = into;
    let last = phase;
    for (const [name, child] of this.tree.children(node)) {
      const childRel = join(rel, name);
      const childDest = childLoc(dest, name);
      const placedHere = placed.size > 0 && [...child.sources.keys()].some((si) => placed.has(si));
      if (placedHere && this.remaining(child, placed).length === 0) continue;
      const old = existing?.get(name);
      if (old === undefined && !placedHere) {
        last = Math.max(last, this.publishNew(child, childRel, childDest, placed, phase));
      } else if (child.file) {
        if (old !== undefined && old !== 'file')
          throw new BlockedError({ reason: 'kind-mismatch', path: childRel, output: 'file', target: old });
        this.add(phase, this.fileOp(this.src(child.file.source, childRel), childDest, old !== undefined, child.file));
      } else {
        if (old !== undefined && old !== 'dir')
          throw new BlockedError({ reason: 'kind-mismatch', path: childRel, output: 'dir', target: old });
        const childExisting = old !== undefined && dest.startsWith('t:') ? this.targetChildren(childRel) : null;
        last = Math.max(
          last,
          this.mergeInto({ node: child, rel: childRel, dest: childDest, existing: childExisting }, placed, phase),
        );
      }
    }
    return last;
  }

  /** A node new to the target: a single source moves whole; several meet in staging first. */
  private publishNew(node: Node, rel: string, dest: Loc, placed: ReadonlySet<number>, phase: number): number {
    const rest = this.remaining(node, placed);
    const direct = node.file || rest.length === 1 || !this.renames || dest.startsWith('s:');
    if (direct) return this.moveIntoAbsent(node, rel, dest, placed, phase);
    const staged = 's:' + join(OUTPUT_DIR, rel);
    this.mkdir(phase, 's:' + posix.dirname(join(OUTPUT_DIR, rel)));
    const last = this.moveIntoAbsent(node, rel, staged, placed, phase + 1);
    this.add(last + 1, { op: 'move', from: staged, to: dest, dir: true });
    return last + 1;
  }

  private fileOp(from: Loc, to: Loc, replace: boolean, file: NonNullable<Node['file']>): PlanOp {
    if (file.upload) {
      if (!to.startsWith('t:'))
        throw new InternalError(`planner: the pending upload for '${to}' can only complete at its final path`);
      return { op: 'copy', from, to, upload: { id: file.upload.id, etags: file.upload.etags, size: file.size } };
    }
    // `replace`: the destination holds old data, so its presence proves nothing about this copy.
    if (!this.renames)
      return replace
        ? { op: 'copy', from, to, size: file.size, replace: true }
        : { op: 'copy', from, to, size: file.size };
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
      const child = node && this.tree.child(node, name);
      if (!child) this.deletes.push({ op: 'delete', path: 't:' + childRel, dir: k === 'dir' });
      else if (k === 'dir' && !child.file) this.deleteOldData(childRel, child);
    }
  }

  private hasNonData(rel: string): boolean {
    const c = this.input.target.dirs.get(rel);
    return c === undefined || [...c.keys()].some((n) => !isDataName(n));
  }

  private nodeAt(rel: string): Node | undefined {
    return this.tree.at(rel);
  }

  plan(): PlanPhase[] {
    const { target } = this.input;
    if (!target.exists) {
      this.planAbsentTarget();
    } else {
      this.planExistingTarget();
    }
    const phases = this.phases.map((p) => p.ops);
    if (this.deletes.length) phases.push(this.deletes);
    return phases.filter((p) => p.length > 0);
  }

  private planAbsentTarget(): void {
    const root = this.tree.root;
    const sources = [...root.sources.keys()];
    if (sources.length === 0) {
      this.mkdir(0, 't:');
    } else if (sources.length === 1 && this.renames) {
      this.add(0, { op: 'move', from: this.src(sources[0]!, ''), to: 't:', dir: true });
    } else if (this.renames) {
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
      if (!this.renames) continue;
      swapped.add(u);
      const trash = 's:' + join(TRASH_DIR, u);
      const parentTrash = 's:' + posix.dirname(join(TRASH_DIR, u));
      this.mkdir(0, parentTrash);
      let from: Loc;
      let phase = 1;
      const rest = this.remaining(node, new Set());
      if (node.file || rest.length === 1) {
        from = this.src(rest[0]!, u);
      } else {
        from = 's:' + join(OUTPUT_DIR, u);
        this.mkdir(0, 's:' + posix.dirname(join(OUTPUT_DIR, u)));
        phase = this.moveIntoAbsent(node, u, from, new Set(), 1) + 1;
      }
      this.add(phase, { op: 'swap', path: 't:' + u, trash, from, dir: !node.file });
    }
    for (const u of units) if (!swapped.has(u)) this.deleteOldData(u, this.nodeAt(u));
    this.mergeSkipping(this.tree.root, '', swapped, dirsHolding(swapped));
  }

  /**
   * Merges the output into the existing target, leaving out the units already swapped (`holding`: the directories they
   * are in).
   */
  private mergeSkipping(node: Node, rel: string, swapped: ReadonlySet<string>, holding: ReadonlySet<string>): void {
    if (swapped.size === 0) {
      this.mergeInto({ node, rel, dest: 't:' + rel, existing: this.targetChildren(rel) }, new Set(), 0);
      return;
    }
    const pruned = newNode(node.name);
    for (const [name, child] of this.tree.children(node)) {
      const childRel = join(rel, name);
      if (swapped.has(childRel)) continue;
      if (holding.has(childRel) && this.targetKind(childRel) === 'dir') {
        this.mergeSkipping(child, childRel, swapped, holding);
        continue;
      }
      pruned.children.set(name, child);
      for (const [si, n] of child.sources) pruned.sources.set(si, (pruned.sources.get(si) ?? 0) + n);
    }
    this.mergeInto(
      { node: pruned, rel, dest: rel === '' ? 't:' : 't:' + rel, existing: this.targetChildren(rel) },
      new Set(),
      0,
    );
  }

  replacedUnits(): string[] {
    return [...this.replaced].sort();
  }
}
