// The job's output as one tree: where each file comes from, and clashes with the target.

import { posix } from 'node:path';
import { ConflictError } from '../errors.js';
import type { Loc, PlanInput, SourceFile, SourceTree } from './types.js';


export interface Node {
  readonly name: string;
  readonly children: Map<string, Node>;
  /** Source index per contributing source → number of files under this node. */
  readonly sources: Map<number, number>;
  file?: { source: number; size: number; upload?: SourceFile['upload'] };
}

export function newNode(name: string): Node {
  return { name, children: new Map(), sources: new Map() };
}

/**
 * A file's node shares its (never changed) maps with every file of its source: a file costs one
 * small object, not two maps, which is most of the tree's memory at a million files.
 */
const NO_CHILDREN: ReadonlyMap<string, Node> = new Map();

export const join = (a: string, b: string): string => (a === '' ? b : b === '' ? a : `${a}/${b}`);
/** A child of a location: 't:' + 'x' is 't:x', 's:_output' + 'x' is 's:_output/x'. */
export const childLoc = (loc: Loc, name: string): Loc => (loc.endsWith(':') ? loc + name : `${loc}/${name}`);

/** Builds the output tree; two files with one destination are an error before the commit point. */
export function buildTree(sources: readonly SourceTree[], skip?: ReadonlySet<string>): Node {
  const root = newNode('');
  sources.forEach((src, si) => {
    const only = new Map([[si, 1]]);
    for (const f of src.files) {
      if (skip?.has(f.path)) continue;
      const segs = f.path.split('/');
      const leaf = segs.pop()!;
      let node = root;
      node.sources.set(si, (node.sources.get(si) ?? 0) + 1);
      for (const seg of segs) {
        let child = node.children.get(seg);
        if (!child) node.children.set(seg, (child = newNode(seg)));
        if (child.file) throw new ConflictError(`'${f.path}' needs '${seg}' to be a directory, but another task wrote a file there`);
        node = child;
        node.sources.set(si, (node.sources.get(si) ?? 0) + 1);
      }
      const other = node.children.get(leaf);
      if (other?.file) {
        throw new ConflictError(`tasks ${sources[other.file.source]!.task} and ${src.task} both wrote '${f.path}': every file must have one destination; rename one and commit that task again`);
      }
      if (other) throw new ConflictError(`'${f.path}' is a file in one task and a directory in another`);
      node.children.set(leaf, { name: leaf, children: NO_CHILDREN as Map<string, Node>, sources: only, file: f.upload ? { source: si, size: f.size, upload: f.upload } : { source: si, size: f.size } });
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
