// The HDFS store over WebHDFS on Node's fetch: atomic file and directory rename (rename2, never
// "move inside"), create-if-absent by CREATE overwrite=false, the CREATE/OPEN redirects followed
// by hand, RemoteException bodies turned into typed errors, HA failover on StandbyException.
// What it provides of protocol.md §7.1, and its limits: §7.2.

import { createReadStream } from 'node:fs';
import { posix } from 'node:path';
import { Readable } from 'node:stream';
import { StoreError } from '../../errors.js';
import { tempPathFor } from '../temp-names.js';
import { counted } from '../counting.js';
import type { Entry, ListOptions, PutSource, RenameOptions, Store, StoreCapabilities } from '../types.js';
import { causeOf, DataNodeError, NameNodes, type WebHdfsSettings } from './namenodes.js';

export type { WebHdfsSettings } from './namenodes.js';
export { encodePath } from './namenodes.js';

const CAPS: StoreCapabilities = {
  directoryRename: true,
  realDirectories: true,
  atomicTreeDelete: true,
  createsVisibleEarly: true,
  listsInOrder: true,
};

export class WebHdfsStore implements Store {
  readonly caps = CAPS;

  private readonly nn: NameNodes;

  constructor(readonly settings: WebHdfsSettings) {
    this.nn = new NameNodes(settings);
  }

  requestCount(): number {
    return this.nn.requests;
  }

  toUri(p: string): string {
    return `${this.settings.uriPrefix}${p}`;
  }

  /** hdfs://, webhdfs:// and swebhdfs:// URIs of this cluster, in any spelling of it (toUri writes paths as they are). */
  pathOfUri(uri: string): string | null {
    const m = /^(hdfs|webhdfs|swebhdfs):\/\/([^/]*)(\/.*)?$/i.exec(uri);
    if (!m) return null;
    const scheme = m[1]!.toLowerCase();
    const authority = m[2]!;
    const mine =
      `${scheme}://${authority}` === this.settings.uriPrefix || this.settings.sameCluster?.(scheme, authority);
    return mine ? (m[3] ?? '/') : null;
  }

  async stat(p: string): Promise<Entry | null> {
    const res = await this.nn.call('GET', 'GETFILESTATUS', p);
    if (res.status === 404) {
      await res.body?.cancel();
      return null;
    }
    const { FileStatus: s } = await this.nn.json<{ FileStatus: HdfsStatus }>(res, 'stat', [p], (j) =>
      isStatus(j.FileStatus),
    );
    return entry(p, s);
  }

  async list(dir: string, opts?: ListOptions): Promise<Entry[]> {
    const out: Entry[] = [];
    // The name node lists a directory in name order, from startAfter on.
    let startAfter: string | undefined = opts?.startAfter;
    for (;;) {
      const res = await this.nn.call('GET', 'LISTSTATUS_BATCH', dir, { startAfter });
      if (res.status === 404) {
        await res.body?.cancel();
        return out;
      }
      const j = await this.nn.json<{
        DirectoryListing: { partialListing: { FileStatuses: { FileStatus: HdfsStatus[] } }; remainingEntries: number };
      }>(res, 'list', [dir], (j) => {
        const l = j.DirectoryListing;
        return (
          Array.isArray(l?.partialListing?.FileStatuses?.FileStatus) &&
          l.partialListing.FileStatuses.FileStatus.every(isStatus) &&
          typeof l.remainingEntries === 'number'
        );
      });
      const page = j.DirectoryListing.partialListing.FileStatuses.FileStatus;
      for (const s of page) if (s.pathSuffix) out.push(entry(posix.join(dir, s.pathSuffix), s));
      if (j.DirectoryListing.remainingEntries <= 0 || page.length === 0) return out;
      startAfter = page[page.length - 1]!.pathSuffix;
    }
  }

  /** OPEN, again from the name node when the data node gives no answer (a read is safe to repeat). */
  async readFile(p: string): Promise<Buffer | null> {
    return this.nn.retryDataNode(async () => {
      const res = await this.nn.call('GET', 'OPEN', p);
      if (res.status === 404) {
        // Hadoop answers a directory with FileNotFoundException too: "Path is not a file".
        const said = await res.text().catch(() => '');
        if (/Path is not a file/.test(said))
          throw new StoreError('io', 'readFile', [this.toUri(p)], 'is a directory (Path is not a file)');
        return null;
      }
      // HttpFS sends the bytes itself; a name node redirects to a data node.
      if (res.status === 200) return Buffer.from(await res.arrayBuffer());
      if (res.status !== 307) throw await this.nn.failure(res, 'readFile', [p]);
      const location = res.headers.get('location')!;
      await res.body?.cancel();
      const data = await this.nn.dataNode(location, 'readFile', p);
      if (data.status === 404) return null;
      if (!data.ok) throw await this.nn.failure(data, 'readFile', [p]);
      try {
        return Buffer.from(await data.arrayBuffer());
      } catch (e) {
        throw new DataNodeError('readFile', [this.toUri(p)], `the data node's answer broke off: ${causeOf(e)}`);
      }
    });
  }

