// Talking to the name nodes: one call with HA failover and one backoff for transient answers,
// RemoteException bodies turned into StoreErrors, data node redirects counted as requests.

import { setTimeout as sleep } from 'node:timers/promises';
import { StageCommitError, StoreError, UsageError, type StoreErrorReason } from '../../errors.js';
import { admitChange } from '../fence.js';
import { httpFetch, NULL_BODY } from './http-fetch.js';

export interface WebHdfsSettings {
  /** Name node base URLs (http:// or https://), several for an HA pair; tried in order. */
  readonly nameNodes: readonly string[];
  /** How this store's URIs are written back: 'hdfs://mycluster'. */
  readonly uriPrefix: string;
  /**
   * Whether a URI's scheme and authority (another spelling: 'webhdfs', 'nn1:9870') name this
   * cluster: the name nodes it resolves to include one of this store's.
   */
  readonly sameCluster?: (scheme: string, authority: string) => boolean;
  readonly user?: string;
  readonly delegation?: string;
  /** Transient failures (connection reset, 5xx, RetriableException) retried this many times. */
  readonly retries: number;
  readonly retryBaseMs: number;
  /** A name node call without an answer by then fails (and is retried): a hung server never hangs a step. */
  readonly requestTimeoutMs?: number;
  /** A fetch with TLS settings (swebhdfs CA bundle); default: the global fetch. */
  readonly fetch?: typeof fetch;
  /** The REST API's path on the name node: /webhdfs/v1 (a Knox gateway: /gateway/<topology>/webhdfs/v1). */
  readonly basePath?: string;
  /**
   * HTTP basic auth (a Knox gateway's): the `Basic …` header for each name node call and each
   * redirect back to a name node's own origin (Knox rewrites data node addresses to itself).
   */
  readonly basicAuth?: string;
  /** Kerberos: an `Authorization: Negotiate …` for each name node call (not with a delegation token). */
  readonly spnego?: { authorization(url: string): Promise<string> };
}

interface RemoteException {
  exception: string;
  javaClassName?: string;
  message: string;
}

function kindOf(status: number, exception: string | undefined): StoreErrorReason {
  if (status === 404 || exception === 'FileNotFoundException') return 'not-found';
  if (exception === 'FileAlreadyExistsException') return 'exists';
  if (exception === 'ParentNotDirectoryException') return 'no-location';
  return 'io';
}

/** Paths are encoded segment by segment: spaces, %, =, +, ?, # and unicode all survive. */
export function encodePath(p: string): string {
  return p.split('/').map(encodeURIComponent).join('/');
}

type Method = 'GET' | 'PUT' | 'DELETE';

/**
 * A signal that aborts after `ms`, as AbortSignal.timeout does, for a seventh of its cost (Node
 * 20 makes that one transferable: 44 µs a call against 6.5, about 0.7 s of CPU in a 20,000-request
 * commit-job).
 * The timer is not held open: a finished request's deadline fires into nothing, or the process ends.
 */
function deadline(ms: number): AbortSignal {
  const c = new AbortController();
  setTimeout(() => c.abort(new DOMException(`no answer in ${ms} ms`, 'TimeoutError')), ms).unref();
  return c.signal;
}

export class NameNodes {
  private active = 0;
  requests = 0;
  private readonly fetch: typeof fetch;

  constructor(readonly settings: WebHdfsSettings) {
    if (settings.nameNodes.length === 0)
      throw new StoreError('refused', 'connect', [], 'WebHDFS: no name node configured');
    this.fetch = settings.fetch ?? httpFetch;
  }

  private toUri(p: string): string {
    return `${this.settings.uriPrefix}${p}`;
  }

  private query(op: string, params: Record<string, string | undefined>): string {
    const q = new URLSearchParams({ op });
    for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
    // With Kerberos the ticket names the user: a user.name that differs is refused by the name node.
    if (this.settings.delegation) q.set('delegation', this.settings.delegation);
    else if (this.settings.user && !this.settings.spnego) q.set('user.name', this.settings.user);
    return q.toString();
  }

