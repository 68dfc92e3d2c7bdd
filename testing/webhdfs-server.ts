// A WebHDFS server for the tests, written from Hadoop's WebHDFS REST API page (wire format) and
// filesystem specification (semantics), backed by a local directory. A name node pair (one can
// be made standby) redirects OPEN and CREATE to a separate data node address, as HDFS does.
// It does not mirror our client: test/webhdfs-server.test.ts checks it against the spec.

import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createWriteStream, promises as fs } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { pipeline } from 'node:stream/promises';

export interface WebHdfsServerOptions {
  /** Local directory that holds the namespace. */
  readonly root: string;
  /** LISTSTATUS_BATCH page size (HDFS: dfs.ls.limit, 1000). */
  readonly listLimit?: number;
  /** Answer RENAME with renameoptions as unsupported (as gateways without rename2 do). */
  readonly noRename2?: boolean;
  /** Delay between a created file's appearance and its bytes (ms), to show the empty window. */
  readonly createDelayMs?: number;
  /**
   * Kerberos, as a secured cluster: every name node call carries `Authorization: Negotiate` that
   * GSSAPI (the `kerberos` package, with the HTTP/localhost keytab KRB5_KTNAME names) verifies, or a
   * delegation token this server issued (GETDELEGATIONTOKEN); a data node call carries the token
   * the name node put in its redirect.
   */
  readonly spnego?: boolean;
  /** The REST API's path: /webhdfs/v1 by default (a Knox gateway's: /gateway/<topology>/webhdfs/v1). */
  readonly basePath?: string;
  /** HTTPS with this key and certificate (PEM), for the name nodes and the data node alike. */
  readonly tls?: { readonly key: string; readonly cert: string };
  /** HTTP basic auth on every name node call (a Knox gateway's), 401 `Basic` without it. */
  readonly basicAuth?: { readonly user: string; readonly password: string };
  /**
   * A gateway (HttpFS, Knox): the data leg of CREATE comes back to the same server (`data=true`,
   * content type application/octet-stream required, as HttpFS does), and OPEN answers the bytes
   * itself; no rename2.
   */
  readonly gateway?: boolean;
}

/** What the next data-node request does instead of answering as HDFS does. */
type DataNodeFault = 'cut-before' | 'cut-after' | 'error-500' | 'stall' | 'stall-after' | 'slow';

/** One name-node request: the op named in its query, on path `p`. */
interface NameNodeCall {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  op: string;
  p: string;
  q: URLSearchParams;
}

interface RemoteError {
  readonly status: number;
  readonly exception: string;
  readonly javaClassName: string;
  readonly message: string;
}

const err = (status: number, exception: string, pkg: string, message: string): RemoteError => ({
  status,
  exception,
  javaClassName: `${pkg}.${exception}`,
  message,
});
const notFound = (p: string) => err(404, 'FileNotFoundException', 'java.io', `File does not exist: ${p}`);
const exists = (p: string) => err(403, 'FileAlreadyExistsException', 'org.apache.hadoop.fs', `${p} already exists`);
const parentNotDir = (p: string) =>
  err(403, 'ParentNotDirectoryException', 'org.apache.hadoop.fs', `${p} (is not a directory)`);
const illegal = (m: string) => err(400, 'IllegalArgumentException', 'java.lang', m);

class Fail extends Error {
  constructor(readonly remote: RemoteError) {
    super(remote.message);
  }
}

export class WebHdfsCluster {
  private nameNodes: Server[] = [];
  private dataNode: Server | undefined;
  /** Index of the active name node; the others answer StandbyException. */
  active = 0;
  /** Every request the name nodes saw: op and user, for assertions. */
  readonly log: {
    node: number;
    op: string;
    path: string;
    user: string | null;
    delegation: string | null;
    /** The Kerberos principal GSSAPI verified, with `spnego`. */
    principal?: string;
  }[] = [];
  /** Delegation tokens issued (URL strings), with `spnego`; remove one to revoke it. */
  readonly tokens = new Set<string>();
  private dnPort = 0;
  /**
   * Faults for the next data node requests, one each: the connection cut before anything is done,
   * cut once the work is done (a CREATE made, half an OPEN's bytes sent), an HTTP 500, or a
   * data node that stops reading an upload and never answers (stall), one that sends half a
   * file and then nothing (stall-after), or one that reads an upload slowly, 64 KiB every 100 ms
   * (slow).
   */
  readonly dataNodeFaults: DataNodeFault[] = [];

