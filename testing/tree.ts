// Builds fixture trees from object literals and reads trees back, through the Store interface.

import { posix } from 'node:path';
import type { Store } from '../src/store/types.js';

export type Tree = Record<string, string>;

export async function writeTree(store: Store, base: string, tree: Tree): Promise<void> {
  for (const [rel, content] of Object.entries(tree)) {
    if (rel.endsWith('/')) await store.mkdirs(posix.join(base, rel));
    else await store.writeFile(posix.join(base, rel), content);
  }
}

/** Every file under `base` (relative path → content); empty directories as 'dir/' → ''. */
export async function readTree(store: Store, base: string, opts: { dirs?: boolean } = {}): Promise<Tree> {
  const out: Tree = {};
  const visit = async (dir: string, rel: string): Promise<void> => {
    const entries = await store.list(dir);
    if (entries.length === 0 && rel && opts.dirs) out[rel + '/'] = '';
    for (const e of entries) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.kind === 'dir') await visit(e.path, r);
      else out[r] = (await store.readFile(e.path))?.toString('utf8') ?? '<vanished>';
    }
  };
  await visit(base, '');
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** The tree without `_SUCCESS` (its content has timestamps). */
export function data(tree: Tree): Tree {
  return Object.fromEntries(Object.entries(tree).filter(([k]) => k !== '_SUCCESS'));
}
