// The HDFS store over WebHDFS on Node's fetch: atomic file and directory rename (rename2, never
// "move inside"), create-if-absent by CREATE overwrite=false, the CREATE/OPEN redirects followed
// by hand, RemoteException bodies turned into typed errors, HA failover on StandbyException.

import { createReadStream } from 'node:fs';
import { posix } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { StageCommitError, StoreError, type StoreErrorKind } from '../../errors.js';
import { tempPathFor } from '../temp-names.js';
import type { Entry, ListOptions, RenameOptions, Store, StoreCapabilities } from '../types.js';

const CAPS: StoreCapabilities = {
  atomicRename: true,
  directoryRename: true,
  atomicCreate: true,
  serverSideCopy: false,
  realDirectories: true,
  createsVisibleEarly: true,
};

export interface WebHdfsSettings {
  /** Name node base URLs (http:// or https://), several for an HA pair; tried in order. */
  readonly nameNodes: readonly string[];
  /** How this store's URIs are written back: 'hdfs://mycluster'. */
  readonly uriPrefix: string;
  readonly user?: string;
  readonly delegation?: string;
  /** Transient failures (connection reset, 5xx, RetriableException) retried this many times. */
  readonly retries: number;
  readonly retryBaseMs: number;
  /** A fetch with TLS settings (swebhdfs CA bundle); default: the global fetch. */
  readonly fetch?: typeof fetch;
}

interface RemoteException {
  exception: string;
  javaClassName?: string;
  message: string;
}

/** A name node answered with an error; kept typed so callers can tell "exists" from "not found". */
export class WebHdfsError extends StoreError {
  constructor(kind: StoreErrorKind, op: string, paths: string[], readonly status: number, readonly remote: RemoteException | null, detail: string) {
    super(kind, op, paths, detail);
  }
}

function kindOf(status: number, exception: string | undefined): StoreErrorKind {
  if (status === 404 || exception === 'FileNotFoundException') return 'not-found';
  if (exception === 'FileAlreadyExistsException') return 'exists';
  return 'io';
}

/** Paths are encoded segment by segment: spaces, %, =, +, ?, # and unicode all survive. */
export function encodePath(p: string): string {
  return p.split('/').map(encodeURIComponent).join('/');
}

type Method = 'GET' | 'PUT' | 'DELETE';

export class WebHdfsStore implements Store {
  readonly name = 'hdfs';
  readonly caps = CAPS;
  private active = 0;
  private requests = 0;
  private readonly fetch: typeof fetch;

  constructor(readonly settings: WebHdfsSettings) {
    if (settings.nameNodes.length === 0) throw new Error('WebHDFS: no name node configured');
    this.fetch = settings.fetch ?? fetch;
  }

  requestCount(): number {
    return this.requests;
  }

  toUri(p: string): string {
    return `${this.settings.uriPrefix}${p}`;
  }

  private query(op: string, params: Record<string, string | undefined>): string {
    const q = new URLSearchParams({ op });
    for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
    if (this.settings.delegation) q.set('delegation', this.settings.delegation);
    else if (this.settings.user) q.set('user.name', this.settings.user);
    return q.toString();
  }

  /**
   * One name node call with failover and retries. Standby name nodes and refused connections
   * move to the next name node (remembered); transient errors back off and retry.
   */
  private async call(method: Method, op: string, p: string, params: Record<string, string | undefined> = {}, body?: BodyInit): Promise<Response> {
    const n = this.settings.nameNodes.length;
    let lastError: unknown;
    for (let attempt = 0, failovers = 0; attempt <= this.settings.retries; ) {
      const base = this.settings.nameNodes[this.active]!;
      const url = `${base.replace(/\/$/, '')}/webhdfs/v1${encodePath(p)}?${this.query(op, params)}`;
      let res: Response;
      try {
        this.requests++;
        res = await this.fetch(url, { method, redirect: 'manual', body, duplex: body ? 'half' : undefined } as RequestInit);
      } catch (e) {
        if (e instanceof StageCommitError) throw e; // a verdict, not a network failure (an RPC port given for HTTP)
        lastError = e;
        if (failovers < n - 1) {
          this.active = (this.active + 1) % n;
          failovers++;
          continue;
        }
        failovers = 0;
        attempt++;
        await sleep(this.settings.retryBaseMs * 2 ** attempt);
        continue;
      }
      if (res.status === 403 || res.status >= 500) {
        const remote = await this.remote(res.clone());
        if (remote?.exception === 'StandbyException' && failovers < n - 1) {
          this.active = (this.active + 1) % n;
          failovers++;
          continue;
        }
        const transient = res.status >= 500 || remote?.exception === 'RetriableException' || remote?.exception === 'StandbyException';
        if (transient && attempt < this.settings.retries) {
          failovers = 0;
          attempt++;
          await sleep(this.settings.retryBaseMs * 2 ** attempt);
          continue;
        }
      }
      return res;
    }
    throw new StoreError('io', op, [this.toUri(p)], `no name node answered (${this.settings.nameNodes.join(', ')}): ${(lastError as Error)?.message ?? lastError}`);
  }