  /**
   * One name node call with failover and retries. Standby name nodes and refused connections
   * move to the next name node (remembered); transient errors back off and retry. `tries.lost`
   * counts tries that got no answer: a name node may have done what such a try asked.
   */
  async call(
    method: Method,
    op: string,
    p: string,
    params: Record<string, string | undefined> = {},
    tries?: { lost: number },
  ): Promise<Response> {
    const n = this.settings.nameNodes.length;
    let lastError: unknown;
    for (let attempt = 0, failovers = 0; ;) {
      // Every try of a change asks the fence, and is cut off if it trips before the answer.
      const cut = method === 'GET' ? undefined : admitChange(p, params.destination);
      const base = this.settings.nameNodes[this.active]!;
      const url = `${base.replace(/\/$/, '')}${this.settings.basePath ?? '/webhdfs/v1'}${encodePath(p)}?${this.query(op, params)}`;
      let res: Response | null = null;
      let exception: string | undefined;
      try {
        res = await this.send(method, url, cut);
      } catch (e) {
        if (e instanceof StageCommitError) throw e; // a verdict, not a network failure (an RPC port given for HTTP)
        if (cut?.aborted) throw cut.reason;
        lastError = e;
        if (tries) tries.lost++;
      }
      if (res?.status === 401) throw this.unauthorized(res, base);
      if (res && (res.status === 403 || res.status >= 500)) exception = (await this.remote(res.clone()))?.exception;
      // No answer, or a standby: the next name node, while one is left untried this round.
      if ((res === null || exception === 'StandbyException') && failovers < n - 1) {
        this.active = (this.active + 1) % n;
        failovers++;
        continue;
      }
      const transient =
        res === null || res.status >= 500 || exception === 'RetriableException' || exception === 'StandbyException';
      if (!transient) return res!;
      if (attempt >= this.settings.retries) {
        if (res) return res;
        break;
      }
      // The one backoff: every name node was tried (or the answer was transient); wait, then again.
      failovers = 0;
      await this.backoff(++attempt);
    }
    throw new StoreError(
      'io',
      op,
      [this.toUri(p)],
      `no name node answered (${this.settings.nameNodes.join(', ')}): ${causeOf(lastError)}`,
    );
  }

  /** One try of a name node call, its answer read whole (it is small): one that breaks off fails like none. */
  private async send(method: Method, url: string, cut: AbortSignal | undefined): Promise<Response> {
    this.requests++;
    // Bytes go to data nodes only (dataNode): every name node call gets the deadline.
    const due = deadline(this.settings.requestTimeoutMs ?? 60_000);
    const spnego = this.settings.delegation ? undefined : this.settings.spnego;
    const got = await this.fetch(url, {
      method,
      redirect: 'manual',
      ...(spnego ? { headers: { authorization: await spnego.authorization(url) } } : {}),
      ...(this.settings.basicAuth ? { headers: { authorization: this.settings.basicAuth } } : {}),
      signal: cut ? AbortSignal.any([due, cut]) : due,
    });
    const bytes = await got.arrayBuffer().catch((e: unknown) => {
      throw new Error(`its answer broke off: ${causeOf(e)}`);
    });
    return new Response(NULL_BODY.has(got.status) ? null : bytes, {
      status: got.status,
      statusText: got.statusText,
      headers: got.headers,
    });
  }

  /** A 401: the name node wants credentials it was not given, or refused the ones it was. */
  private unauthorized(res: Response, base: string): UsageError {
    const negotiate = /negotiate/i.test(res.headers.get('www-authenticate') ?? '');
    const { delegation, basicAuth, spnego } = this.settings;
    const gave = delegation ? 'delegation-token' : basicAuth ? 'basic-auth' : spnego ? 'kerberos' : 'none';
    return new UsageError({ reason: 'auth-refused', nameNode: base, gave, negotiate });
  }

  async remote(res: Response): Promise<RemoteException | null> {
    try {
      const j = (await res.json()) as { RemoteException?: RemoteException };
      return j.RemoteException ?? null;
    } catch {
      return null;
    }
  }

  async failure(res: Response, op: string, paths: string[]): Promise<StoreError> {
    const remote = await this.remote(res);
    const kind = kindOf(res.status, remote?.exception);
    const detail = remote ? `${remote.exception}: ${remote.message}` : `HTTP ${res.status}`;
    const hint = kind === 'no-location' ? ': choose a location under a directory, or move the file' : '';
    return new StoreError(
      kind,
      op,
      paths.map((p) => this.toUri(p)),
      detail + hint,
    );
  }

