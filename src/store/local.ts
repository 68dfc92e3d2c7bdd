// The local filesystem store: atomic renames, real directories, claims by link().
// What it provides of protocol.md §7.1, and its limits: §7.2.

import { constants as fsc, createWriteStream, linkSync, promises as fs, unlinkSync } from 'node:fs';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { StoreError } from '../errors.js';
import { checkWritableLocal } from './local-access.js';
import {
  code,
  eachInTreeLocal,
  kindOf,
  listTreeLocal,
  mkdirsOnce,
  realLocalPath,
  removeTreeLocal,
  wrap,
} from './local-tree.js';
import { tempPathFor } from './temp-names.js';
import { counted } from './counting.js';
import { forEachLimit } from '../util/pool.js';
import type { Entry, ListOptions, PutSource, RenameOptions, RenamePair, Store, StoreCapabilities } from './types.js';

const CAPS: StoreCapabilities = {
  directoryRename: true,
  realDirectories: true,
};

/**
 * Runs `write` on a fresh temp path beside `p`, then `finish` (which moves it into place); the
 * temp is removed whenever either fails (a full disk, a quota, any error), so none is left.
 */
async function viaTemp<T>(
  p: string,
  write: (tmp: string) => Promise<void>,
  finish: (tmp: string) => Promise<T>,
): Promise<T> {
  const tmp = tempPathFor(p);
  try {
    await write(tmp);
    return await finish(tmp);
  } catch (e) {
    await fs.rm(tmp, { force: true }).catch(() => undefined);
    throw e;
  }
}

/** Whether two paths name one directory entry (same parent directory, same name). */
async function sameEntry(a: string, b: string): Promise<boolean> {
  if (path.basename(a) !== path.basename(b)) return false;
  const [pa, pb] = await Promise.all([fs.realpath(path.dirname(a)), fs.realpath(path.dirname(b))]);
  return pa === pb;
}

/** Flushes a file's bytes to disk, so that a rename never publishes a name without its data. */
/** From this many files, one sync of the whole filesystem is cheaper than an fsync each. */
const SYNCFS_FROM = 64;

/** syncfs(2) of the filesystem holding `p`, through coreutils' `sync -f`; false when that cannot be run or fails. */
function syncFilesystem(p: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile('sync', ['-f', p], { timeout: 600_000 }, (error) => resolve(error === null));
  });
}

/**
 * Moves a local file to `dst` by rename; false when they are on different filesystems (EXDEV),
 * the file then left where it is. A name already at `dst` is replaced, as a put replaces it.
 */
async function moveLocal(src: string, dst: string): Promise<boolean> {
  try {
    await fs.rename(src, dst);
    return true;
  } catch (e) {
    if (code(e) === 'EXDEV') return false;
    throw e;
  }
}

const exists = (p: string) =>
  fs.access(p).then(
    () => true,
    () => false,
  );