  private async remote(res: Response): Promise<RemoteException | null> {
    try {
      const j = (await res.json()) as { RemoteException?: RemoteException };
      return j.RemoteException ?? null;
    } catch {
      return null;
    }
  }

  private async failure(res: Response, op: string, paths: string[]): Promise<WebHdfsError> {
    const remote = await this.remote(res);
    const detail = remote ? `${remote.exception}: ${remote.message}` : `HTTP ${res.status}`;
    return new WebHdfsError(kindOf(res.status, remote?.exception), op, paths.map((p) => this.toUri(p)), res.status, remote, detail);
  }

  private async json<T>(res: Response, op: string, paths: string[]): Promise<T> {
    if (!res.ok) throw await this.failure(res, op, paths);
    return (await res.json()) as T;
  }

  async stat(p: string): Promise<Entry | null> {
    const res = await this.call('GET', 'GETFILESTATUS', p);
    if (res.status === 404) {
      await res.body?.cancel();
      return null;
    }
    const { FileStatus: s } = await this.json<{ FileStatus: HdfsStatus }>(res, 'stat', [p]);
    return entry(p, s);
  }

  async list(dir: string, _opts?: ListOptions): Promise<Entry[]> {
    const out: Entry[] = [];
    let startAfter: string | undefined;
    for (;;) {
      const res = await this.call('GET', 'LISTSTATUS_BATCH', dir, { startAfter });
      if (res.status === 404) {
        await res.body?.cancel();
        return out;
      }
      const j = await this.json<{ DirectoryListing: { partialListing: { FileStatuses: { FileStatus: HdfsStatus[] } }; remainingEntries: number } }>(res, 'list', [dir]);
      const page = j.DirectoryListing.partialListing.FileStatuses.FileStatus;
      for (const s of page) if (s.pathSuffix) out.push(entry(posix.join(dir, s.pathSuffix), s));
      if (j.DirectoryListing.remainingEntries <= 0 || page.length === 0) return out;
      startAfter = page[page.length - 1]!.pathSuffix;
    }
  }

  async readFile(p: string): Promise<Buffer | null> {
    const res = await this.call('GET', 'OPEN', p);
    if (res.status === 404) {
      await res.body?.cancel();
      return null;
    }
    if (res.status !== 307) throw await this.failure(res, 'readFile', [p]);
    const location = res.headers.get('location')!;
    await res.body?.cancel();
    this.requests++;
    const data = await this.fetch(location);
    if (data.status === 404) return null;
    if (!data.ok) throw await this.failure(data, 'readFile', [p]);
    return Buffer.from(await data.arrayBuffer());
  }

  /** CREATE: the name node redirects (307) to a data node, which takes the bytes. */
  private async create(p: string, body: BodyInit, overwrite: boolean): Promise<'created' | 'exists'> {
    const res = await this.call('PUT', 'CREATE', p, { overwrite: String(overwrite) });
    if (res.status !== 307) {
      if (res.status === 403 && !overwrite) {
        const remote = await this.remote(res.clone());
        if (remote?.exception === 'FileAlreadyExistsException') return 'exists';
      }
      throw await this.failure(res, 'create', [p]);
    }
    const location = res.headers.get('location')!;
    await res.body?.cancel();
    this.requests++;
    const put = await this.fetch(location, { method: 'PUT', body, duplex: 'half' } as RequestInit);
    if (put.status === 201 || put.ok) {
      await put.body?.cancel();
      return 'created';
    }
    const remote = await this.remote(put.clone());
    if (!overwrite && remote?.exception === 'FileAlreadyExistsException') return 'exists';
    throw await this.failure(put, 'create', [p]);
  }

  /**
   * Writes `data` under a temp name, then rename2 with OVERWRITE (HDFS's atomic rename) onto `p`.
   * HDFS shows a file from its CREATE on, so the temp is deleted whenever anything fails.
   */
  private async viaTemp(p: string, data: BodyInit, op: string): Promise<void> {
    const tmp = tempPathFor(p);
    let created: 'created' | 'exists';
    try {
      created = await this.create(tmp, data, false);
    } catch (e) {
      await this.delete(tmp, false).catch(() => false);
      throw e;
    }
    // Someone else's temp of the same random name: not ours to publish or delete.
    if (created === 'exists') throw new StoreError('exists', op, [this.toUri(tmp)], 'a temp file of that name exists already');
    try {
      await this.rename(tmp, p, { replace: true });
    } catch (e) {
      await this.delete(tmp, false).catch(() => false);
      throw e;
    }
  }

