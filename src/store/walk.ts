// Walking a directory's files: the one recursive listing the protocol uses for staged output.

import { isTempName } from './temp-names.js';
import type { Entry, Store } from './types.js';

export interface WalkOptions {
  /** Fill size and mtime (costs a stat per entry on some stores). */
  readonly details?: boolean;
  /** Delete temp files met on the way (a killed step's debris) instead of only skipping them. */
  readonly removeTemps?: boolean;
  /** Names directly under `dir` that are not files of it (an attempt marker). */
  readonly ignoreTop?: ReadonlySet<string>;
}

/**
 * Every file under a directory, paths relative to it, sorted; does not follow symbolic links.
 * Temp files (the reserved pattern: writes in progress, or a killed step's debris) are never output.
 */
export async function walkFiles(store: Store, dir: string, opts: WalkOptions = {}): Promise<Entry[]> {
  const out: Entry[] = [];
  const visit = async (d: string, rel: string): Promise<void> => {
    const entries = await store.list(d, { details: opts.details ?? false });
    await Promise.all(
      entries.map(async (e) => {
        // Temp files are never output; a killed step's ones go when the next step asks (§5.12).
        if (isTempName(e.name)) {
          if (opts.removeTemps) await store.delete(e.path, e.kind === 'dir');
          return;
        }
        if (rel === '' && opts.ignoreTop?.has(e.name)) return;
        const r = rel ? `${rel}/${e.name}` : e.name;
        if (e.kind === 'dir') await visit(e.path, r);
        else if (e.kind === 'file') out.push({ ...e, name: r });
      }),
    );
  };
  await visit(dir, '');
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
