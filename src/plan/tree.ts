// The job's output as one tree: where each file comes from, and clashes with the target.

import { posix } from 'node:path';
import { ConflictError } from '../errors.js';
import type { Loc, PlanInput, SourceTree } from './types.js';


export interface Node {
  readonly name: string;
  readonly children: Map<string, Node>;
  /** Source index per contributing source → number of files under this node. */
  readonly sources: Map<number, number>;
  file?: { source: number; size: number };
}

export function newNode(name: string): Node {
  return { name, children: new Map(), sources: new Map() };
}

export const join = (a: string, b: string): string => (a === '' ? b : b === '' ? a : `${a}/${b}`);
/** A child of a location: 't:' + 'x' is 't:x', 's:_output' + 'x' is 's:_output/x'. */
export const childLoc = (loc: Loc, name: string): Loc => (loc.endsWith(':') ? loc + name : `${loc}/${name}`);

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