  /** CREATE: the name node redirects (307) to a data node, which takes the bytes. */
  private async create(p: string, body: BodyInit, overwrite: boolean): Promise<'created' | 'exists'> {
    const res = await this.nn.call('PUT', 'CREATE', p, { overwrite: String(overwrite) });
    if (res.status !== 307) {
      if (res.status === 403 && !overwrite) {
        const remote = await this.nn.remote(res.clone());
        if (remote?.exception === 'FileAlreadyExistsException') return 'exists';
      }
      throw await this.nn.failure(res, 'create', [p]);
    }
    const location = res.headers.get('location')!;
    await res.body?.cancel();
    // HttpFS refuses the data leg without this content type; data nodes take it as well.
    const put = await this.nn.dataNode(location, 'create', p, {
      method: 'PUT',
      body,
      duplex: 'half',
      headers: { 'content-type': 'application/octet-stream' },
    } as RequestInit);
    if (put.ok) {
      // A data node answers 201 Created; a 200 with a body (a proxy's page) proves nothing.
      const text = (await put.text()).trim();
      if (put.status === 201 || text === '') return 'created';
      throw new StoreError(
        'io',
        'create',
        [this.toUri(p)],
        `the data node's answer (HTTP ${put.status}) is not the WebHDFS answer to create: ${JSON.stringify(text.slice(0, 80))}; check the addresses the name node gives`,
      );
    }
    const remote = await this.nn.remote(put.clone());
    if (!overwrite && remote?.exception === 'FileAlreadyExistsException') return 'exists';
    throw await this.nn.failure(put, 'create', [p]);
  }

  /**
   * Writes `data` under a temp name, then rename2 with OVERWRITE (HDFS's atomic rename) onto `p`.
   * HDFS shows a file from its CREATE on, so the temp is deleted whenever anything fails.
   */
  private async viaTemp(p: string, data: BodyInit, op: string, bytes?: Buffer): Promise<void> {
    const tmp = tempPathFor(p);
    let created: 'created' | 'exists';
    try {
      created = await this.create(tmp, data, false);
    } catch (e) {
      await this.delete(tmp, false).catch(() => false);
      throw e;
    }
    // Someone else's temp of the same random name: not ours to publish or delete.
    if (created === 'exists')
      throw new StoreError('exists', op, [this.toUri(tmp)], 'a temp file of that name exists already');
    // A rename done whose answer was lost: the file holding our bytes says so (a stream's put has
    // only the rename's own evidence: its temp gone, the file there).
    const ours = bytes
      ? async () => (await this.readFile(p).catch(() => null))?.equals(bytes) === true
      : () => this.moved(tmp, p);
    try {
      await this.renameOrFind(tmp, p, { replace: true }, ours);
    } catch (e) {
      await this.delete(tmp, false).catch(() => false);
      throw e;
    }
  }

  /** Whole-file replace: readers see the old file or the new one, never a part. A new temp each try. */
  async writeFile(p: string, data: Buffer | string): Promise<void> {
    const bytes = Buffer.from(data);
    await this.nn.retryDataNode(() => this.viaTemp(p, body(data), 'writeFile', bytes));
  }

  /**
   * CREATE overwrite=false. A data node that gives no answer may have created the file before
   * the answer was lost: then the file holding our bytes is ours (as a lease retried after a lost
   * answer finds its own first try); none there, the create is sent again. A data node that
   * answers nothing at all fails the step with its cause, never a bare 'fetch failed'.
   */
  async createExclusive(p: string, data: Buffer | string): Promise<boolean> {
    const bytes = Buffer.from(data);
    let unsure: DataNodeError | undefined;
    return this.nn.retryDataNode(async () => {
      try {
        if ((await this.create(p, body(data), false)) === 'created') return true;
        if (!unsure) return false;
      } catch (e) {
        if (!(e instanceof DataNodeError)) throw e;
        unsure = e;
      }
      const now = await this.readFile(p);
      if (now === null) throw unsure; // nothing made: sent again
      // Other bytes, or none yet: another process's create, judged by the caller as any lost race is.
      return now.equals(bytes);
    });
  }

  async mkdirs(p: string): Promise<void> {
    const res = await this.nn.call('PUT', 'MKDIRS', p);
    const { boolean } = await this.nn.json<{ boolean: boolean }>(res, 'mkdirs', [p], isBoolean);
    if (!boolean) throw new StoreError('refused', 'mkdirs', [this.toUri(p)], 'the name node answered false');
  }

  /**
   * rename2 (renameoptions=NONE or OVERWRITE): fails if the destination exists, never moves the
   * source inside an existing directory. A gateway without rename2 gets the plain RENAME, with
   * the destination checked first and `{"boolean": false}` turned into an error.
   */
  async rename(src: string, dst: string, opts: RenameOptions = {}): Promise<void> {
    await this.renameOrFind(src, dst, opts, () => this.moved(src, dst));
  }

