// S3 under throttling and resets: a proxy in front of the real RGW answers 503 SlowDown to
// some requests, drops others and answers copies with an empty 200; a whole job through it must
// still commit exactly.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { posix } from 'node:path';
import { runJob } from './helpers/jobs.js';
import { startS3Proxy, type S3Proxy } from './helpers/s3-proxy.js';
import { storeFixtures, type StoreSandbox } from './helpers/stores.js';
import { data, readTree } from './helpers/tree.js';

const s3 = storeFixtures().find((f) => f.name === 's3');

describe('S3 retries throttling (503 SlowDown), 500s and connection resets', { skip: !s3 && 'S3 is not among the test stores' }, () => {
  let sb: StoreSandbox;
  let proxy: S3Proxy;
  let seen = 0;
  const faults = { slowDown: 0, internal: 0, reset: 0, emptyCopy: 0 };
  before(async () => {
    sb = await s3!.sandbox();
    proxy = await startS3Proxy((req, res) => {
      const n = ++seen;
      // The first two copies are answered 200 with nothing after the headers, as a connection that
      // closes once S3 has sent a long copy's early 200: not done, so sent again.
      if (req.headers['x-amz-copy-source'] && faults.emptyCopy < 2) {
        faults.emptyCopy++;
        req.resume();
        res.writeHead(200, { connection: 'close' }).end();
        return true;
      }
      if (n % 6 === 0) {
        faults.slowDown++;
        req.resume();
        res.writeHead(503, { 'content-type': 'application/xml' }).end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>');
        return true;
      }
      if (n % 13 === 0) {
        faults.internal++;
        req.resume();
        res.writeHead(500, { 'content-type': 'application/xml' }).end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>');
        return true;
      }
      if (n % 17 === 0) {
        faults.reset++;
        req.socket.destroy();
        return true;
      }
      return false;
    });
  });
  after(async () => {
    await proxy?.close();
    await sb?.close();
  });

  test('a partitioned overwrite through the faulty proxy lands exactly', async () => {
    const env = { ...sb.env, AWS_ENDPOINT_URL: proxy.url, AWS_ENDPOINT_URL_S3: undefined };
    const viaProxy = { ...sb, env: env as unknown as Record<string, string> };
    const target = posix.join(sb.base, 'retry', 'sales');
    await runJob(viaProxy, { target, partitionBy: 'dt' }, [
      { task: '0', partition: ['dt=1'], files: { 'a.csv': 'a', 'b.csv': 'b' } },
      { task: '1', partition: ['dt=2 x+y%'], files: { 'c.csv': 'c' } },
    ]);
    assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a.csv': 'a', 'dt=1/b.csv': 'b', 'dt=2 x+y%25/c.csv': 'c' });
    assert.ok(faults.slowDown > 2 && faults.internal > 0 && faults.reset > 0 && faults.emptyCopy === 2, JSON.stringify(faults));
  });
});