  constructor(readonly opts: WebHdfsServerOptions) {}

  /** With `spnego`, by the host name of the service principal (HTTP/localhost), as a secured cluster is named. */
  get nameNodeUrls(): string[] {
    const host = this.opts.spnego ? 'localhost' : '127.0.0.1';
    const scheme = this.opts.tls ? 'https' : 'http';
    return this.nameNodes.map((s) => `${scheme}://${host}:${(s.address() as AddressInfo).port}`);
  }

  async start(nameNodes = 2): Promise<this> {
    await fs.mkdir(this.opts.root, { recursive: true });
    const createServer = (handler: (q: IncomingMessage, r: ServerResponse) => void) =>
      this.opts.tls ? createHttpsServer(this.opts.tls, handler) : createHttpServer(handler);
    this.dataNode = createServer((q, r) => void this.serveDataNode(q, r));
    await listen(this.dataNode);
    this.dnPort = (this.dataNode.address() as AddressInfo).port;
    for (let i = 0; i < nameNodes; i++) {
      const s = createServer((q, r) => void this.serveNameNode(i, q, r));
      await listen(s);
      this.nameNodes.push(s);
    }
    return this;
  }

  async stop(): Promise<void> {
    for (const s of [...this.nameNodes, this.dataNode]) {
      if (!s) continue;
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  }

  private local(p: string): string {
    const norm = path.posix.normalize('/' + p);
    return path.join(this.opts.root, norm);
  }

  /**
   * HDFS resolves a path to create through directories only: a file on the way is ParentNotDirectoryException (403).
   */
  private async throughDirs(p: string): Promise<void> {
    for (let d = path.posix.dirname(path.posix.normalize('/' + p)); d !== '/'; d = path.posix.dirname(d)) {
      const st = await fs.stat(this.local(d)).catch(() => null);
      if (st) {
        if (!st.isDirectory()) throw new Fail(parentNotDir(d));
        return;
      }
    }
  }

  /**
   * The name node's namespace lock (FSNamesystem's): one namespace operation at a time, so a
   * listing never sees a tree half deleted or half renamed.
   */
  private namespaceTail: Promise<unknown> = Promise.resolve();
  private namespace<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.namespaceTail.then(fn, fn);
    this.namespaceTail = run.catch(() => undefined);
    return run;
  }

