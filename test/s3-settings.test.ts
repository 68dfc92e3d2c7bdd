// S3 region, endpoint and credentials as the AWS CLI and SDKs resolve them (env, shared config
// and credentials files, a profile's services section, our config file), through the CLI against
// the real RGW behind a proxy that records every request: each goes to the one resolved endpoint,
// signed for the one resolved region.

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cli, type CliOptions } from '../testing/cli.js';
import { runJob } from '../testing/jobs.js';
import { startS3Proxy, type S3Proxy } from '../testing/s3-proxy.js';
import { storeFixtures, type StoreSandbox } from '../testing/stores.js';
import { data, readTree } from '../testing/tree.js';

const s3 = storeFixtures().find((f) => f.name === 's3');

interface Seen {
  readonly host: string;
  readonly region: string;
}

/** The region of a request's SigV4 credential scope (Credential=KEY/DAY/REGION/s3/aws4_request). */
function signedRegion(req: IncomingMessage): string {
  return /Credential=[^/]+\/\d{8}\/([^/]+)\//.exec(req.headers.authorization ?? '')?.[1] ?? '(unsigned)';
}

describe('S3 settings resolved once for every request', { skip: !s3 && 'S3 is not among the test stores' }, () => {
  let sb: StoreSandbox;
  let home: string;
  let proxy: S3Proxy;
  let seen: Seen[] = [];
  /** Requests not signed for this region are answered 301 with it, as S3 does for a bucket elsewhere. */
  let bucketRegion: string | undefined;
  const keys = { id: process.env.AWS_ACCESS_KEY_ID!, secret: process.env.AWS_SECRET_ACCESS_KEY! };

  before(async () => {
    sb = await s3!.sandbox();
    home = await mkdtemp(path.join(os.tmpdir(), 'aws-home-'));
    proxy = await startS3Proxy((req, res) => {
      const region = signedRegion(req);
      seen.push({ host: req.headers.host ?? '', region });
      if (!bucketRegion || region === bucketRegion) return false;
      res.writeHead(301, { 'x-amz-bucket-region': bucketRegion, 'content-type': 'application/xml' });
      res.end(
        req.method === 'HEAD'
          ? undefined
          : `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PermanentRedirect</Code><Message>The bucket is in ${bucketRegion}</Message></Error>`,
      );
      return true;
    });
  });
  after(async () => {
    await proxy.close();
    await sb.close();
    await rm(home, { recursive: true, force: true });
  });

  /** No endpoint, region or profile from the test run's own environment: only what a case gives. */
  const bare = (): Record<string, string | undefined> => ({
    HOME: home,
    AWS_ENDPOINT_URL: undefined,
    AWS_ENDPOINT_URL_S3: undefined,
    AWS_REGION: undefined,
    AWS_DEFAULT_REGION: undefined,
    AWS_PROFILE: undefined,
    AWS_CONFIG_FILE: path.join(home, 'config'),
    AWS_SHARED_CREDENTIALS_FILE: path.join(home, 'credentials'),
    AWS_EC2_METADATA_DISABLED: 'true',
  });
  const host = () => new URL(proxy.url).host;

  /** A whole job (a copied file, a pending upload, listings, claims) with `env`; the requests it made. */
  async function job(name: string, env: Record<string, string | undefined>): Promise<Seen[]> {
    seen = [];
    const run = (args: readonly string[], opts: CliOptions = {}) => cli(args, { env: { ...opts.env, ...env } });
    await runJob(
      sb,
      { target: `${sb.base}/${name}`, tasks: 1 },
      [{ task: '0', files: { 'a.csv': 'a\n', 'big.csv': 'b,1\nb,2\n' } }],
      run,
    );
    assert.deepEqual(data(await readTree(sb.store, `${sb.base}/${name}`)), {
      'a.csv': 'a\n',
      'big.csv': 'b,1\nb,2\n',
    });
    return seen;
  }

  function allAt(requests: Seen[], region: string): void {
    assert.ok(requests.length > 10, `only ${requests.length} requests reached the endpoint`);
    const other = requests.filter((r) => r.host !== host() || r.region !== region);
    assert.deepEqual(other, [], `requests not to ${host()} signed for ${region}`);
  }

  test('a profile with endpoint_url and region: every request goes there, signed for it', async () => {
    await writeFile(
      path.join(home, 'config'),
      `[profile lake]\nregion = eu-west-1\nendpoint_url = ${proxy.url}\n[default]\nregion = ap-south-1\n`,
    );
    await writeFile(
      path.join(home, 'credentials'),
      `[lake]\naws_access_key_id = ${keys.id}\naws_secret_access_key = ${keys.secret}\n`,
    );
    allAt(
      await job('profile', {
        ...bare(),
        AWS_PROFILE: 'lake',
        AWS_ACCESS_KEY_ID: undefined,
        AWS_SECRET_ACCESS_KEY: undefined,
      }),
      'eu-west-1',
    );
  });

  test("a profile's services section gives the endpoint; AWS_REGION beats the profile's region", async () => {
    await writeFile(
      path.join(home, 'config'),
      `[default]\nregion = ap-south-1\nservices = lake-s3\nendpoint_url = http://127.0.0.1:9\n` +
        `[services lake-s3]\ns3 =\n  endpoint_url = ${proxy.url}\n`,
    );
    allAt(await job('services', { ...bare(), AWS_REGION: 'eu-north-1' }), 'eu-north-1');
  });

  test('AWS_ENDPOINT_URL_S3 beats AWS_ENDPOINT_URL and the profile; AWS_DEFAULT_REGION is read', async () => {
    await writeFile(path.join(home, 'config'), `[default]\nendpoint_url = http://127.0.0.1:9\nregion = sa-east-1\n`);
    allAt(
      await job('env', {
        ...bare(),
        AWS_ENDPOINT_URL_S3: proxy.url,
        AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
        AWS_DEFAULT_REGION: 'ca-central-1',
      }),
      'ca-central-1',
    );
  });

  test("the config file's s3.endpoint and s3.region beat the environment and the profile", async () => {
    await writeFile(path.join(home, 'config'), `[default]\nendpoint_url = http://127.0.0.1:9\nregion = sa-east-1\n`);
    const config = path.join(home, 'stagecommit.yaml');
    await writeFile(config, `s3:\n  endpoint: ${proxy.url}\n  region: eu-south-2\n  pendingUploadMinBytes: 4\n`);
    allAt(
      await job('config', {
        ...bare(),
        AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
        AWS_REGION: 'us-west-2',
        STAGECOMMIT_CONFIG: config,
      }),
      'eu-south-2',
    );
  });

  test("a bucket in another region is followed (301 with x-amz-bucket-region), as the SDK's redirects", async () => {
    await writeFile(path.join(home, 'config'), '');
    bucketRegion = 'eu-central-1';
    try {
      const requests = await job('redirect', { ...bare(), AWS_ENDPOINT_URL: proxy.url, AWS_REGION: 'us-east-1' });
      const misdirected = requests.filter((r) => r.region !== 'eu-central-1');
      assert.ok(misdirected.length > 0, 'no request was redirected');
      // The signed path keeps the bucket's region once told; each of the SDK's requests is told anew.
      assert.ok(misdirected.length < requests.length / 2, `${misdirected.length} of ${requests.length} redirected`);
    } finally {
      bucketRegion = undefined;
    }
  });

  test('credentials from a profile’s credential_process, none in the environment', async () => {
    const helper = path.join(home, 'creds.mjs');
    await writeFile(
      helper,
      `console.log(JSON.stringify({ Version: 1, AccessKeyId: ${JSON.stringify(keys.id)}, SecretAccessKey: ${JSON.stringify(keys.secret)} }));\n`,
    );
    await writeFile(
      path.join(home, 'config'),
      `[profile proc]\nregion = eu-west-3\nendpoint_url = ${proxy.url}\ncredential_process = ${process.execPath} ${helper}\n`,
    );
    await writeFile(path.join(home, 'credentials'), '');
    allAt(
      await job('process', {
        ...bare(),
        AWS_PROFILE: 'proc',
        AWS_ACCESS_KEY_ID: undefined,
        AWS_SECRET_ACCESS_KEY: undefined,
      }),
      'eu-west-3',
    );
  });

  describe('a role assumed through STS (a local stand-in for STS)', () => {
    let sts: Server;
    let assumed = 0;
    before(async () => {
      // AssumeRole answers the RGW user's keys: what a role's temporary credentials would be.
      sts = createServer((req, res) => {
        let body = '';
        req.on('data', (d: Buffer) => (body += d.toString()));
        req.on('end', () => {
          if (!/Action=AssumeRole/.test(body)) {
            res.writeHead(400).end();
            return;
          }
          assumed++;
          res.writeHead(200, { 'content-type': 'text/xml' });
          res.end(
            `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>` +
              `<Credentials><AccessKeyId>${keys.id}</AccessKeyId><SecretAccessKey>${keys.secret}</SecretAccessKey>` +
              `<Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>` +
              `<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/lake/s</Arn><AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser>` +
              `</AssumeRoleResult></AssumeRoleResponse>`,
          );
        });
      });
      await new Promise<void>((r) => sts.listen(0, '127.0.0.1', r));
    });
    after(() => new Promise<void>((r) => sts.close(() => r())));

    test('a profile with role_arn and source_profile: the role’s credentials sign every request', async () => {
      const stsUrl = `http://127.0.0.1:${(sts.address() as AddressInfo).port}`;
      await writeFile(
        path.join(home, 'config'),
        `[profile role]\nrole_arn = arn:aws:iam::123456789012:role/lake\nsource_profile = base\nregion = eu-west-1\n` +
          `endpoint_url = ${proxy.url}\n[profile base]\nregion = eu-west-1\n`,
      );
      await writeFile(
        path.join(home, 'credentials'),
        `[base]\naws_access_key_id = base-key\naws_secret_access_key = base-secret\n`,
      );
      allAt(
        await job('role', {
          ...bare(),
          AWS_PROFILE: 'role',
          AWS_ENDPOINT_URL_STS: stsUrl,
          AWS_ACCESS_KEY_ID: undefined,
          AWS_SECRET_ACCESS_KEY: undefined,
        }),
        'eu-west-1',
      );
      assert.ok(assumed > 0, 'the role was never assumed');
    });
  });

  test('a profile naming a services section that is not there: exit 2 naming it', async () => {
    await writeFile(path.join(home, 'config'), `[default]\nservices = gone\n`);
    const r = await cli(['stage', '--target', sb.uri(`${sb.base}/nosvc`), '--tasks', '1'], {
      env: { ...sb.env, ...bare() },
    });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /services section 'gone'.*add \[services gone\]/);
  });

  test('AWS_PROFILE naming a profile in neither file: exit 2 naming it, nothing made', async () => {
    await writeFile(path.join(home, 'config'), `[profile lake]\nregion = us-east-1\n`);
    const r = await cli(['stage', '--target', sb.uri(`${sb.base}/noprofile`), '--tasks', '1'], {
      env: { ...sb.env, ...bare(), AWS_PROFILE: 'laek' },
    });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /AWS profile 'laek' \(AWS_PROFILE\) is in neither .*config nor .*credentials/);
    assert.deepEqual(await readTree(sb.store, `${sb.base}/noprofile`), {});
  });
});
