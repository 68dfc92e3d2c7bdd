// S3 under throttling and resets: a proxy in front of the real RGW answers 503 SlowDown to
// some requests, drops others and answers copies with an empty 200; a whole job through it must
// still commit exactly.

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { posix } from 'node:path';
import { StoreError } from '../src/errors.js';
import { withFence, type StoreFence } from '../src/store/fence.js';
import { S3Store } from '../src/store/s3/s3-store.js';
import { s3Settings } from '../src/store/s3/settings.js';
import { cli } from '../testing/cli.js';
import { prepare, runJob } from '../testing/jobs.js';
import { startS3Proxy, type S3Proxy } from '../testing/s3-proxy.js';
import { storeFixtures, type StoreSandbox } from '../testing/stores.js';
import { data, readTree } from '../testing/tree.js';

const s3 = storeFixtures().find((f) => f.name === 's3');

describe(
  'S3 retries throttling (503 SlowDown), 500s and connection resets',
  { skip: !s3 && 'S3 is not among the test stores' },
  () => {
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
          res
            .writeHead(503, { 'content-type': 'application/xml' })
            .end(
              '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>',
            );
          return true;
        }
        if (n % 13 === 0) {
          faults.internal++;
          req.resume();
          res
            .writeHead(500, { 'content-type': 'application/xml' })
            .end(
              '<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>',
            );
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
      assert.deepEqual(data(await readTree(sb.store, target)), {
        'dt=1/a.csv': 'a',
        'dt=1/b.csv': 'b',
        'dt=2 x+y%25/c.csv': 'c',
      });
      assert.ok(
        faults.slowDown > 2 && faults.internal > 0 && faults.reset > 0 && faults.emptyCopy === 2,
        JSON.stringify(faults),
      );
    });

    const fenced = (e: unknown) => e instanceof StoreError && e.message === 'fenced';

    /** One store object, two steps at once (two jobs through the library): each answers to its own fence. */
    const eachToItsFence = async (store: S3Store, dir: string) => {
      const shut: StoreFence = {
        admit: () => {
          throw new StoreError('io', 'renew lease', [], 'fenced');
        },
      };
      const [stopped, going] = await Promise.allSettled([
        withFence(shut, () => store.writeFile(`${dir}/one`, '1')),
        withFence({ admit: () => undefined }, () => store.writeFile(`${dir}/two`, '2')),
      ]);
      assert.ok(
        stopped.status === 'rejected' && fenced(stopped.reason) && going.status === 'fulfilled',
        `${stopped.status} ${going.status}`,
      );
    };

    // Keeps protocol.md §5.6: a driver whose lease may have lapsed sends no request: no retry is sent
    // after the fence throws, and one still unanswered when it trips is cut off.
    test('the store fence is asked before every try of a change: no retry after it trips, in-flight ones cut', async () => {
      // Changes under fenced/ are answered 503 SlowDown, or never (under fenced/hang); the rest passes.
      let changes = 0;
      const held: ServerResponse[] = [];
      const fencedProxy = await startS3Proxy((req, res) => {
        if (!req.url?.includes('/fenced/') || req.method === 'GET' || req.method === 'HEAD') return false;
        changes++;
        req.resume();
        if (req.url.includes('/fenced/hang')) return (held.push(res), true);
        res
          .writeHead(503, { 'content-type': 'application/xml' })
          .end(
            '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>',
          );
        return true;
      });
      try {
        const store = new S3Store(
          await s3Settings({ endpoint: fencedProxy.url }, { ...process.env, ...sb.env } as Record<
            string,
            string | undefined
          >),
        );
        const dir = posix.join(sb.base, 'fence');
        await sb.store.writeFile(`${dir}/src`, 'x');
        let admitted = 0;
        const oneTry: StoreFence = {
          admit: () => {
            if (admitted++ > 0) throw new StoreError('io', 'renew lease', [], 'fenced');
            return undefined;
          },
        };
        // Through the SDK (PutObject) and through our own signed requests (CopyObject): one try each.
        for (const change of [
          () => store.writeFile(`${dir}/fenced/a`, 'x'),
          () => store.copy(`${dir}/src`, `${dir}/fenced/b`),
        ]) {
          admitted = 0;
          changes = 0;
          await assert.rejects(withFence(oneTry, change), fenced);
          assert.equal(changes, 1, 'no retry sent after the fence threw');
        }
        for (const [i, change] of [
          () => store.writeFile(`${dir}/fenced/hang1`, 'x'),
          () => store.copy(`${dir}/src`, `${dir}/fenced/hang2`),
        ].entries()) {
          const trip = new AbortController();
          const pending = withFence({ admit: () => trip.signal }, change);
          while (held.length === i) await sleep(5);
          trip.abort(new StoreError('io', 'renew lease', [], 'fenced'));
          await assert.rejects(pending, fenced);
        }
        await eachToItsFence(store, dir);
        await sb.store.delete(`${dir}/two`, false);
        assert.deepEqual(Object.keys(data(await readTree(sb.store, dir))), ['src'], 'nothing landed');
      } finally {
        await fencedProxy.close();
      }
    });

    // The store holds the requests; the process ends, and recover then finishes the job.
    test(
      'a commit-job whose lease renewals and copies go unanswered stops on its lease (exit 1)',
      { timeout: 120_000 },
      async () => {
        const target = posix.join(sb.base, 'held', 'sales');
        const job = await prepare(sb, { target, partitionBy: 'dt' }, [
          { task: '0', partition: ['dt=1'], files: { a: 'a', b: 'b' } },
        ]);
        // A renewal is a PUT of a lease file without If-None-Match (its creation has it); a copy names its source.
        let renewals = 0;
        const holding = await startS3Proxy((req) => {
          const renewal =
            req.method === 'PUT' && /\/_lease\.\d+\.yaml(\?|$)/.test(req.url ?? '') && !req.headers['if-none-match'];
          if (renewal) renewals++;
          if (!renewal && !req.headers['x-amz-copy-source']) return false;
          req.resume(); // never answered
          return true;
        });
        try {
          const dir = await mkdtemp(path.join(os.tmpdir(), 'held-'));
          const config = path.join(dir, 'config.yaml');
          await writeFile(config, 'leaseTtlSeconds: 3\n');
          const env = {
            ...sb.env,
            AWS_ENDPOINT_URL: holding.url,
            AWS_ENDPOINT_URL_S3: undefined,
            STAGECOMMIT_CONFIG: config,
          } as unknown as Record<string, string>;
          const held = await cli(['commit-job', '--job', job], { env });
          assert.equal(held.code, 1, held.stderr);
          assert.match(held.stderr, /renew lease .*this step stops changing the job/);
          assert.ok(renewals >= 1, 'a renewal was held');
          await rm(dir, { recursive: true, force: true });
        } finally {
          await holding.close();
        }
        const r = await cli(['recover', '--job', job], { env: sb.env });
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a': 'a', 'dt=1/b': 'b' });
        assert.equal(await sb.store.stat(sb.pathOf(job)), null, 'staging dir gone');
      },
    );
  },
);