async function syncFile(p: string): Promise<void> {
  const fh = await fs.open(p, 'r+');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export class LocalStore implements Store {
  readonly caps = CAPS;

  toUri(p: string): string {
    return p;
  }

  /** A path reached through a symbolic link names the directory it resolves to (a manifest may record either). */
  pathOfUri(uri: string): string | null {
    return uri.startsWith('/') ? realLocalPath(uri) : null;
  }

  checkWritable(dirs: readonly string[]): Promise<void> {
    return checkWritableLocal(dirs);
  }

  /**
   * Many files: one `sync -f` (syncfs(2) of their filesystem: GNU coreutils), which costs about
   * what a few fsyncs do; a few files, or where that command is missing or fails, an fsync each.
   */
  async syncFiles(paths: readonly string[]): Promise<void> {
    if (paths.length >= SYNCFS_FROM && (await syncFilesystem(paths[0]!))) return;
    await forEachLimit(paths, 16, (p) => syncFile(p).catch((e: unknown) => Promise.reject(wrap(e, 'put', [p]))));
  }

  async sameFilesystem(a: string, b: string): Promise<boolean> {
    const device = async (p: string): Promise<number> => {
      for (let d = p; ; d = path.dirname(d)) {
        try {
          return (await fs.stat(d)).dev;
        } catch (e) {
          if ((code(e) !== 'ENOENT' && code(e) !== 'ENOTDIR') || d === path.dirname(d)) throw wrap(e, 'stat', [d]);
        }
      }
    };
    const [da, db] = await Promise.all([device(a), device(b)]);
    return da === db;
  }

  async stat(p: string): Promise<Entry | null> {
    try {
      const s = await fs.lstat(p);
      return { name: path.basename(p), path: p, kind: kindOf(s), size: s.size, mtimeMs: s.mtimeMs };
    } catch (e) {
      if (code(e) === 'ENOENT' || code(e) === 'ENOTDIR') return null;
      throw wrap(e, 'stat', [p]);
    }
  }

  async list(dir: string, opts: ListOptions = {}): Promise<Entry[]> {
    let dirents;
    try {
      dirents = await fs.readdir(dir, { withFileTypes: true });
    } catch (e) {
      if (code(e) === 'ENOENT' || code(e) === 'ENOTDIR') return [];
      throw wrap(e, 'list', [dir]);
    }
    // A directory lists in no order: a listing from a name reads it whole (protocol.md §3.4).
    const after = opts.startAfter;
    if (after !== undefined) dirents = dirents.filter((d) => d.name > after);
    const entries = dirents.map((d) => ({
      name: d.name,
      path: path.join(dir, d.name),
      kind: kindOf(d),
      size: -1,
      mtimeMs: -1,
    }));
    if (!opts.details) return entries;
    const out: Entry[] = [];
    for (const e of entries) {
      const s = await this.stat(e.path);
      if (s) out.push(s); // vanished meanwhile: not listed
    }
    return out;
  }

  listTree(dir: string, opts: ListOptions = {}): Promise<Entry[]> {
    return listTreeLocal(dir, opts);
  }

  listTreeEach(dir: string, opts: ListOptions, fn: (e: Entry) => void): Promise<void> {
    return eachInTreeLocal(dir, opts, fn);
  }

  async readFile(p: string): Promise<Buffer | null> {
    try {
      return await fs.readFile(p);
    } catch (e) {
      // A file in the way of the path: no file there, as stat and list say too.
      if (code(e) === 'ENOENT' || code(e) === 'ENOTDIR') return null;
      throw wrap(e, 'readFile', [p]);
    }
  }

  private async writeTemp(tmp: string, data: Buffer | string): Promise<void> {
    const fh = await fs.open(tmp, 'wx');
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
  }

  async writeFile(p: string, data: Buffer | string): Promise<void> {
    try {
      await this.mkdirs(path.dirname(p));
      await viaTemp(
        p,
        (tmp) => this.writeTemp(tmp, data),
        (tmp) => fs.rename(tmp, p),
      );
    } catch (e) {
      throw e instanceof StoreError ? e : wrap(e, 'writeFile', [p]);
    }
  }

  /** The whole file is written under a temp name, then link()ed into place (fails if the name exists). */
  async createExclusive(p: string, data: Buffer | string): Promise<boolean> {
    try {
      await this.mkdirs(path.dirname(p));
      return await viaTemp(
        p,
        (tmp) => this.writeTemp(tmp, data),
        async (tmp) => {
          let created = true;
          try {
            await fs.link(tmp, p);
          } catch (e) {
            if (code(e) !== 'EEXIST') throw e;
            created = false;
          }
          // The claim is made (or refused) by now: failing to tidy the temp must not undo that answer.
          await fs.rm(tmp, { force: true }).catch(() => undefined);
          return created;
        },
      );
    } catch (e) {
      throw e instanceof StoreError ? e : wrap(e, 'createExclusive', [p]);
    }
  }

  async mkdirs(p: string): Promise<void> {
    try {
      await mkdirsOnce(p);
    } catch (e) {
      throw wrap(e, 'mkdirs', [p]);
    }
  }

  async rename(src: string, dst: string, opts: RenameOptions = {}): Promise<void> {
    try {
      if (opts.replace) await fs.rename(src, dst);
      else await this.renameNoReplace(src, dst);
    } catch (e) {
      throw e instanceof StoreError ? e : wrap(e, 'rename', [src, dst]);
    }
  }

  /**
   * Files: link() then unlink(), so the destination is created atomically and never clobbered.
   * Directories (link() answers EPERM): rename(2) would silently replace an empty directory,
   * so any existing destination is refused first.
   */
  private async renameNoReplace(src: string, dst: string): Promise<void> {
    try {
      await fs.link(src, dst);
    } catch (e) {
      if (code(e) === 'EEXIST') {
        // A crash between link and unlink leaves both names on one inode: finish the move.
        const [a, b] = await Promise.all([fs.lstat(src), fs.lstat(dst)]);
        if (a.ino === b.ino && a.dev === b.dev) {
          // One name reached by two paths is not two names: unlinking it would lose the file.
          if (await sameEntry(src, dst))
            throw new StoreError('exists', 'rename', [src, dst], 'the source and the destination are the same file');
          await fs.unlink(src);
          return;
        }
        throw new StoreError('exists', 'rename', [src, dst], 'destination exists');
      }
      if (code(e) === 'EPERM' || code(e) === 'EXDEV' || code(e) === 'ENOTSUP' || code(e) === 'EISDIR') {
        await fs.lstat(src); // ENOENT here is the caller's "source gone"
        if (await this.stat(dst)) throw new StoreError('exists', 'rename', [src, dst], 'destination exists');
        await fs.rename(src, dst);
        return;
      }
      throw e;
    }
    await fs.unlink(src);
  }

  /**
   * File moves in bulk: link() and unlink() called directly in slices, which costs a tenth of
   * one promise per call; the event loop gets a turn between slices. A pair that fails is
   * retried through rename(), which knows every special case.
   */
  async renameMany(pairs: readonly RenamePair[]): Promise<(StoreError | null)[]> {
    const out = new Array<StoreError | null>(pairs.length).fill(null);
    const SLICE = 256;
    for (let i = 0; i < pairs.length; i += SLICE) {
      const retry: number[] = [];
      for (let j = i; j < Math.min(pairs.length, i + SLICE); j++) {
        const { src, dst } = pairs[j]!;
        try {
          linkSync(src, dst);
        } catch {
          retry.push(j);
          continue;
        }
        unlinkSync(src);
      }
      for (const j of retry) {
        await this.rename(pairs[j]!.src, pairs[j]!.dst).catch((e: unknown) => {
          out[j] = e instanceof StoreError ? e : wrap(e, 'rename', [pairs[j]!.src, pairs[j]!.dst]);
        });
      }
      await new Promise((r) => setImmediate(r));
    }
    return out;
  }

  async copy(src: string, dst: string): Promise<void> {
    try {
      await fs.copyFile(src, dst, fsc.COPYFILE_FICLONE);
    } catch (e) {
      throw wrap(e, 'copy', [src, dst]);
    }
  }

  async delete(p: string, recursive: boolean): Promise<boolean> {
    try {
      const s = await fs.lstat(p);
      if (s.isDirectory()) {
        if (recursive) await removeTreeLocal(p);
        else await fs.rmdir(p);
      } else {
        await fs.unlink(p);
      }
      return true;
    } catch (e) {
      if (code(e) === 'ENOENT') return false;
      throw wrap(e, 'delete', [p]);
    }
  }

  /** Bytes go to a temp name and are renamed into place whole: a killed or failed put publishes nothing. */
  /** Writes into `dst`'s dir as it is, and makes the dir only when it is missing (one call a file, not three). */
  async put(dst: string, source: PutSource): Promise<void> {
    try {
      // A stream cannot be read twice: its dir is made first.
      if ('stream' in source) await this.mkdirs(path.dirname(dst));
      await this.putOnce(dst, source).catch(async (e: unknown) => {
        if (code(e) !== 'ENOENT' || 'stream' in source || !(await exists(source.localPath))) throw e;
        await this.mkdirs(path.dirname(dst));
        await this.putOnce(dst, source);
      });
    } catch (e) {
      throw e instanceof StoreError ? e : wrap(e, 'put', [dst]);
    }
  }

  private async putOnce(dst: string, source: PutSource): Promise<void> {
    if ('localPath' in source && source.move && (await moveLocal(source.localPath, dst))) {
      source.onTaken?.();
      if (!source.syncLater) await syncFile(dst);
      return;
    }
    await viaTemp(
      dst,
      async (tmp) => {
        if ('localPath' in source) {
          await fs.copyFile(source.localPath, tmp, fsc.COPYFILE_EXCL | fsc.COPYFILE_FICLONE);
          source.onBytes?.((await fs.stat(tmp)).size);
        } else await pipeline(counted(source.stream, source.onBytes), createWriteStream(tmp, { flags: 'wx' }));
        if (!source.syncLater) await syncFile(tmp);
      },
      (tmp) => fs.rename(tmp, dst),
    );
  }
}