  private async serveNameNode(i: number, req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const url = new URL(req.url!, 'http://x');
      const base = this.opts.basePath ?? '/webhdfs/v1';
      if (!url.pathname.startsWith(`${base}/`)) {
        // A gateway answers a path outside its topology with its own 404 page, not WebHDFS JSON.
        res.writeHead(404, { 'content-type': 'text/html' }).end('<html><body>Not Found</body></html>');
        return;
      }
      if (this.opts.basicAuth) {
        const { user, password } = this.opts.basicAuth;
        if (req.headers.authorization !== `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`) {
          res.writeHead(401, { 'www-authenticate': 'Basic realm="gateway"' }).end();
          return;
        }
      }
      const p = decodeURIComponent(url.pathname.slice(base.length)) || '/';

      const op = (url.searchParams.get('op') ?? '').toUpperCase();
      const principal = this.opts.spnego ? await this.authenticate(req, res, url.searchParams) : undefined;
      if (principal === null) return;
      this.log.push({
        node: i,
        op,
        path: p,
        user: url.searchParams.get('user.name'),
        delegation: url.searchParams.get('delegation'),
        ...(principal ? { principal } : {}),
      });
      // A gateway takes the data leg itself: CREATE's second request (data=true), and OPEN.
      if (this.opts.gateway && (url.searchParams.get('data') === 'true' || (op === 'OPEN' && req.method === 'GET')))
        return void this.serveDataNode(req, res, p);
      if (op === 'GETDELEGATIONTOKEN' && principal) return json(res, 200, { Token: { urlString: this.issue() } });
      if (i !== this.active) {
        throw new Fail(
          err(
            403,
            'StandbyException',
            'org.apache.hadoop.ipc',
            `Operation category ${req.method === 'GET' ? 'READ' : 'WRITE'} is not supported in state standby`,
          ),
        );
      }
      await this.namespace(() =>
        this.nameNodeOp({ req, res, method: req.method ?? 'GET', op, p, q: url.searchParams }),
      );
    } catch (e) {
      fail(res, e);
    }
  }

  private async nameNodeOp({ req, res, method, op, p, q }: NameNodeCall): Promise<void> {
    const want = (m: string) => {
      if (method !== m)
        throw new Fail(illegal(`Invalid value for webhdfs parameter "op": ${op} is not a valid ${method} operation`));
    };
    const local = this.local(p);
    switch (op) {
      case 'GETFILESTATUS': {
        want('GET');
        return json(res, 200, { FileStatus: await status(local, '') });
      }
      case 'LISTSTATUS': {
        want('GET');
        return json(res, 200, { FileStatuses: { FileStatus: await this.listing(local, p) } });
      }
      case 'LISTSTATUS_BATCH': {
        want('GET');
        return this.listBatch(res, local, p, q);
      }
      case 'MKDIRS': {
        want('PUT');
        return this.mkdirs(res, local, p);
      }
      case 'RENAME': {
        want('PUT');
        return this.renameOp(res, p, q);
      }
      case 'DELETE': {
        want('DELETE');
        return this.deleteOp(res, local, p, q);
      }
      case 'OPEN': {
        want('GET');
        const st = await fs.stat(local).catch(() => null);
        if (!st) throw new Fail(notFound(p));
        if (st.isDirectory()) throw new Fail(err(404, 'FileNotFoundException', 'java.io', `Path is not a file: ${p}`));
        return this.redirect(res, 'OPEN', p, q);
      }
      case 'CREATE': {
        want('PUT');
        // The name node only chooses a data node; the create happens there (as in HDFS).
        void req.resume();
        return this.redirect(res, 'CREATE', p, q);
      }
      default:
        throw new Fail(illegal(`Invalid value for webhdfs parameter "op": No enum constant ${op}`));
    }
  }

  /** LISTSTATUS_BATCH: one page of `p`'s entries after startAfter. */
  private async listBatch(res: ServerResponse, local: string, p: string, q: URLSearchParams): Promise<void> {
    // Hadoop's name node lists in name order from the entry after startAfter, a page at a time:
    // what lies before it is not read.
    const after = q.get('startAfter') ?? '';
    const limit = this.opts.listLimit ?? 1000;
    const { page, remaining } = await this.listingPage(local, p, after, limit);
    return json(res, 200, {
      DirectoryListing: {
        partialListing: { FileStatuses: { FileStatus: page } },
        remainingEntries: remaining,
      },
    });
  }

  /** MKDIRS: every missing level; a file in the way is an error. */
  private async mkdirs(res: ServerResponse, local: string, p: string): Promise<void> {
    const st = await fs.stat(local).catch(() => null);
    if (st && !st.isDirectory())
      throw new Fail(err(403, 'FileAlreadyExistsException', 'org.apache.hadoop.fs', `Path is not a directory: ${p}`));
    await this.throughDirs(p);
    await fs.mkdir(local, { recursive: true });
    return json(res, 200, { boolean: true });
  }

  /** RENAME, and rename with renameoptions (HDFS's rename2) unless the server is told it has none. */
  private async renameOp(res: ServerResponse, p: string, q: URLSearchParams): Promise<void> {
    const dst = q.get('destination');
    if (!dst || !dst.startsWith('/'))
      throw new Fail(illegal(`Invalid value for webhdfs parameter "destination": ${dst}`));
    const options = q.get('renameoptions');
    if (options !== null) {
      if (this.opts.noRename2) throw new Fail(illegal('Invalid parameter "renameoptions"'));
      await this.rename2(
        p,
        dst,
        options
          .split(',')
          .map((o) => o.trim().toUpperCase())
          .includes('OVERWRITE'),
      );
      res.writeHead(200, { 'content-type': 'application/json' }).end();
      return;
    }
    return json(res, 200, { boolean: await this.rename(p, dst) });
  }

  /** DELETE: a non-empty directory only when recursive, gone from the namespace in one step. */
  private async deleteOp(res: ServerResponse, local: string, p: string, q: URLSearchParams): Promise<void> {
    const recursive = q.get('recursive') === 'true';
    const st = await fs.lstat(local).catch(() => null);
    if (!st || p === '/') return json(res, 200, { boolean: false });
    if (st.isDirectory()) {
      if (!recursive && (await fs.readdir(local)).length > 0)
        throw new Fail(
          err(
            403,
            'PathIsNotEmptyDirectoryException',
            'org.apache.hadoop.fs',
            `${p} is non empty': Directory is not empty`,
          ),
        );
      // The name node removes a tree from its namespace in one step: no listing sees it half gone.
      const away = `${this.opts.root}.deleted-${randomUUID()}`;
      await fs.rename(local, away);
      await fs.rm(away, { recursive: true, force: true });
    } else await fs.unlink(local);
    return json(res, 200, { boolean: true });
  }

  /**
   * A secured name node's check: the principal GSSAPI verified from `Authorization: Negotiate`
   * ('' for a delegation token this server issued), or null once it has answered 401 or 403.
   */
  private async authenticate(req: IncomingMessage, res: ServerResponse, q: URLSearchParams): Promise<string | null> {
    const token = q.get('delegation');
    if (token !== null) {
      if (this.tokens.has(token)) return '';
      fail(
        res,
        new Fail(err(403, 'InvalidToken', 'org.apache.hadoop.security.token.SecretManager', 'token is not valid')),
      );
      return null;
    }
    const m = /^Negotiate\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!m) {
      res
        .writeHead(401, { 'www-authenticate': 'Negotiate', 'content-type': 'text/plain' })
        .end('Authentication required');
      return null;
    }
    let principal: string;
    try {
      const k = createRequire(import.meta.url)('kerberos') as {
        initializeServer(service: string): Promise<{ step(t: string): Promise<string>; username: string }>;
      };
      const server = await k.initializeServer('HTTP@localhost');
      await server.step(m[1]!);
      principal = server.username;
    } catch (e) {
      res
        .writeHead(401, { 'www-authenticate': 'Negotiate', 'content-type': 'text/plain' })
        .end(`GSSException: ${(e as Error).message}`);
      return null;
    }
    // The short name, as Hadoop's auth_to_local rules give it by default.
    const short = principal.replace(/[/@].*$/, '');
    const asked = q.get('user.name');
    if (asked !== null && asked !== short) {
      fail(
        res,
        new Fail(
          err(403, 'SecurityException', 'java.lang', `Usernames not matched: name=${asked} != expected=${short}`),
        ),
      );
      return null;
    }
    return principal;
  }

  /** A new delegation token's URL string: Hadoop's Writable Token (all lengths < 128) in URL-safe base64. */
  private issue(): string {
    const text = (s: string) => Buffer.concat([Buffer.from([Buffer.byteLength(s)]), Buffer.from(s)]);
    const id = randomBytes(24);
    const pw = randomBytes(20);
    const bytes = Buffer.concat([
      Buffer.from([id.length]),
      id,
      Buffer.from([pw.length]),
      pw,
      text('HDFS_DELEGATION_TOKEN'),
      text('ha-hdfs:testcluster'),
    ]);
    const token = bytes.toString('base64url');
    this.tokens.add(token);
    return token;
  }

  private redirect(res: ServerResponse, op: string, p: string, q: URLSearchParams): void {
    const params = new URLSearchParams(q);
    params.set('op', op);
    // A secured name node hands the data node leg a delegation token of its own.
    if (this.opts.spnego && !params.has('delegation')) params.set('delegation', this.issue());
    params.set('namenoderpcaddress', 'localhost:8020');
    const encoded = p.split('/').map(encodeURIComponent).join('/');
    const scheme = this.opts.tls ? 'https' : 'http';
    let location = `${scheme}://127.0.0.1:${this.dnPort}/webhdfs/v1${encoded}?${params}`;
    if (this.opts.gateway) {
      params.set('data', 'true');
      location = `${scheme}://${res.req.headers.host}${this.opts.basePath ?? '/webhdfs/v1'}${encoded}?${params}`;
    }
    res.writeHead(307, { location, 'content-type': 'application/json' }).end(JSON.stringify({ Location: location }));
  }

  /** Up to `limit` statuses of the names after `after`, and how many names follow them. */
  private async listingPage(
    local: string,
    p: string,
    after: string,
    limit: number,
  ): Promise<{ page: { pathSuffix: string }[]; remaining: number }> {
    const st = await fs.lstat(local).catch(() => null);
    if (!st) throw new Fail(notFound(p));
    if (!st.isDirectory()) return { page: after ? [] : [await status(local, '')], remaining: 0 };
    const names = (await fs.readdir(local)).filter((n) => !n.startsWith('.webhdfs-tmp-') && n > after).sort();
    const page = [];
    let i = 0;
    for (; i < names.length && page.length < limit; i++) {
      const s = await status(path.join(local, names[i]!), names[i]!).catch(() => null);
      if (s) page.push(s);
    }
    return { page, remaining: names.length - i };
  }

  private async listing(local: string, p: string): Promise<{ pathSuffix: string }[]> {
    const st = await fs.lstat(local).catch(() => null);
    if (!st) throw new Fail(notFound(p));
    if (!st.isDirectory()) return [await status(local, '')];
    const names = (await fs.readdir(local)).filter((n) => !n.startsWith('.webhdfs-tmp-')).sort();
    const out = [];
    for (const n of names) {
      const s = await status(path.join(local, n), n).catch(() => null);
      if (s) out.push(s);
    }
    return out;
  }

  /** FileSystem.rename (filesystem.md): false, not an error, when it cannot be done. */
  private async rename(src: string, dst: string): Promise<boolean> {
    const s = this.local(src);
    let d = this.local(dst);
    if (src === '/' || !(await fs.lstat(s).catch(() => null))) return false;
    if (path.posix.normalize(dst + '/').startsWith(path.posix.normalize(src + '/'))) return false;
    const dstSt = await fs.lstat(d).catch(() => null);
    if (dstSt?.isDirectory()) {
      // Onto an existing directory: the source moves inside it.
      d = path.join(d, path.posix.basename(src));
      if (await fs.lstat(d).catch(() => null)) return false;
    } else if (dstSt) {
      return false;
    }
    const parent = await fs.stat(path.dirname(d)).catch(() => null);
    if (!parent?.isDirectory()) return false;
    await fs.rename(s, d);
    return true;
  }

  /** FileContext.rename with options (rename2): errors instead of false; never moves inside. */
  private async rename2(src: string, dst: string, overwrite: boolean): Promise<void> {
    const s = this.local(src);
    const d = this.local(dst);
    const srcSt = await fs.lstat(s).catch(() => null);
    if (!srcSt) throw new Fail(notFound(src));
    if (src === dst) throw new Fail(exists(dst));
    if (path.posix.normalize(dst + '/').startsWith(path.posix.normalize(src + '/')))
      throw new Fail(
        err(403, 'IOException', 'java.io', `Rename destination ${dst} is a directory or file under source ${src}`),
      );
    const dstSt = await fs.lstat(d).catch(() => null);
    if (dstSt) {
      if (!overwrite) throw new Fail(exists(dst));
      if (dstSt.isDirectory() !== srcSt.isDirectory())
        throw new Fail(
          err(403, 'IOException', 'java.io', `Source ${src} and destination ${dst} must both be directories or files`),
        );
      if (dstSt.isDirectory() && (await fs.readdir(d)).length > 0)
        throw new Fail(err(403, 'IOException', 'java.io', `rename destination directory is not empty: ${dst}`));
    }
    const parent = await fs.stat(path.dirname(d)).catch(() => null);
    if (!parent) throw new Fail(notFound(path.posix.dirname(dst)));
    if (!parent.isDirectory())
      throw new Fail(
        err(
          403,
          'ParentNotDirectoryException',
          'org.apache.hadoop.fs',
          `Parent path is not a directory: ${path.posix.dirname(dst)}`,
        ),
      );
    if (dstSt?.isDirectory()) await fs.rmdir(d);
    await fs.rename(s, d);
  }

  private async serveDataNode(req: IncomingMessage, res: ServerResponse, gatewayPath?: string): Promise<void> {
    try {
      const url = new URL(req.url!, 'http://x');
      const p = gatewayPath ?? (decodeURIComponent(url.pathname.slice('/webhdfs/v1'.length)) || '/');
      if (
        gatewayPath !== undefined &&
        req.method === 'PUT' &&
        req.headers['content-type'] !== 'application/octet-stream'
      )
        throw new Fail(illegal("Data upload requests must have content-type set to 'application/octet-stream'"));
      const op = url.searchParams.get('op');
      const local = this.local(p);
      if (this.opts.spnego && !this.tokens.has(url.searchParams.get('delegation') ?? ''))
        throw new Fail(err(403, 'InvalidToken', 'org.apache.hadoop.security.token.SecretManager', 'no valid token'));
      const fault = this.dataNodeFaults.shift();
      if (fault === 'cut-before') return void req.socket.destroy();
      if (fault === 'stall') return void req.pause();
      if (fault === 'error-500') throw new Error('DataStreamer Exception: injected');
      if (op === 'OPEN' && req.method === 'GET') {
        return await this.dataNodeOpen(res, local, p, fault);
      }
      if (op === 'CREATE' && req.method === 'PUT') {
        return await this.dataNodeCreate(req, res, p, url.searchParams.get('overwrite') === 'true', fault);
      }
      throw new Fail(illegal(`Invalid data node operation ${op}`));
    } catch (e) {
      fail(res, e);
    }
  }

  /** A data node's OPEN: the bytes of what was opened, or half of them as `fault` says. */
  private async dataNodeOpen(res: ServerResponse, local: string, p: string, fault?: DataNodeFault): Promise<void> {
    // The path is opened once and its length taken from what was opened (WebHdfsHandler's
    // onOpen): a rename that replaces the file meanwhile is never read half old, half new.
    const fh = await fs.open(local, 'r').catch(() => null);
    const st = await fh?.stat();
    if (!fh || !st?.isFile()) {
      await fh?.close();
      throw new Fail(notFound(p));
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': st.size });
    if (fault === 'cut-after' || fault === 'stall-after') {
      const bytes = await fh.readFile();
      await fh.close();
      res.write(bytes.subarray(0, Math.floor(bytes.length / 2)));
      // stall-after: half the file, then nothing more, the connection kept open.
      if (fault === 'cut-after') setTimeout(() => res.socket?.destroy(), 20);
      return;
    }
    await pipeline(fh.createReadStream(), res);
    return;
  }

  /** A data node's CREATE: the file enters the namespace, then its bytes arrive (slowly or cut, as `fault` says). */
  private async dataNodeCreate(
    req: IncomingMessage,
    res: ServerResponse,
    p: string,
    overwrite: boolean,
    fault?: DataNodeFault,
  ): Promise<void> {
    const local = this.local(p);
    // The file enters the namespace under its lock; its bytes arrive afterwards.
    await this.namespace(async () => {
      await this.throughDirs(p);
      await fs.mkdir(path.dirname(local), { recursive: true });
      const st = await fs.lstat(local).catch(() => null);
      if (st?.isDirectory())
        throw new Fail(
          err(403, 'FileAlreadyExistsException', 'org.apache.hadoop.fs', `${p} already exists as a directory`),
        );
      // HDFS makes the file visible (empty) at create, before its bytes arrive.
      const fh = await fs.open(local, overwrite ? 'w' : 'wx').catch((e: NodeJS.ErrnoException) => {
        if (e.code === 'EEXIST') throw new Fail(exists(p));
        throw e;
      });
      await fh.close();
    });
    if (this.opts.createDelayMs) await new Promise((r) => setTimeout(r, this.opts.createDelayMs));
    const sink = createWriteStream(local, { flags: 'r+', highWaterMark: 64 * 1024 });
    if (fault === 'slow') {
      req.on('data', (chunk: Buffer) => {
        req.pause();
        sink.write(chunk);
        setTimeout(() => req.resume(), 100 * Math.ceil(chunk.length / (64 * 1024)));
      });
      await new Promise<void>((r, j) => req.on('end', r).on('error', j));
      await new Promise<void>((r) => sink.end(r));
    } else await pipeline(req, sink);
    if (fault === 'cut-after') return void req.socket.destroy();
    res
      .writeHead(201, {
        location: `hdfs://localhost:8020${p.split('/').map(encodeURIComponent).join('/')}`,
        'content-length': 0,
      })
      .end();
    return;
  }
}

