// stage --move: a stage that may consume its sources. Where the store can take a local file by
// rename (the local store, the file on the staging dir's filesystem), the file is renamed into the
// attempt dir: one rename, no bytes copied. Anywhere else it is copied (uploaded) and its source
// removed once the stage has succeeded, as mv does across filesystems. A stage that fails, or whose
// job moved on meanwhile, renames what it took back to where it was; a copy's source stays.

import { rename, unlink } from 'node:fs/promises';

export class SourceMoves {
  /** Store path → the local path the file was renamed from. */
  private readonly taken = new Map<string, string>();
  private readonly takenFrom = new Set<string>();

  constructor(readonly on: boolean) {}

  /** The store took the file at `localPath` by renaming it to `dst` (put's onTaken). */
  took(localPath: string, dst: string): void {
    this.taken.set(dst, localPath);
    this.takenFrom.add(localPath);
  }

  /** Whether the file at `localPath` was renamed into the attempt (its bytes cannot have changed meanwhile). */
  wasTaken(localPath: string): boolean {
    return this.takenFrom.has(localPath);
  }

  /**
   * Renames the files taken among `files` (store paths: a local store's own paths) back to their
   * sources, as far as it can; the rest stays for the caller to remove.
   */
  async giveBack(files: readonly string[]): Promise<void> {
    for (const f of files) {
      const src = this.taken.get(f);
      if (src === undefined) continue;
      if (
        await rename(f, src).then(
          () => true,
          () => false,
        )
      ) {
        this.taken.delete(f);
        this.takenFrom.delete(src);
      }
    }
  }

  /** Once the stage succeeded: removes the sources that were copied, not taken; the ones it could not, named. */
  async removeCopied(sources: readonly { readonly localPath: string }[]): Promise<string[]> {
    if (!this.on) return [];
    const left: string[] = [];
    for (const s of sources) {
      if (this.takenFrom.has(s.localPath)) continue;
      await unlink(s.localPath).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') left.push(s.localPath);
      });
    }
    return left;
  }
}
