// WebHDFS through the gateways clusters expose it by: an Apache Knox gateway (its base path
// /gateway/<topology>/webhdfs/v1, HTTP basic auth, TLS with the gateway's own certificate) and
// HttpFS (the WebHDFS API on its own server, named as the name node: port 14000 in production).
// Both against the WebHDFS test server in gateway mode, through the CLI.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cli } from '../testing/cli.js';
import { localFiles } from '../testing/jobs.js';
import { WebHdfsCluster } from '../testing/webhdfs-server.js';

/** stage, stage FILE, commit-task, commit-job of `uri`; the first failure, else null. */
async function job(uri: string, env: Record<string, string | undefined>) {
  const staged = await cli(['stage', '--target', uri, '--tasks', '1'], { env });
  if (staged.code !== 0) return staged;
  const handle = staged.stdout.trim();
  const [file] = await localFiles({ 'part-0.csv': 'a,1\n' });
  for (const args of [
    ['stage', '--job', handle, '--task', '0', file!],
    ['commit-task', '--job', handle, '--task', '0'],
    ['commit-job', '--job', handle],
  ]) {
    const r = await cli(args, { env });
    if (r.code !== 0) return r;
  }
  return null;
}

describe('WebHDFS gateways: Knox and HttpFS', () => {
  let work: string;
  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'gateways-'));
  });
  after(() => rm(work, { recursive: true, force: true }));

  describe('a Knox gateway: base path, basic auth over TLS with a self-signed certificate', () => {
    let knox: WebHdfsCluster;
    let config: (extra?: string) => Promise<string>;
    before(async () => {
      const key = path.join(work, 'key.pem');
      const cert = path.join(work, 'cert.pem');
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-days',
          '1',
          '-keyout',
          key,
          '-out',
          cert,
          '-subj',
          '/CN=127.0.0.1',
          '-addext',
          'subjectAltName=IP:127.0.0.1',
        ],
        { stdio: 'ignore' },
      );
      knox = await new WebHdfsCluster({
        root: path.join(work, 'knox'),
        tls: { key: await readFile(key, 'utf8'), cert: await readFile(cert, 'utf8') },
        basePath: '/gateway/default/webhdfs/v1',
        basicAuth: { user: 'etl', password: 'lake-pw' },
        gateway: true,
      }).start(1);
      await writeFile(path.join(work, 'password'), 'lake-pw\n');
      let n = 0;
      config = async (extra = '') => {
        const file = path.join(work, `knox-${n++}.yaml`);
        await writeFile(
          file,
          `webhdfs:\n  caFile: ${cert}\n  basePath: /gateway/default/webhdfs/v1\n  retryBaseMs: 20\n` +
            `  basicAuth:\n    user: etl\n    passwordFile: ${extra || path.join(work, 'password')}\n` +
            `  nameservices:\n    knox: [${knox.nameNodeUrls[0]}]\n`,
        );
        return file;
      };
    });
    after(() => knox.stop());

    test('a job through the gateway publishes its file', async () => {
      const failed = await job('swebhdfs://knox/wh/sales', { STAGECOMMIT_CONFIG: await config() });
      assert.equal(failed, null, failed?.stderr);
      assert.equal(await readFile(path.join(work, 'knox', 'wh', 'sales', 'part-0.csv'), 'utf8'), 'a,1\n');
    });

    test('a wrong password: exit 2 saying the gateway refused it, nothing made', async () => {
      await writeFile(path.join(work, 'wrong'), 'not-it');
      const r = await job('swebhdfs://knox/wh/denied', { STAGECOMMIT_CONFIG: await config(path.join(work, 'wrong')) });
      assert.equal(r?.code, 2, r?.stderr);
      assert.match(r!.stderr, /refused the user and password of webhdfs\.basicAuth \(HTTP 401\)/);
      await assert.rejects(readFile(path.join(work, 'knox', 'wh', 'denied')));
    });

    test('basic auth to a plain http:// name node is refused before anything is sent', async () => {
      const file = path.join(work, 'clear.yaml');
      await writeFile(
        file,
        `webhdfs:\n  basicAuth:\n    user: etl\n    passwordFile: ${path.join(work, 'password')}\n  nameservices:\n    clear: [http://127.0.0.1:9]\n`,
      );
      const r = await cli(['stage', '--target', 'hdfs://clear/wh/t', '--tasks', '1'], {
        env: { STAGECOMMIT_CONFIG: file },
      });
      assert.equal(r.code, 2, r.stderr);
      assert.match(
        r.stderr,
        /would send the password in clear to http:\/\/127\.0\.0\.1:9: use swebhdfs:\/\/ or https:\/\//,
      );
    });
  });

  test('HttpFS named as the name node: CREATE and OPEN answered by the gateway itself, no rename2', async () => {
    const httpfs = await new WebHdfsCluster({ root: path.join(work, 'httpfs'), gateway: true, noRename2: true }).start(
      1,
    );
    try {
      const hostPort = new URL(httpfs.nameNodeUrls[0]!).host;
      const failed = await job(`webhdfs://${hostPort}/wh/sales`, {
        HADOOP_USER_NAME: 'etl',
        STAGECOMMIT_CONFIG: undefined,
      });
      assert.equal(failed, null, failed?.stderr);
      assert.equal(await readFile(path.join(work, 'httpfs', 'wh', 'sales', 'part-0.csv'), 'utf8'), 'a,1\n');
      assert.ok(
        httpfs.log.some((c) => c.op === 'OPEN'),
        'nothing was read back through the gateway',
      );
    } finally {
      await httpfs.stop();
    }
  });
});
