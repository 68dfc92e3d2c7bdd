// One HTTP exchange for the signed requests (signed.ts) on Node's http and https with a keep-alive
// agent: a small request goes out in one write, a file's bytes are streamed from the file as they
// are read (never held whole, never read twice); the answer is read whole (S3 answers here are
// small XML documents). The SDK's handler wraps the same calls in timers, listeners and stream adapters
// costing about 0.25 ms of CPU a request, which a 2-core machine shared with the server feels.
// The deadlines are the SDK's: a connection that is not made in `connectionTimeout`, or a socket
// idle for `requestTimeout`, fails the exchange (and the caller's retry decides). Idle kept-alive
// sockets do not hold a process open (Node's agent unrefs them).

import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';

export interface Deadlines {
  readonly connectionTimeout: number;
  readonly requestTimeout: number;
}

export interface Exchange {
  readonly protocol: string;
  readonly hostname: string;
  readonly port?: number;
  readonly method: string;
  /** Path and query, encoded. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | StreamedBody;
  /** Cuts the exchange off (the job lease's fence): it fails with the signal's reason. */
  readonly signal?: AbortSignal | undefined;
}

/** A streamed body's source held other than the bytes said (a file changed while it was sent): never retried. */
export class SourceChanged extends Error {
  override readonly name = 'SourceChanged';
}

/**
 * A body read from a source as it is sent: `length` bytes exactly (the Content-Length sent), opened
 * afresh for each attempt. A source that ends short or runs long fails the exchange with `short`.
 */
export interface StreamedBody {
  readonly length: number;
  open(): Readable;
  /** The error when the source held other than `length` bytes (a file changed while it was sent). */
  short(read: number): SourceChanged;
  /** Hears each chunk's size as it goes out. */
  readonly onChunk?: (n: number) => void;
}

export interface Answer {
  readonly status: number;
  readonly body: string;
  /** The ETag header (PutObject and UploadPart answer with it and no body). */
  readonly etag?: string;
  /** x-amz-bucket-region, which S3 sends with a redirect to the bucket's own region. */
  readonly bucketRegion?: string;
}

/** Sockets per host, as the SDK's handler allows by default. */
const MAX_SOCKETS = 50;

export class Transport {
  private readonly agents = {
    http: new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS }),
    https: new https.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS }),
  };

  constructor(private readonly deadlines: Deadlines) {}

  send(x: Exchange): Promise<Answer> {
    const secure = x.protocol === 'https:';
    const { connectionTimeout, requestTimeout } = this.deadlines;
    // A URL's IPv6 host keeps its brackets ([::1]); the Host header wants them, a connection not.
    const hostname = x.hostname.startsWith('[') && x.hostname.endsWith(']') ? x.hostname.slice(1, -1) : x.hostname;
    return new Promise<Answer>((resolve, reject) => {
      const req = (secure ? https : http).request(
        {
          agent: secure ? this.agents.https : this.agents.http,
          hostname,
          port: x.port,
          method: x.method,
          path: x.path,
          headers: x.headers,
          timeout: requestTimeout,
        },
        (res) => collect(res, x.hostname, resolve, reject),
      );
      req.on('error', reject);
      if (x.signal) cutOnAbort(req, x.signal);
      req.on('timeout', () =>
        req.destroy(
          new Error(
            req.socket?.connecting
              ? `could not connect to ${x.hostname} in ${requestTimeout} ms`
              : `no answer from ${x.hostname} for ${requestTimeout} ms`,
          ),
        ),
      );
      req.on('socket', (socket) => {
        if (!socket.connecting) return;
        const timer = setTimeout(
          () => req.destroy(new Error(`could not connect to ${x.hostname} in ${connectionTimeout} ms`)),
          connectionTimeout,
        );
        socket.once('connect', () => clearTimeout(timer));
        socket.once('close', () => clearTimeout(timer));
      });
      if (typeof x.body === 'string') req.end(x.body === '' ? undefined : x.body);
      else stream(req, x.body);
    });
  }
}

/** Pipes a streamed body into the request; a source that fails, or holds more or fewer bytes, destroys it. */
function stream(req: http.ClientRequest, body: StreamedBody): void {
  const src = body.open();
  let read = 0;
  const fail = (e: Error) => {
    src.destroy();
    req.destroy(e);
  };
  src.on('error', fail);
  req.once('close', () => src.destroy());
  src.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > body.length) return fail(body.short(read));
    body.onChunk?.(chunk.length);
    if (!req.write(chunk)) {
      src.pause();
      req.once('drain', () => src.resume());
    }
  });
  src.on('end', () => (read === body.length ? req.end() : fail(body.short(read))));
}

/** Gathers an answer and its body; a connection closed in the middle of it is an error. */
function collect(
  res: http.IncomingMessage,
  host: string,
  resolve: (a: Answer) => void,
  reject: (e: Error) => void,
): void {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  const region = res.headers['x-amz-bucket-region'];
  const etag = res.headers.etag;
  res.on('end', () =>
    resolve({
      status: res.statusCode ?? 0,
      body: Buffer.concat(chunks).toString('utf8'),
      ...(typeof region === 'string' && region ? { bucketRegion: region } : {}),
      ...(typeof etag === 'string' && etag ? { etag } : {}),
    }),
  );
  res.on('error', reject);
  res.on('aborted', () => reject(new Error(`the connection to ${host} closed in the middle of an answer`)));
}

/** An exchange whose signal aborts is cut at once, with the signal's reason. */
function cutOnAbort(req: http.ClientRequest, signal: AbortSignal): void {
  const cut = () => req.destroy(signal.reason as Error);
  if (signal.aborted) cut();
  signal.addEventListener('abort', cut, { once: true });
  req.once('close', () => signal.removeEventListener('abort', cut));
}
