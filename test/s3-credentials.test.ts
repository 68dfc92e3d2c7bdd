// Credentials S3 refuses, and none at all, through the CLI against the real RGW: each step ends at
// with exit 1, one line naming what to change, and nothing changed.

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { StoreError } from '../src/errors.js';
import { S3Store } from '../src/store/s3/s3-store.js';
import { s3Settings } from '../src/store/s3/settings.js';
import { retryable, S3ResponseError } from '../src/store/s3/signed.js';
import { cli } from '../testing/cli.js';
import { localFiles } from '../testing/jobs.js';
import { startS3Proxy } from '../testing/s3-proxy.js';
import { storeFixtures, type StoreSandbox } from '../testing/stores.js';
import { data, readTree } from '../testing/tree.js';

const s3 = storeFixtures().find((f) => f.name === 's3');

test('a credential the chain cannot find, or S3 refuses, is not sent again', () => {
  const missing = Object.assign(new Error('Could not load credentials from any providers'), {
    name: 'CredentialsProviderError',
  });
  assert.equal(retryable(missing), false);
  for (const code of ['AccessDenied', 'InvalidAccessKeyId', 'SignatureDoesNotMatch', 'ExpiredToken'])
    assert.equal(retryable(new S3ResponseError(code, '', code === 'ExpiredToken' ? 400 : 403)), false, code);
  assert.equal(retryable(new S3ResponseError('SlowDown', '', 503)), true);
  // A 403 for a clock off by more than 15 minutes is not the credentials': sent again (the SDK corrects its offset).
  assert.equal(retryable(new S3ResponseError('RequestTimeTooSkewed', '', 403)), true);
  assert.equal(retryable(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })), true);
});

describe('S3 credentials that are refused or missing', { skip: !s3 && 'S3 is not among the test stores' }, () => {
  let sb: StoreSandbox;
  let home: string;
  let job: string;
  before(async () => {
    sb = await s3!.sandbox();
    home = await mkdtemp(path.join(os.tmpdir(), 'no-aws-'));
    const staged = await cli(['stage', '--target', sb.uri(`${sb.base}/sales`), '--tasks', '1'], { env: sb.env });
    assert.equal(staged.code, 0, staged.stderr);
    job = staged.stdout.trim();
    const [file] = await localFiles({ 'part-0.csv': 'a,1\n' });
    const ok = await cli(['stage', '--job', job, '--task', '0', file!], { env: sb.env });
    assert.equal(ok.code, 0, ok.stderr);
  });
  after(async () => {
    await sb.close();
    await rm(home, { recursive: true, force: true });
  });

  // No profile files, no instance metadata: the SDK's chain has nothing to find.
  const bare = () => ({
    HOME: home,
    AWS_ACCESS_KEY_ID: undefined,
    AWS_SECRET_ACCESS_KEY: undefined,
    AWS_SESSION_TOKEN: undefined,
    AWS_PROFILE: undefined,
    AWS_SHARED_CREDENTIALS_FILE: path.join(home, 'credentials'),
    AWS_CONFIG_FILE: path.join(home, 'config'),
    AWS_EC2_METADATA_DISABLED: 'true',
  });
  const cases: [string, () => Record<string, string | undefined>, RegExp][] = [
    [
      'a wrong secret key',
      () => ({ AWS_SECRET_ACCESS_KEY: 'not-the-secret' }),
      /access denied \(HTTP 403( SignatureDoesNotMatch)?\): .*check AWS_/,
    ],
    [
      'an access key the server does not know',
      () => ({ AWS_ACCESS_KEY_ID: 'nobody-here' }),
      /access denied \(HTTP 403( InvalidAccessKeyId)?\): .*check AWS_ACCESS_KEY_ID/,
    ],
    [
      'no credentials at all',
      bare,
      /no AWS credentials could be loaded \(Could not load credentials from any providers\): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE/,
    ],
  ];
  for (const [what, env, message] of cases) {
    // One line, and nothing changes.
    test(`${what}: every step exits 1 at once, saying what to check`, async () => {
      const before = await readTree(sb.store, sb.base);
      const runs = [
        ['stage', '--target', sb.uri(`${sb.base}/other`)],
        ['commit-task', '--job', job, '--task', '0'],
        ['commit-job', '--job', job],
        ['abort', '--job', job],
      ];
      for (const args of runs) {
        const r = await cli(args, { env: { ...sb.env, ...env() } });
        assert.equal(r.code, 1, `${args[0]}: ${r.stderr}`);
        const lines = r.stderr.trim().split('\n');
        assert.equal(lines.length, 1, `${args[0]}: one line, not ${r.stderr}`);
        assert.match(lines[0]!, message, args[0]);
        assert.equal(r.stdout, '');
      }
      assert.deepEqual(await readTree(sb.store, sb.base), before);
      const status = await cli(['status', '--job', job, '--json'], { env: sb.env });
      assert.equal(status.code, 0, status.stderr);
      assert.equal(JSON.parse(status.stdout).state, 'staged');
    });
  }

  test('a profile and key variables both set: one warning line, none with --quiet; the step works', async () => {
    const key = (name: string) => sb.env[name] ?? process.env[name];
    await writeFile(
      path.join(home, 'config'),
      `[profile etl]\naws_access_key_id = ${key('AWS_ACCESS_KEY_ID')}\naws_secret_access_key = ${key('AWS_SECRET_ACCESS_KEY')}\n`,
    );
    const env = {
      ...sb.env,
      ...bare(),
      AWS_PROFILE: 'etl',
      AWS_ACCESS_KEY_ID: 'also-set',
      AWS_SECRET_ACCESS_KEY: 'also-set',
    };
    const loud = await cli(['stage', '--target', sb.uri(`${sb.base}/both`), '--tasks', '1'], { env });
    assert.equal(loud.code, 0, loud.stderr);
    assert.deepEqual(
      loud.stderr
        .trim()
        .split('\n')
        .filter((l) => /warning/.test(l)),
      [
        'warning: AWS_PROFILE and AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are both set: the profile is used; unset one of them',
      ],
    );
    assert.doesNotMatch(loud.stderr, /Multiple credential sources/);
    const quiet = await cli(['abort', '--quiet', '--job', loud.stdout.trim()], { env });
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.equal(quiet.stderr, '');
  });

  test('a bulk delete the server refuses (403) names a key it was deleting, not only the bucket', async () => {
    // Deletes are denied (a bucket policy without s3:DeleteObject); everything else passes through.
    const proxy = await startS3Proxy((req, res) => {
      if (req.method !== 'POST' || !/[?&]delete(=|&|$)/.test(req.url ?? '')) return false;
      req.resume();
      res
        .writeHead(403, { 'content-type': 'application/xml' })
        .end(
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>',
        );
      return true;
    });
    try {
      const env = { ...process.env, ...sb.env } as Record<string, string | undefined>;
      const store = new S3Store(await s3Settings({ endpoint: proxy.url, maxAttempts: 1 }, env));
      const keys = ['a/one.csv', 'a/two.csv'].map((k) => `${sb.base}/denied/${k}`);
      for (const k of keys) await sb.store.writeFile(k, 'x');
      await assert.rejects(
        store.deleteMany!(keys),
        (e: unknown) =>
          e instanceof StoreError && e.message.includes(sb.store.toUri(keys[0]!)) && /access denied/.test(e.message),
      );
      assert.deepEqual(
        Object.keys(data(await readTree(sb.store, `${sb.base}/denied`))).sort(),
        ['a/one.csv', 'a/two.csv'],
        'nothing deleted',
      );
    } finally {
      await proxy.close();
    }
  });
});
