// A claim's list of files: the format of one item, and the list built as the claim's text without
// an object per file (commit-task at a million files, protocol.md §9.2).

import { createHash } from 'node:crypto';
import { itemNumber, itemString } from '../manifest/codec.js';
import { eachEncodedItem, ListLines, type EncodedList } from '../manifest/encode.js';
import { checkRelativePath } from '../paths.js';
import { compareStrings } from '../util/compare.js';

export interface TaskFile {
  /** Path relative to the table root (partition path included). */
  readonly path: string;
  readonly size: number;
  /** A pending upload to the file's final path (S3), completed by commit-job instead of a copy. */
  readonly upload?: { readonly id: string; readonly etags: readonly string[] };
}

/** A claim's files as the lines of its `files` list, with what the steps still ask of them. */
export interface ClaimFiles {
  readonly list: EncodedList;
  readonly bytes: number;
  /** The files among them that are pending uploads (S3): the ones the claim keeps. */
  readonly uploads: readonly TaskFile[];
}

/** One file as its claim item. */
function claimItem(f: TaskFile): object {
  return f.upload
    ? { path: f.path, size: f.size, uploadId: f.upload.id, etags: f.upload.etags }
    : { path: f.path, size: f.size };
}

/** One claim item read back, its path checked as a path from the command line is (protocol.md §5.11). */
export function fileOf(x: unknown): TaskFile {
  const path = itemString(x, 'path');
  checkRelativePath(path, 'file path');
  const size = itemNumber(x, 'size');
  const o = x as Record<string, unknown>;
  if (o.uploadId === undefined && o.etags === undefined) return { path, size };
  const id = itemString(x, 'uploadId');
  const etags = o.etags;
  if (
    id === '' ||
    !Array.isArray(etags) ||
    etags.length === 0 ||
    etags.some((e) => typeof e !== 'string' || e === '')
  ) {
    throw new Error("is a pending upload without its 'uploadId' and the parts' 'etags'");
  }
  return { path, size, upload: { id, etags: etags as string[] } };
}

/** Files in the order given (a claim's own, read back or built by adopt). */
export function claimFilesOf(files: readonly TaskFile[]): ClaimFiles {
  return claimFilesOfRecord({
    bytes: files.reduce((a, f) => a + f.size, 0),
    eachFile: (fn) => files.forEach((f) => fn(f)),
  });
}

/** A claim's files read once from its record, written again as they were. */
export function claimFilesOfRecord(record: {
  readonly bytes: number;
  eachFile(fn: (f: TaskFile) => void): void;
}): ClaimFiles {
  const lines = new ListLines();
  const uploads: TaskFile[] = [];
  record.eachFile((f) => {
    lines.push(claimItem(f));
    if (f.upload) uploads.push(f);
  });
  return { list: lines.done(), bytes: record.bytes, uploads };
}

/** The files as objects, for the few steps that want them all at once (a v2 task's publication). */
export function taskFilesOf(files: ClaimFiles): TaskFile[] {
  const out: TaskFile[] = [];
  eachEncodedItem(files.list, (x) => out.push(fileOf(x)));
  return out;
}

const byPath = (a: TaskFile, b: TaskFile): number => compareStrings(a.path, b.path);

/**
 * An attempt's files as a walk finds them, in no order: a path and a size each (the size a row of
 * a typed array), no object per file. encode() sorts them, adds the pending uploads, checks every
 * path and writes the claim's lines, once.
 */
export class AttemptFileList {
  private paths: string[] = [];
  private sizes = new Float64Array(1024);
  private order: Uint32Array | null = null;

  get length(): number {
    return this.paths.length;
  }

  add(path: string, size: number): void {
    const row = this.paths.length;
    if (row === this.sizes.length) {
      const grown = new Float64Array(row * 2);
      grown.set(this.sizes);
      this.sizes = grown;
    }
    this.paths.push(path);
    this.sizes[row] = size;
    this.order = null;
  }

  /** Rows in path order: the order walkFiles gives and every claim is written in. */
  private sorted(): Uint32Array {
    const paths = this.paths;
    this.order ??= new Uint32Array(paths.length).map((_, i) => i).sort((a, b) => compareStrings(paths[a]!, paths[b]!));
    return this.order;
  }

  has(path: string): boolean {
    const order = this.sorted();
    let lo = 0;
    let hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const p = this.paths[order[mid]!]!;
      if (p === path) return true;
      if (p < path) lo = mid + 1;
      else hi = mid;
    }
    return false;
  }

  /**
   * These files and the pending uploads (none of them at one of these paths) as the claim's list,
   * in path order; `check` sees every path in that order before it is written, so the first bad
   * one is the one a sorted list would name. Once only: the paths are let go.
   */
  encode(uploads: readonly TaskFile[], check: (path: string) => void): ClaimFiles {
    const order = this.sorted();
    const pending = [...uploads].sort(byPath);
    const lines = new ListLines();
    let bytes = 0;
    const put = (f: TaskFile): void => {
      check(f.path);
      bytes += f.size;
      lines.push(claimItem(f));
    };
    let u = 0;
    for (const row of order) {
      const path = this.paths[row]!;
      while (u < pending.length && pending[u]!.path < path) put(pending[u++]!);
      put({ path, size: this.sizes[row]! });
    }
    while (u < pending.length) put(pending[u++]!);
    this.paths = [];
    this.sizes = new Float64Array(0);
    this.order = null;
    return { list: lines.done(), bytes, uploads: pending };
  }
}

/**
 * One digest of the versions (Entry.version: S3's ETag, HDFS's modification time) of the files
 * a task committed from its dir, in any order: sha256 of each path and version, XORed (paths are
 * unique, so none cancels out). commit-job takes it again from the listing it already reads: a
 * file written again since commit-task, even to the same size, no longer matches. Null when the
 * store's listing carries no versions (local) or there are no such files.
 */
export class VersionDigest {
  private readonly acc = Buffer.alloc(32);
  private files = 0;
  private unversioned = false;

  add(path: string, version: string | undefined): void {
    if (version === undefined) {
      this.unversioned = true;
      return;
    }
    const h = createHash('sha256').update(path).update('\0').update(version).digest();
    for (let i = 0; i < 32; i++) this.acc[i]! ^= h[i]!;
    this.files++;
  }

  value(): string | null {
    return this.unversioned || this.files === 0 ? null : this.acc.toString('hex');
  }
}
