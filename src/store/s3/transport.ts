// One HTTP exchange for the signed requests (signed.ts) on Node's http and https with a keep-alive
// agent: the request goes out in one write, the answer is read whole (S3 answers here are small
// XML documents). The SDK's handler wraps the same calls in timers, listeners and stream adapters
// costing about 0.25 ms of CPU a request, which a 2-core machine shared with the server feels.
// The deadlines are the SDK's: a connection that is not made in `connectionTimeout`, or a socket
// idle for `requestTimeout`, fails the exchange (and the caller's retry decides). Idle kept-alive
// sockets do not hold a process open (Node's agent unrefs them).

import http from 'node:http';
import https from 'node:https';

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
  readonly body: string;
  /** Cuts the exchange off (the job lease's fence): it fails with the signal's reason. */
  readonly signal?: AbortSignal | undefined;
}

export interface Answer {
  readonly status: number;
  readonly body: string;
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
      req.end(x.body === '' ? undefined : x.body);
    });
  }
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
  res.on('end', () =>
    resolve({
      status: res.statusCode ?? 0,
      body: Buffer.concat(chunks).toString('utf8'),
      ...(typeof region === 'string' && region ? { bucketRegion: region } : {}),
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
