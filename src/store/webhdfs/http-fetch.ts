// fetch over node:http. Node 20's built-in fetch never settles (nor keeps the process alive) when
// a server closes a connection as soon as it accepts it — what a port-forward or load balancer
// without a live back end does —, so a step ended with exit 13 and no word. node:http reports
// that as 'socket hang up', which the name node calls retry and then name.

import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';

/** Statuses whose Response may not carry a body. */
export const NULL_BODY = new Set([101, 204, 205, 304]);

/**
 * Bytes handed to the socket buy this much time each (16 KiB/s): the socket's own idle time cannot
 * tell a slow upload from a stalled one, since the kernel takes megabytes at once and drains them
 * unseen.
 */
const FLOOR_BYTES_PER_MS = 16;

/**
 * The subset of fetch the WebHDFS store uses: method, headers, a body (bytes, text or a stream), a
 * signal; redirects are never followed. `idleMs`: the request fails once it stalls — no answer
 * byte for that long, and an upload slower than 16 KiB/s beyond it (a data node that stops
 * reading an upload, or stops sending a file).
 */
export function httpFetch(
  input: string | URL | Request,
  init: RequestInit & { idleMs?: number; agent?: https.Agent } = {},
): Promise<Response> {
  const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
  const secure = url.protocol === 'https:';
  const client = secure ? https : http;
  return new Promise<Response>((resolve, reject) => {
    let answer: http.IncomingMessage | undefined;
    const req = client.request(
      url,
      {
        method: init.method ?? 'GET',
        headers: headersOf(init.headers),
        signal: init.signal ?? undefined,
        ...(secure && init.agent ? { agent: init.agent } : {}),
      },
      (res) => {
        answer = res;
        const headers = new Headers();
        for (const [k, v] of Object.entries(res.headers)) for (const one of [v ?? []].flat()) headers.append(k, one);
        const status = res.statusCode ?? 502;
        const body =
          NULL_BODY.has(status) || init.method === 'HEAD' ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
        if (!body) res.resume();
        res.on('data', () => watch?.moved(0));
        resolve(new Response(body, { status, statusText: res.statusMessage, headers }));
      },
    );
    // As fetch does: a network failure is a TypeError whose cause says what happened.
    req.on('error', (e) =>
      reject(init.signal?.aborted ? init.signal.reason : new TypeError('fetch failed', { cause: e })),
    );
    // The answer's stream fails with the cause too (destroying the request alone says 'aborted').
    const watch = init.idleMs
      ? stallWatch(init.idleMs, (e) => {
          answer?.destroy(e);
          req.destroy(e);
        })
      : undefined;
    req.on('close', () => watch?.stop());
    const body = init.body;
    if (body === undefined || body === null) req.end();
    else if (typeof body === 'string' || body instanceof Uint8Array) {
      watch?.moved(Buffer.byteLength(body));
      req.end(body);
    } else if (body instanceof ReadableStream) {
      const from = Readable.fromWeb(body as import('node:stream/web').ReadableStream);
      from.on('error', (e) => req.destroy(e));
      from.on('data', (chunk: Buffer) => watch?.moved(chunk.length));
      from.pipe(req);
    } else req.destroy(new TypeError('httpFetch: unsupported body'));
  });
}

/** httpFetch trusting the certificate authorities in `ca` (PEM) for https:// (swebhdfs, a gateway's own CA). */
export function httpFetchWithCa(ca: string): typeof fetch {
  const agent = new https.Agent({ ca, keepAlive: true });
  return ((input: string | URL | Request, init?: RequestInit & { idleMs?: number }) =>
    httpFetch(input, { ...init, agent })) as typeof fetch;
}

/** A deadline that progress pushes back: `moved(n)` after n bytes went out (0: an answer byte came in). */
function stallWatch(idleMs: number, fail: (e: Error) => void): { moved(n: number): void; stop(): void } {
  let due = Date.now() + idleMs;
  let timer: NodeJS.Timeout | undefined;
  const check = () => {
    const left = due - Date.now();
    if (left > 0) return void (timer = setTimeout(check, left));
    fail(Object.assign(new Error(`stalled: no progress for ${idleMs} ms`), { code: 'ETIMEDOUT' }));
  };
  timer = setTimeout(check, idleMs);
  return {
    moved: (n) => void (due = Math.max(due, Date.now() + idleMs) + n / FLOOR_BYTES_PER_MS),
    stop: () => clearTimeout(timer),
  };
}

function headersOf(h: HeadersInit | undefined): Record<string, string> {
  return h ? Object.fromEntries(new Headers(h).entries()) : {};
}
