// The S3 store: no rename and no directories; server-side copy (UploadPartCopy above a
// threshold), DeleteObjects in batches of 1,000, paged listings, claims by If-None-Match.
// What it provides of protocol.md §7.1, and its limits: §7.2.

import { PROBE_PREFIX } from '../temp-names.js';
import { posix } from 'node:path';
import {
  CopyObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { StoreError } from '../../errors.js';
import type {
  PutSource,
  Entry,
  ListOptions,
  PendingUpload,
  ReadyUpload,
  RenameOptions,
  Store,
  StoreCapabilities,
} from '../types.js';
import { fencedClient } from './client.js';
import { multipartCopy } from './copy.js';
import { deleteKeys } from './delete.js';
import { copySource, credentialProblem, errName, splitPath, status } from './keys.js';
import type { S3Settings } from './settings.js';
import { listPage, type ListedObject, type ListPage } from './listing.js';
import { SignedRequests } from './signed.js';
import { S3Uploads } from './uploads.js';

/** A bucket that is not there is a wrong URI (exit 2), not a failed operation. */
function noSuchBucket(op: string, bucket: string): StoreError {
  return new StoreError('no-location', op, [], `bucket '${bucket}' does not exist: create it, or check the URI`);
}

/** An object's ETag as its version (Entry.version), where the listing gave one. */
function versionOf(o: ListedObject): { version?: string } {
  return o.etag ? { version: o.etag } : {};
}

const CAPS: StoreCapabilities = {
  directoryRename: false,
  realDirectories: false,
  listsInOrder: true,
};

/** How often a conditional create answered 409 (another in flight) is tried again before it fails. */
const CONFLICT_RETRIES = 20;

export class S3Store implements Store {
  readonly caps = CAPS;
  /** `/bucket` is a whole bucket: a table lives under a prefix in it. */
  readonly namespaceDepth = 1;
  readonly client: S3Client;

  readonly pendingUploadMinBytes: number;
  private requests = 0;
  private readonly uploads: S3Uploads;
  /** The per-file requests of a commit (copy, complete), sent without the SDK's per-command cost. */
  private readonly signed: SignedRequests;

  constructor(readonly settings: S3Settings) {
    this.client = fencedClient(settings, () => this.requests++);
    this.pendingUploadMinBytes = settings.pendingUploadMinBytes;
    this.signed = new SignedRequests(
      this.client,
      typeof settings.client.maxAttempts === 'number' ? settings.client.maxAttempts : 6,
      settings.deadlines,
      () => this.requests++,
    );
    this.uploads = new S3Uploads(
      this.client,
      this.signed,
      splitPath,
      (e, op, paths) => this.fail(e, op, paths),
      Math.max(5 * 1024 ** 2, settings.multipartUploadPartSize),
    );
  }

  requestCount(): number {
    return this.requests;
  }

  /**
   * Claims rely on PutObject with If-None-Match: *. A server that ignores the header would let
   * two attempts both win, so it is proven here: the second create must be refused.
   */
  async verify(dir: string): Promise<void> {
    const probe = posix.join(dir, `${PROBE_PREFIX}${process.pid}-${Date.now()}`);
    const first = await this.createExclusive(probe, 'probe');
    const second = await this.createExclusive(probe, 'probe');
    await this.delete(probe, false);
    if (!first || second) {
      throw new StoreError(
        'refused',
        'createExclusive',
        [this.toUri(probe)],
        "this S3 server ignores 'If-None-Match: *' on PutObject, so commit claims cannot be made safely; use a server that supports conditional writes (AWS S3, Ceph RGW, MinIO)",
      );
    }
  }

  toUri(p: string): string {
    return `s3:/${p.startsWith('/') ? '' : '/'}${p}`;
  }

  private fail(e: unknown, op: string, paths: string[]): StoreError {
    if (e instanceof StoreError) return e; // the fence's verdict
    const code = status(e);
    const name = errName(e);
    if (name === 'NoSuchBucket') return noSuchBucket(op, splitPath(paths[0] ?? '').bucket);
    const denied = credentialProblem(e);
    if (denied)
      return new StoreError(
        'refused',
        op,
        paths.map((p) => this.toUri(p)),
        denied,
      );
    const kind =
      code === 404 || name === 'NoSuchKey' || name === 'NotFound' ? 'not-found' : code === 412 ? 'exists' : 'io';
    const msg = `${name || 'error'}${code ? ` (HTTP ${code})` : ''}: ${(e as Error)?.message ?? String(e)}`;
    return new StoreError(
      kind,
      op,
      paths.map((p) => this.toUri(p)),
      msg,
    );
  }

  /** HEAD and a one-key listing at once: a missing file costs one round trip, not two. */
  async stat(p: string): Promise<Entry | null> {
    const { bucket, key } = splitPath(p);
    if (key === '') return { name: bucket, path: p, kind: 'dir', size: 0, mtimeMs: 0 };
    const head = this.client.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(
      (h) => ({
        name: posix.basename(p),
        path: p,
        kind: 'file' as const,
        size: h.ContentLength ?? 0,
        mtimeMs: h.LastModified?.getTime() ?? 0,
      }),
      (e: unknown) => {
        if (status(e) !== 404) throw this.fail(e, 'stat', [p]);
        return null;
      },
    );
    const dir = listPage(this.signed, this.client, { bucket, prefix: key + '/', maxKeys: 1 }).then(
      (r) =>
        r.objects.length > 0 ? { name: posix.basename(p), path: p, kind: 'dir' as const, size: 0, mtimeMs: 0 } : null,
      (e: unknown) => {
        throw this.fail(e, 'stat', [p]);
      },
    );
    const [file, prefix] = await Promise.allSettled([head, dir]);
    // When both fail the listing's error speaks: a HEAD's answer has no body, so no S3 error code.
    if (file.status === 'rejected') throw prefix.status === 'rejected' ? prefix.reason : file.reason;
    if (file.value) return file.value;
    if (prefix.status === 'rejected') throw prefix.reason;
    return prefix.value;
  }

  /** Every file under a directory, at any depth, in one paged listing (no per-level requests). */
  async listTree(dir: string): Promise<Entry[]> {
    const out: Entry[] = [];
    await this.listTreeEach(dir, {}, (e) => out.push(e));
    return out;
  }

  /** listTree's entries handed over a page at a time: nothing is held but the page (protocol.md §9.2). */
  async listTreeEach(dir: string, _opts: ListOptions, fn: (e: Entry) => void): Promise<void> {
    const { bucket, key } = splitPath(dir);
    const prefix = key === '' ? '' : key + '/';
    let token: string | undefined;
    do {
      let page: ListPage;
      try {
        page = await listPage(this.signed, this.client, { bucket, prefix, token });
      } catch (e) {
        throw this.fail(e, 'list', [dir]);
      }
      // Zero-byte keys ending in '/' are directory markers (Hadoop S3A's mkdirs), not files; one that
      // holds bytes is no file either, and is listed as 'other' so that no step drops its bytes unseen.
      for (const o of page.objects) {
        if (o.key.endsWith('/') && o.size === 0) continue;
        fn({
          name: o.key.slice(prefix.length),
          path: `/${bucket}/${o.key}`,
          kind: o.key.endsWith('/') ? 'other' : 'file',
          size: o.size,
          mtimeMs: o.mtimeMs,
          ...versionOf(o),
        });
      }
      token = page.next;
    } while (token);
  }

  async list(dir: string, opts?: ListOptions): Promise<Entry[]> {
    const { bucket, key } = splitPath(dir);
    const prefix = key === '' ? '' : key + '/';
    const out: Entry[] = [];
    let token: string | undefined;
    const startAfter = opts?.startAfter === undefined ? undefined : prefix + opts.startAfter;
    try {
      do {
        const r = await listPage(this.signed, this.client, { bucket, prefix, delimiter: '/', token, startAfter });
        for (const cp of r.prefixes) {
          const name = cp.slice(prefix.length, -1);
          if (name) out.push({ name, path: posix.join(dir, name), kind: 'dir', size: 0, mtimeMs: 0 });
        }
        for (const o of r.objects) {
          const name = o.key.slice(prefix.length);
          if (!name) continue; // a directory marker object
          out.push({
            name,
            path: posix.join(dir, name),
            kind: 'file',
            size: o.size,
            mtimeMs: o.mtimeMs,
            ...versionOf(o),
          });
        }
        token = r.next;
      } while (token);
    } catch (e) {
      throw this.fail(e, 'list', [dir]);
    }
    return out;
  }

  /** Every object under a prefix (recursive), paged. */
  async listKeys(dir: string): Promise<ListedObject[]> {
    const { bucket, key } = splitPath(dir);
    const prefix = key === '' ? '' : key + '/';
    const out: ListedObject[] = [];
    let token: string | undefined;
    try {
      do {
        const r = await listPage(this.signed, this.client, { bucket, prefix, token });
        for (const o of r.objects) out.push(o);
        token = r.next;
      } while (token);
    } catch (e) {
      throw this.fail(e, 'list', [dir]);
    }
    return out;
  }

  async readFile(p: string): Promise<Buffer | null> {
    const { bucket, key } = splitPath(p);
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return Buffer.from(await r.Body!.transformToByteArray());
    } catch (e) {
      if (status(e) === 404 || errName(e) === 'NoSuchKey') return null;
      throw this.fail(e, 'readFile', [p]);
    }
  }

  async writeFile(p: string, data: Buffer | string): Promise<void> {
    const { bucket, key } = splitPath(p);
    try {
      await this.client.send(
        new PutObjectCommand({ Bucket: bucket, Key: key, Body: data, ContentLength: Buffer.byteLength(data) }),
      );
    } catch (e) {
      throw this.fail(e, 'writeFile', [p]);
    }
  }

  async createExclusive(p: string, data: Buffer | string, conflicts = 0): Promise<boolean> {
    const { bucket, key } = splitPath(p);
    try {
      await this.client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: data,
          ContentLength: Buffer.byteLength(data),
          IfNoneMatch: '*',
        }),
      );
      return true;
    } catch (e) {
      if (status(e) === 412) return false;
      // 409 ConditionalRequestConflict: a concurrent conditional write is in flight; it decides.
      if (status(e) === 409 && conflicts < CONFLICT_RETRIES) {
        await new Promise((r) => setTimeout(r, 50 * Math.min(conflicts + 1, 10)));
        return this.createExclusive(p, data, conflicts + 1);
      }
      throw this.fail(e, 'createExclusive', [p]);
    }
  }

  async mkdirs(_p: string): Promise<void> {
    // Object stores have no directories: a prefix exists while an object is under it.
  }

  async rename(src: string, dst: string, opts: RenameOptions = {}): Promise<void> {
    // Copy, then delete: not atomic. Commits on S3 publish by copy (store/operations), never by this.
    if (!opts.replace && (await this.stat(dst)))
      throw new StoreError('exists', 'rename', [this.toUri(src), this.toUri(dst)], 'destination exists');
    await this.copy(src, dst);
    await this.delete(src, false);
  }

  async copy(src: string, dst: string): Promise<void> {
    const s = splitPath(src);
    const d = splitPath(dst);
    try {
      const size = await this.sizeForCopy(src);
      if (size !== null && size > this.settings.multipartCopyThreshold) {
        await multipartCopy(this.client, s, d, size, this.settings.multipartCopyPartSize);
        return;
      }
      const source = copySource(s.bucket, s.key);
      const sent = await this.signed.send({
        method: 'PUT',
        bucket: d.bucket,
        key: d.key,
        headers: { 'x-amz-copy-source': source },
        expect: 'CopyObjectResult',
      });
      if (!sent) await this.client.send(new CopyObjectCommand({ Bucket: d.bucket, Key: d.key, CopySource: source }));
    } catch (e) {
      if (e instanceof StoreError) throw e;
      throw this.fail(e, 'copy', [src, dst]);
    }
  }

  /** Size of the source only when a multipart copy could be needed (saves a HEAD per file). */
  private async sizeForCopy(src: string): Promise<number | null> {
    if (this.settings.multipartCopyThreshold >= 5 * 1024 ** 3) return null;
    const st = await this.stat(src);
    if (!st) throw new StoreError('not-found', 'copy', [this.toUri(src)], 'source does not exist');
    return st.size;
  }

  /** S3 deletes missing keys silently, so this cannot tell "was not there": it answers true. */
  async delete(p: string, recursive: boolean): Promise<boolean> {
    const { key } = splitPath(p);
    const keys = key === '' ? [] : [key];
    if (recursive) for (const o of await this.listKeys(p)) keys.push(o.key);
    await this.deleteKeys(splitPath(p).bucket, keys, p);
    return true;
  }

  /** Several files in DeleteObjects batches of 1,000; per-key errors are checked. */
  async deleteMany(paths: readonly string[]): Promise<void> {
    const byBucket = new Map<string, string[]>();
    for (const p of paths) {
      const { bucket, key } = splitPath(p);
      const keys = byBucket.get(bucket);
      if (keys) keys.push(key);
      else byBucket.set(bucket, [key]);
    }
    for (const [bucket, keys] of byBucket) await this.deleteKeys(bucket, keys, null);
  }

  private deleteKeys(bucket: string, keys: readonly string[], what: string | null): Promise<void> {
    return deleteKeys(
      { client: this.client, toUri: (p) => this.toUri(p), fail: (e, op, paths) => this.fail(e, op, paths) },
      bucket,
      keys,
      what,
    );
  }

  put(dst: string, source: PutSource): Promise<void> {
    return this.uploads.put(dst, source);
  }

  // Multipart uploads (src/store/s3/uploads.ts): never completed under a prefix (clean-orphans,
  // job abort), and the pending uploads of `stage FILE` completed by commit-job.
  listUploads(dir: string): Promise<PendingUpload[]> {
    return this.uploads.list(dir);
  }
  abortUpload(u: PendingUpload): Promise<void> {
    return this.uploads.abort(u);
  }
  beginUpload(path: string): Promise<string> {
    return this.uploads.begin(path);
  }
  uploadParts(
    path: string,
    uploadId: string,
    localPath: string,
    size: number,
    onBytes?: (sent: number) => void,
  ): Promise<string[]> {
    return this.uploads.uploadParts(path, uploadId, localPath, size, onBytes);
  }
  completeUpload(u: ReadyUpload): Promise<void> {
    return this.uploads.complete(u);
  }
}
