// The job's output as one tree: where each file comes from, and clashes with the target.

import { ConflictError, type ConflictDetail } from '../errors.js';
import { ownString } from '../util/own-string.js';
import type { Loc, SourceFile, SourceTree, TargetSnapshot } from './types.js';

export interface FileInfo {
  readonly source: number;
  readonly size: number;
  readonly upload?: SourceFile['upload'];
}

export interface Node {
  readonly name: string;
  /** Directories as nodes; a file as a number, its row in the tree's file table (see OutputTree). */
  readonly children: Map<string, Node | number>;
  /** Source index per contributing source → number of files under this node. */
  readonly sources: Map<number, number>;
  readonly file?: FileInfo;
}

/**
 * Two files that cannot both be published: one path written twice ('same-path'), or a file and a
 * path inside it ('file-and-dir'). The message gives a task's way out (it can commit again); a
 * caller for which that is no way out gives its own, from `what` and `rule`.
 */
export class PathClash extends ConflictError {
  declare readonly detail: Extract<ConflictDetail, { reason: 'path-clash' }>;
  constructor(clash: 'same-path' | 'file-and-dir', what: string, rule: string) {
    super({ reason: 'path-clash', clash, what, rule, when: 'task', advice: null });
  }
}

/** One task's files name one path twice: its claim is damaged (a listing never repeats a name). */
export class ListedTwice extends Error {
  constructor(
    readonly task: string,
    readonly path: string,
  ) {
    super(`lists '${path}' twice`);
  }
}

export function newNode(name: string): Node {
  return { name, children: new Map(), sources: new Map() };
}

const NO_CHILDREN: ReadonlyMap<string, Node | number> = new Map();

export const join = (a: string, b: string): string => (a === '' ? b : b === '' ? a : `${a}/${b}`);
/** A child of a location: 't:' + 'x' is 't:x', 's:_output' + 'x' is 's:_output/x'. */
export const childLoc = (loc: Loc, name: string): Loc => (loc.endsWith(':') ? loc + name : `${loc}/${name}`);

/**
 * The output tree. A file costs its name, one map entry in its directory and a row of two typed
 * arrays (source, size) — no object of its own: at a million files objects per file are most of a
 * step's memory (protocol.md §9.2). Where the planner looks at a file, it gets a short-lived node.
 */
export class OutputTree {
  readonly root: Node = newNode('');
  private sourceOf = new Int32Array(1024);
  private sizeOf = new Float64Array(1024);
  private rows = 0;
  private readonly uploads = new Map<number, NonNullable<SourceFile['upload']>>();
  /** Per source, the `sources` map every one of its files shares. */
  private readonly only: Map<number, number>[] = [];
  files = 0;
  bytes = 0;

  /** `tasks[si]` names source si in error messages. */
  constructor(private readonly tasks: readonly string[]) {}

  /** Adds a file of source `si`; two files with one destination are an error before the commit point. */
  add(si: number, path: string, size: number, upload?: SourceFile['upload']): void {
    const cut = path.lastIndexOf('/');
    const segs = cut < 0 ? [] : path.slice(0, cut).split('/');
    const leaf = ownString(path.slice(cut + 1));
    let node = this.root;
    node.sources.set(si, (node.sources.get(si) ?? 0) + 1);
    for (const [i, seg] of segs.entries()) {
      let child = node.children.get(seg);
      if (child === undefined) {
        const name = ownString(seg);
        node.children.set(name, (child = newNode(name)));
      }
      if (typeof child === 'number')
        throw this.fileAndDir(this.sourceOf[child]!, si, segs.slice(0, i + 1).join('/'), path);
      node = child;
      node.sources.set(si, (node.sources.get(si) ?? 0) + 1);
    }
    const other = node.children.get(leaf);
    if (typeof other === 'number' && this.sourceOf[other] === si) throw new ListedTwice(this.tasks[si]!, path);
    if (typeof other === 'number') {
      throw new PathClash(
        'same-path',
        `tasks ${this.tasks[this.sourceOf[other]!]} and ${this.tasks[si]} both wrote '${path}'`,
        'every file must have one destination',
      );
    }
    if (other) throw this.fileAndDir(si, other.sources.keys().next().value!, path, `${path}/…`);
    if (this.rows === this.sizeOf.length) this.grow();
    const row = this.rows++;
    this.sourceOf[row] = si;
    this.sizeOf[row] = size;
    if (upload) this.uploads.set(row, upload);
    node.children.set(leaf, row);
    this.files++;
    this.bytes += size;
  }

