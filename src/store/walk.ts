// Listing a whole tree: the store's own way where it has one, else one list() per directory.

import type { Entry, ListOptions, Store } from './types.js';

/**
 * Every entry under `dir` (files, directories and the rest), `name` relative to it; a directory
 * comes before what is inside it. [] when `dir` does not exist.
 */
export async function walkTree(store: Store, dir: string, opts: ListOptions = {}): Promise<Entry[]> {
  if (store.listTree) return store.listTree(dir, opts);
  const out: Entry[] = [];
  const visit = async (d: string, rel: string): Promise<void> => {
    const entries = (await store.list(d, opts)).map((e) => ({ ...e, name: rel ? `${rel}/${e.name}` : e.name }));
    out.push(...entries);
    await Promise.all(entries.filter((e) => e.kind === 'dir').map((e) => visit(e.path, e.name)));
  };
  await visit(dir, '');
  return out;
}
