// Write access to local directories, checked before a commit point (protocol.md §5.13): a commit
// that could not finish must fail before it starts, not halfway through.

import { constants as fsc, promises as fs } from 'node:fs';
import path from 'node:path';
import { StoreError } from '../errors.js';

/**
 * The directory whose entries a change at `dir` touches: `dir` itself, or its nearest existing
 * parent. A file standing where the commit puts a directory is replaced in its parent (an
 * overwritten partition), so the parent is judged, not the file's mode bits.
 */
async function nearestExisting(dir: string): Promise<string> {
  for (let d = dir; ; d = path.dirname(d)) {
    try {
      return (await fs.stat(d)).isDirectory() ? d : path.dirname(d);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || d === path.dirname(d)) return d;
    }
  }
}

export async function checkWritableLocal(dirs: readonly string[]): Promise<void> {
  const seen = new Set<string>();
  for (const dir of dirs) {
    const d = await nearestExisting(dir);
    if (seen.has(d)) continue;
    seen.add(d);
    try {
      await fs.access(d, fsc.W_OK | fsc.X_OK);
    } catch (e) {
      throw new StoreError(
        'refused',
        'checkWritable',
        [d],
        `cannot change this directory (${(e as NodeJS.ErrnoException).code ?? 'no access'}): give this user write access, then run the step again`,
      );
    }
  }
}