  /** A file at `file` (written by source `a`) where source `b` wrote `below` inside it. */
  private fileAndDir(a: number, b: number, file: string, below: string): PathClash {
    const who = a === b ? `task ${this.tasks[a]} wrote both` : `tasks ${this.tasks[a]} and ${this.tasks[b]} wrote`;
    return new PathClash(
      'file-and-dir',
      `${who} a file '${file}' and '${below}' inside it`,
      'a path is a file or a directory, not both',
    );
  }

  private grow(): void {
    const src = new Int32Array(this.sourceOf.length * 2);
    src.set(this.sourceOf);
    const size = new Float64Array(this.sizeOf.length * 2);
    size.set(this.sizeOf);
    this.sourceOf = src;
    this.sizeOf = size;
  }

  fileOf(row: number): FileInfo {
    const upload = this.uploads.get(row);
    return upload
      ? { source: this.sourceOf[row]!, size: this.sizeOf[row]!, upload }
      : { source: this.sourceOf[row]!, size: this.sizeOf[row]! };
  }

  private sharedSources(si: number): Map<number, number> {
    return (this.only[si] ??= new Map([[si, 1]]));
  }

  /** A child as a node (a file: a short-lived one). */
  nodeOf(name: string, child: Node | number): Node {
    if (typeof child !== 'number') return child;
    const file = this.fileOf(child);
    return {
      name,
      children: NO_CHILDREN as Map<string, Node | number>,
      sources: this.sharedSources(file.source),
      file,
    };
  }

  child(node: Node, name: string): Node | undefined {
    const c = node.children.get(name);
    return c === undefined ? undefined : this.nodeOf(name, c);
  }

  *children(node: Node): Generator<[string, Node]> {
    for (const [name, c] of node.children) yield [name, this.nodeOf(name, c)];
  }

  /** The node at a table-relative path ('' is the root). */
  at(rel: string): Node | undefined {
    let node: Node | undefined = this.root;
    if (rel === '') return node;
    for (const seg of rel.split('/')) node = node?.file ? undefined : node && this.child(node, seg);
    return node;
  }

  /** Takes a file out of the output (an append clash found identical); emptied directories go too. */
  remove(path: string): void {
    const segs = path.split('/');
    const chain: Node[] = [this.root];
    for (const seg of segs.slice(0, -1)) {
      const c = chain.at(-1)!.children.get(seg);
      if (c === undefined || typeof c === 'number') return;
      chain.push(c);
    }
    const leaf = segs.at(-1)!;
    const row = chain.at(-1)!.children.get(leaf);
    if (typeof row !== 'number') return;
    const si = this.sourceOf[row]!;
    chain.at(-1)!.children.delete(leaf);
    this.files--;
    this.bytes -= this.sizeOf[row]!;
    for (let i = chain.length - 1; i >= 0; i--) {
      const n = chain[i]!;
      const left = n.sources.get(si)! - 1;
      if (left > 0) n.sources.set(si, left);
      else n.sources.delete(si);
      if (i > 0 && n.sources.size === 0) chain[i - 1]!.children.delete(n.name);
    }
  }

  /** Every file, depth first: its table-relative path, size and source. */
  forEachFile(fn: (path: string, file: FileInfo) => void): void {
    const visit = (node: Node, rel: string): void => {
      for (const [name, c] of node.children) {
        if (typeof c === 'number') fn(join(rel, name), this.fileOf(c));
        else visit(c, join(rel, name));
      }
    };
    visit(this.root, '');
  }

  /** Every directory of the output, table-relative ('' for the root). */
  dirs(): string[] {
    const out: string[] = [];
    const visit = (node: Node, rel: string): void => {
      out.push(rel);
      for (const [name, c] of node.children) if (typeof c !== 'number') visit(c, join(rel, name));
    };
    visit(this.root, '');
    return out;
  }
}

/** Builds the output tree; two files with one destination are an error before the commit point. */
export function buildTree(sources: readonly SourceTree[], skip?: ReadonlySet<string>): OutputTree {
  const tree = new OutputTree(sources.map((s) => s.task));
  sources.forEach((src, si) => {
    for (const f of src.files) if (!skip?.has(f.path)) tree.add(si, f.path, f.size, f.upload);
  });
  return tree;
}

/** Paths in the output that already exist in the target as files (append clashes to compare). */
export function findClashes(tree: OutputTree, target: TargetSnapshot): string[] {
  const out: string[] = [];
  const visit = (node: Node, rel: string): void => {
    const listed = target.dirs.get(rel);
    if (!listed) return;
    for (const [name, c] of node.children) {
      if (typeof c !== 'number') visit(c, join(rel, name));
      else if (listed.get(name) === 'file') out.push(join(rel, name));
    }
  };
  visit(tree.root, '');
  return out.sort();
}