  /**
   * A successful answer's JSON, checked for the shape the op has: a proxy's page or a server that
   * is not a name node fails naming what came, never as a crash further on.
   */
  async json<T>(res: Response, op: string, paths: string[], fits: (j: any) => boolean): Promise<T> {
    if (!res.ok) throw await this.failure(res, op, paths);
    return this.parse<T>(await res.text(), res.status, op, paths, fits);
  }

  /** json()'s check, for an answer already read. */
  parse<T>(text: string, status: number, op: string, paths: string[], fits: (j: any) => boolean): T {
    let j: unknown;
    try {
      j = JSON.parse(text);
    } catch {
      j = undefined;
    }
    if (j !== null && typeof j === 'object' && fits(j)) return j as T;
    const shown = text.length > 80 ? `${text.slice(0, 80)}…` : text;
    throw new StoreError(
      'io',
      op,
      paths.map((p) => this.toUri(p)),
      `the name node's answer (HTTP ${status}) is not the WebHDFS answer to ${op}: ${JSON.stringify(shown)}; check that the address is a name node's HTTP port`,
    );
  }

  /**
   * The second leg of OPEN and CREATE: the data node a name node redirected to. No answer, or a
   * 5xx, is a DataNodeError: the request may or may not have taken effect, and only the caller
   * knows whether sending it again is safe (retryDataNode).
   */
  async dataNode(url: string, op: string, p: string, init: RequestInit = {}): Promise<Response> {
    const cut = init.method === 'PUT' || init.method === 'POST' ? admitChange(p) : undefined;
    this.requests++;
    const where = `the data node ${new URL(url).host}`;
    let res: Response;
    try {
      // Bytes may flow for as long as a file takes, but never stop for longer than the deadline.
      // The password goes back only to a name node's own origin, never to a data node elsewhere.
      const own = this.settings.nameNodes.some((n) => new URL(n).origin === new URL(url).origin);
      const auth = this.settings.basicAuth && own ? { authorization: this.settings.basicAuth } : {};
      res = await this.fetch(url, {
        ...init,
        headers: { ...(init.headers as Record<string, string> | undefined), ...auth },
        redirect: 'manual',
        signal: cut,
        idleMs: this.settings.requestTimeoutMs ?? 60_000,
      } as RequestInit);
    } catch (e) {
      if (e instanceof StageCommitError) throw e;
      if (cut?.aborted) throw cut.reason;
      throw new DataNodeError(op, [this.toUri(p)], `${where} gave no answer: ${causeOf(e)}`);
    }
    if (res.status < 500) return res;
    const remote = await this.remote(res);
    throw new DataNodeError(
      op,
      [this.toUri(p)],
      `${where} answered HTTP ${res.status}${remote ? ` ${remote.exception}: ${remote.message}` : ''}`,
    );
  }

  /**
   * Runs `once` again after a DataNodeError, with the backoff of the name node calls: for requests that are safe to
   * send twice.
   */
  async retryDataNode<T>(once: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await once();
      } catch (e) {
        if (!(e instanceof DataNodeError) || attempt >= this.settings.retries) throw e;
        await this.backoff(attempt + 1);
      }
    }
  }

  /** The wait before try `n` (1, 2, …) of a request that failed for a reason that may pass. */
  private backoff(n: number): Promise<void> {
    return sleep(this.settings.retryBaseMs * 2 ** n);
  }
}

/** A data node that gave no answer or a 5xx: whether the request took effect is unknown. */
export class DataNodeError extends StoreError {
  constructor(op: string, paths: string[], detail: string) {
    super('io', op, paths, detail);
  }
}

/** What fetch's 'fetch failed' hides: 'other side closed (UND_ERR_SOCKET)', 'connect ECONNREFUSED …'. */
export function causeOf(e: unknown): string {
  const err = e as Error & { cause?: Error & { code?: string } };
  const cause = err.cause;
  if (!cause) return err.message ?? String(e);
  return cause.code && !cause.message.includes(cause.code) ? `${cause.message} (${cause.code})` : cause.message;
}
