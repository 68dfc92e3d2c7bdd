// A proxy in front of the real S3 server (RGW) that answers some requests itself (faults, refusals)
// and passes the rest through unchanged: the store under test talks to the real server otherwise.

import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface S3Proxy {
  /** The endpoint to give the store or the CLI (AWS_ENDPOINT_URL). */
  readonly url: string;
  close(): Promise<void>;
}

/** `intercept` answers a request itself and returns true, or returns false to pass it through. */
export async function startS3Proxy(
  intercept: (req: IncomingMessage, res: ServerResponse) => boolean,
): Promise<S3Proxy> {
  const upstream = new URL(process.env.STAGECOMMIT_TEST_S3_ENDPOINT!);
  const server = createServer((req, res) => {
    if (intercept(req, res)) return;
    const up = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
