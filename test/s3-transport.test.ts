// The signed requests' own HTTP exchange (src/store/s3/transport.ts) against servers that
// misbehave below S3's level: one that accepts and never answers, one that breaks off in the
// middle of an answer, one that answers 200 with an error inside. Every misbehaviour ends in a
// retry and then an answer or an error, never a hang. RGW covers the well-behaved path.

import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { S3Client } from '@aws-sdk/client-s3';
import { S3ResponseError, SignedRequests } from '../src/store/s3/signed.js';

type Handler = (n: number, req: IncomingMessage, res: ServerResponse) => void;

async function serve(handler: Handler): Promise<{ server: Server; endpoint: string; seen: () => number }> {
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    handler(++n, req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen: () => n };
}

function requests(endpoint: string, maxAttempts = 3, requestTimeout = 300): SignedRequests {
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'AK', secretAccessKey: 'SK' },
  });
  return new SignedRequests(client, maxAttempts, { connectionTimeout: 1000, requestTimeout }, () => {});
}

describe('signed requests over a misbehaving connection', () => {
  const servers: Server[] = [];
  after(() => {
    for (const s of servers) (s.closeAllConnections(), s.close());
  });

  test('a server that accepts and never answers: each attempt times out, then it fails naming the wait', async () => {
    const s = await serve(() => {});
    servers.push(s.server);
    const started = Date.now();
    await assert.rejects(
      requests(s.endpoint, 2, 200).send({ method: 'GET', bucket: 'b', key: 'k', expect: 'Whole' }),
      /no answer from 127\.0\.0\.1 for 200 ms/,
    );
    assert.equal(s.seen(), 2);
    assert.ok(Date.now() - started < 5000);
  });

  test('an answer broken off in the middle is retried, and the next whole answer is returned', async () => {
    const s = await serve((n, _req, res) => {
      if (n === 1) {
        res.writeHead(200, { 'content-length': '100' });
        res.write('<Partial>');
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/xml' }).end('<Whole>ok</Whole>');
    });
    servers.push(s.server);
    const answer = await requests(s.endpoint).send({ method: 'GET', bucket: 'b', key: 'k', expect: 'Whole' });
    assert.deepEqual(answer, { status: 200, body: '<Whole>ok</Whole>' });
    assert.equal(s.seen(), 2);
  });

  test('a 200 carrying an <Error> is retried as a server failure; its code shows when retries run out', async () => {
    const s = await serve((_n, _req, res) => {
      res
        .writeHead(200, { 'content-type': 'application/xml' })
        .end(
          '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code><Message>copy failed &amp; gave up</Message></Error>',
        );
    });
    servers.push(s.server);
    const failed = await requests(s.endpoint, 2)
      .send({
        method: 'PUT',
        bucket: 'b',
        key: 'k',
        headers: { 'x-amz-copy-source': '/b/src' },
        expect: 'CopyObjectResult',
      })
      .catch((e: unknown) => e);
    assert.ok(failed instanceof S3ResponseError);
    assert.equal(failed.name, 'InternalError');
    assert.equal(failed.message, 'copy failed & gave up');
    assert.equal(s.seen(), 2);
  });

  // Empty, cut short, or a proxy page.
  test('a 200 that is not a whole result is retried, never taken for a done copy', async () => {
    const answers = [
      '',
      '<?xml version="1.0"?>\n<CopyObjectResult><ETag>&quot;e&quot;</ETag>',
      '<html>gateway</html>',
      '<CopyObjectResult><ETag>&quot;e&quot;</ETag></CopyObjectResult>',
    ];
    const s = await serve((n, _req, res) => {
      // The first answer closes the connection after its headers, with no length: an early 200.
      if (n === 1) return void res.writeHead(200, { connection: 'close' }).end();
      res.writeHead(200, { 'content-type': 'application/xml' }).end(answers[n - 1]);
    });
    servers.push(s.server);
    const copy = {
      method: 'PUT',
      bucket: 'b',
      key: 'k',
      headers: { 'x-amz-copy-source': '/b/src' },
      expect: 'CopyObjectResult',
    } as const;
    const answer = await requests(s.endpoint, 4).send(copy);
    assert.equal(answer?.body, answers[3]);
    assert.equal(s.seen(), 4);
    const failed = await requests(s.endpoint, 1)
      .send(copy)
      .catch((e: unknown) => e);
    assert.ok(failed instanceof S3ResponseError && failed.name === 'IncompleteAnswer', String(failed));
  });

  test('an endpoint given as an IPv6 address is reached (the brackets stay in the Host header only)', async (t) => {
    let host: string | undefined;
    const server = createServer((req, res) => {
      host = req.headers.host;
      req.resume();
      res.writeHead(200).end('<R></R>');
    });
    const listening = await new Promise<boolean>((r) =>
      server.once('error', () => r(false)).listen(0, '::1', () => r(true)),
    );
    if (!listening) return t.skip('this machine has no IPv6 loopback');
    servers.push(server);
    const port = (server.address() as AddressInfo).port;
    await requests(`http://[::1]:${port}`).send({ method: 'GET', bucket: 'b', key: 'k', expect: 'R' });
    assert.equal(host, `[::1]:${port}`);
  });

  test('the request arrives signed, its query encoded, its body whole', async () => {
    let got: { url?: string; auth?: string; date?: string; body: string } = { body: '' };
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        got = {
          url: req.url,
          auth: req.headers.authorization,
          date: req.headers['x-amz-date'] as string,
          body: Buffer.concat(chunks).toString(),
        };
        res.writeHead(200).end('<R></R>');
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await requests(endpoint).send({
      method: 'POST',
      bucket: 'b',
      key: 'dt=1/a b+ü',
      query: { uploadId: 'x+y/z' },
      body: '<Complete>ü</Complete>',
      expect: 'R',
    });
    assert.equal(got.url, '/b/dt%3D1/a%20b%2B%C3%BC?uploadId=x%2By%2Fz');
    assert.match(
      got.auth ?? '',
      /^AWS4-HMAC-SHA256 Credential=AK\/\d{8}\/us-east-1\/s3\/aws4_request, SignedHeaders=content-length;host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/,
    );
    assert.match(got.date ?? '', /^\d{8}T\d{6}Z$/);
    assert.equal(got.body, '<Complete>ü</Complete>');
  });
});