  /**
   * A try whose answer was lost may have been done by the name node: the next try then finds its
   * source gone, and if every answer is lost the call fails though the rename happened. Either
   * way `done` (asked only then) decides, as Hadoop's name node retry cache does for RPC clients.
   */
  private async renameOrFind(
    src: string,
    dst: string,
    opts: RenameOptions,
    done: () => Promise<boolean>,
  ): Promise<void> {
    const tries = { lost: 0 };
    let res: Response;
    try {
      res = await this.nn.call(
        'PUT',
        'RENAME',
        src,
        { destination: dst, renameoptions: opts.replace ? 'OVERWRITE' : 'NONE' },
        tries,
      );
    } catch (e) {
      if (tries.lost > 0 && (await done().catch(() => false))) return;
      throw e;
    }
    if (res.ok) {
      // rename2 answers an empty 200; a gateway that did a plain rename, {"boolean": …}. Anything
      // else (a proxy's page) is no proof that the rename happened.
      const text = (await res.text()).trim();
      if (text === '') return;
      if (this.nn.parse<{ boolean: boolean }>(text, res.status, 'rename', [src, dst], isBoolean).boolean) return;
      throw await this.refused(src, dst);
    }
    const remote = await this.nn.remote(res.clone());
    if (res.status === 400 && /renameoptions/i.test(remote?.message ?? '')) return this.plainRename(src, dst, opts);
    const failure = await this.nn.failure(res, 'rename', [src, dst]);
    if (tries.lost > 0 && failure.reason === 'not-found' && (await done().catch(() => false))) return;
    throw failure;
  }

  /** The source gone and the destination there: what a done rename leaves. */
  private async moved(src: string, dst: string): Promise<boolean> {
    const [s, d] = await Promise.all([this.stat(src), this.stat(dst)]);
    return s === null && d !== null;
  }

  private async plainRename(src: string, dst: string, opts: RenameOptions): Promise<void> {
    const existing = await this.stat(dst);
    if (existing) {
      if (!opts.replace || existing.kind === 'dir')
        throw new StoreError('exists', 'rename', [this.toUri(src), this.toUri(dst)], 'destination exists');
      await this.delete(dst, false);
    }
    const res = await this.nn.call('PUT', 'RENAME', src, { destination: dst });
    const { boolean } = await this.nn.json<{ boolean: boolean }>(res, 'rename', [src, dst], isBoolean);
    if (boolean) return;
    throw await this.refused(src, dst);
  }

  /** Why a rename answered `{"boolean": false}`: HDFS answers false for all of these. */
  private async refused(src: string, dst: string): Promise<StoreError> {
    const [s, d] = await Promise.all([this.stat(src), this.stat(dst)]);
    const why = !s
      ? 'the source does not exist'
      : d
        ? 'the destination exists'
        : "the destination's parent does not exist or the rename is not allowed";
    return new StoreError(
      !s ? 'not-found' : d ? 'exists' : 'refused',
      'rename',
      [this.toUri(src), this.toUri(dst)],
      `the name node answered {"boolean": false}: ${why}`,
    );
  }

  /** No server-side copy in WebHDFS: the bytes pass through this process (the protocol renames instead). */
  async copy(src: string, dst: string): Promise<void> {
    const data = await this.readFile(src);
    if (data === null) throw new StoreError('not-found', 'copy', [this.toUri(src)], 'source does not exist');
    await this.nn.retryDataNode(() => this.create(dst, body(data), true));
  }

  async delete(p: string, recursive: boolean): Promise<boolean> {
    const res = await this.nn.call('DELETE', 'DELETE', p, { recursive: String(recursive) });
    const { boolean } = await this.nn.json<{ boolean: boolean }>(res, 'delete', [p], isBoolean);
    return boolean; // false: the path was not there, which cleanup counts as done
  }

  /**
   * Streams to a temp name and renames it into place whole: a killed or failed put publishes
   * nothing. A local file is read again for another try; a stream cannot be.
   */
  async put(dst: string, source: PutSource): Promise<void> {
    const once = (stream: Readable) =>
      this.viaTemp(dst, Readable.toWeb(counted(stream, source.onBytes)) as unknown as BodyInit, 'put');
    if ('stream' in source) return once(source.stream);
    await this.nn.retryDataNode(() => once(createReadStream(source.localPath)));
  }
}

interface HdfsStatus {
  pathSuffix: string;
  type: 'FILE' | 'DIRECTORY' | 'SYMLINK';
  length: number;
  modificationTime: number;
}

const isBoolean = (j: { boolean?: unknown }) => typeof j.boolean === 'boolean';

function isStatus(s: Partial<HdfsStatus> | undefined): boolean {
  return (
    typeof s === 'object' &&
    s !== null &&
    typeof s.pathSuffix === 'string' &&
    typeof s.length === 'number' &&
    typeof s.modificationTime === 'number' &&
    ['FILE', 'DIRECTORY', 'SYMLINK'].includes(s.type as string)
  );
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
    ...(s.type === 'FILE' ? { version: String(s.modificationTime) } : {}),
  };
}