  /** Whole-file replace: readers see the old file or the new one, never a part. */
  async writeFile(p: string, data: Buffer | string): Promise<void> {
    await this.viaTemp(p, body(data), 'writeFile');
  }

  async createExclusive(p: string, data: Buffer | string): Promise<boolean> {
    return (await this.create(p, body(data), false)) === 'created';
  }

  async mkdirs(p: string): Promise<void> {
    const res = await this.call('PUT', 'MKDIRS', p);
    const { boolean } = await this.json<{ boolean: boolean }>(res, 'mkdirs', [p]);
    if (!boolean) throw new StoreError('refused', 'mkdirs', [this.toUri(p)], 'the name node answered false');
  }

  /**
   * rename2 (renameoptions=NONE or OVERWRITE): fails if the destination exists, never moves the
   * source inside an existing directory. A gateway without rename2 gets the plain RENAME, with
   * the destination checked first and `{"boolean": false}` turned into an error.
   */
  async rename(src: string, dst: string, opts: RenameOptions = {}): Promise<void> {
    const res = await this.call('PUT', 'RENAME', src, { destination: dst, renameoptions: opts.replace ? 'OVERWRITE' : 'NONE' });
    if (res.ok) {
      await res.body?.cancel();
      return;
    }
    const remote = await this.remote(res.clone());
    if (res.status === 400 && /renameoptions/i.test(remote?.message ?? '')) return this.plainRename(src, dst, opts);
    throw await this.failure(res, 'rename', [src, dst]);
  }

  private async plainRename(src: string, dst: string, opts: RenameOptions): Promise<void> {
    const existing = await this.stat(dst);
    if (existing) {
      if (!opts.replace || existing.kind === 'dir') throw new StoreError('exists', 'rename', [this.toUri(src), this.toUri(dst)], 'destination exists');
      await this.delete(dst, false);
    }
    const res = await this.call('PUT', 'RENAME', src, { destination: dst });
    const { boolean } = await this.json<{ boolean: boolean }>(res, 'rename', [src, dst]);
    if (boolean) return;
    // Tell the caller why: HDFS answers false for all of these.
    const [s, d] = await Promise.all([this.stat(src), this.stat(dst)]);
    const why = !s ? 'the source does not exist' : d ? 'the destination exists' : 'the destination\'s parent does not exist or the rename is not allowed';
    throw new StoreError(!s ? 'not-found' : d ? 'exists' : 'refused', 'rename', [this.toUri(src), this.toUri(dst)], `the name node answered {"boolean": false}: ${why}`);
  }

  /** No server-side copy in WebHDFS: the bytes pass through this process (the protocol renames instead). */
  async copy(src: string, dst: string): Promise<void> {
    const data = await this.readFile(src);
    if (data === null) throw new StoreError('not-found', 'copy', [this.toUri(src)], 'source does not exist');
    await this.create(dst, body(data), true);
  }

  async delete(p: string, recursive: boolean): Promise<boolean> {
    const res = await this.call('DELETE', 'DELETE', p, { recursive: String(recursive) });
    const { boolean } = await this.json<{ boolean: boolean }>(res, 'delete', [p]);
    return boolean; // false: the path was not there, which cleanup counts as done
  }

  /** Streams to a temp name and renames it into place whole: a killed or failed put publishes nothing. */
  async put(dst: string, source: { localPath: string } | { stream: Readable }): Promise<void> {
    const stream = 'localPath' in source ? createReadStream(source.localPath) : source.stream;
    await this.viaTemp(dst, Readable.toWeb(stream) as unknown as BodyInit, 'put');
  }
}

interface HdfsStatus {
  pathSuffix: string;
  type: 'FILE' | 'DIRECTORY' | 'SYMLINK';
  length: number;
  modificationTime: number;
}

function body(data: Buffer | string): BodyInit {
  return typeof data === 'string' ? data : (new Uint8Array(data) as unknown as BodyInit);
}

function entry(p: string, s: HdfsStatus): Entry {
  return {
    name: s.pathSuffix || posix.basename(p),
    path: p,
    kind: s.type === 'FILE' ? 'file' : s.type === 'DIRECTORY' ? 'dir' : 'symlink',
    size: s.length,
    mtimeMs: s.modificationTime,
  };
}