async function status(local: string, suffix: string): Promise<Record<string, unknown> & { pathSuffix: string }> {
  const st = await fs.lstat(local).catch(() => null);
  if (!st) throw new Fail(notFound(local));
  return {
    accessTime: Math.floor(st.atimeMs),
    blockSize: st.isDirectory() ? 0 : 134217728,
    childrenNum: 0,
    fileId: st.ino,
    group: 'supergroup',
    length: st.isDirectory() ? 0 : st.size,
    modificationTime: Math.floor(st.mtimeMs),
    owner: 'hdfs',
    pathSuffix: suffix,
    permission: (st.mode & 0o777).toString(8),
    replication: st.isDirectory() ? 0 : 1,
    storagePolicy: 0,
    type: st.isSymbolicLink() ? 'SYMLINK' : st.isDirectory() ? 'DIRECTORY' : 'FILE',
  };
}

function json(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

function fail(res: ServerResponse, e: unknown): void {
  const remote = e instanceof Fail ? e.remote : err(500, 'IOException', 'java.io', (e as Error)?.message ?? String(e));
  if (res.headersSent) return void res.destroy();
  json(res, remote.status, {
    RemoteException: { exception: remote.exception, javaClassName: remote.javaClassName, message: remote.message },
  });
}

function listen(s: Server): Promise<void> {
  return new Promise((resolve) => s.listen(0, '127.0.0.1', resolve));
}
