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
 * The subset of fetch the WebHDFS store uses: method, headers, a body (bytes, text or a stream), a
 * signal; redirects are never followed. `idleMs`: the request fails once no byte has moved either
 * way for that long (a data node that stops reading an upload, or stops sending a file).
 */
export function httpFetch(input: string | URL | Request, init: RequestInit & { idleMs?: number } = {}): Promise<Response> {
  const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<Response>((resolve, reject) => {
    const req = client.request(url, { method: init.method ?? 'GET', headers: headersOf(init.headers), signal: init.signal ?? undefined }, (res) => {
      const headers = new Headers();
      for (const [k, v] of Object.entries(res.headers)) for (const one of [v ?? []].flat()) headers.append(k, one);
      const status = res.statusCode ?? 502;
      const body = NULL_BODY.has(status) || init.method === 'HEAD' ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
      if (!body) res.resume();
      resolve(new Response(body, { status, statusText: res.statusMessage, headers }));
    });
    // As fetch does: a network failure is a TypeError whose cause says what happened.
    req.on('error', (e) => reject(init.signal?.aborted ? init.signal.reason : new TypeError('fetch failed', { cause: e })));
    const idle = init.idleMs;
    if (idle) req.setTimeout(idle, () => req.destroy(Object.assign(new Error(`no byte moved for ${idle} ms`), { code: 'ETIMEDOUT' })));
    const body = init.body;
    if (body === undefined || body === null) req.end();
    else if (typeof body === 'string' || body instanceof Uint8Array) req.end(body);
    else if (body instanceof ReadableStream) {
      const from = Readable.fromWeb(body as import('node:stream/web').ReadableStream);
      from.on('error', (e) => req.destroy(e));
      from.pipe(req);
    } else req.destroy(new TypeError('httpFetch: unsupported body'));
  });
}

function headersOf(h: HeadersInit | undefined): Record<string, string> {
  return h ? Object.fromEntries(new Headers(h).entries()) : {};
}
