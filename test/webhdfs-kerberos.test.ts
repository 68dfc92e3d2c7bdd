// Kerberos-secured WebHDFS against a real MIT KDC (scripts/kdc.sh, started by scripts/test.mjs):
// SPNEGO from the ticket cache after kinit or from a keytab named in the config, delegation
// tokens from a Hadoop token storage file (HADOOP_TOKEN_FILE_LOCATION, Writable and protobuf),
// and exit 2 naming the kinit to run when there is no ticket or it expired. The WebHDFS test
// server accepts a ticket only once GSSAPI verifies it with the HTTP/localhost keytab.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Spnego } from '../src/store/webhdfs/spnego.js';
import { parseTokenStorage, encodeToken } from '../src/store/webhdfs/tokens.js';
import { WebHdfsStore } from '../src/store/webhdfs/webhdfs-store.js';
import { cli } from '../testing/cli.js';
import { localFiles } from '../testing/jobs.js';
import { data, readTree } from '../testing/tree.js';
import { WebHdfsCluster } from '../testing/webhdfs-server.js';

const KDC = process.env.STAGECOMMIT_TEST_KDC_DIR;
const REALM = process.env.STAGECOMMIT_TEST_KDC_REALM ?? '';

test('a token storage file: Hadoop VInts of several bytes, both formats, the URL string', () => {
  const id = Buffer.alloc(300, 7);
  const pw = Buffer.from('secret');
  const text = (s: string) => Buffer.concat([Buffer.from([s.length]), Buffer.from(s)]);
  // VInt 300: a length byte of -114 (two bytes follow), then 0x01 0x2c.
  const token = Buffer.concat([
    Buffer.from([0x8e, 0x01, 0x2c]),
    id,
    Buffer.from([pw.length]),
    pw,
    text('HDFS_DELEGATION_TOKEN'),
    text('ha-hdfs:lake'),
  ]);
  const writable = Buffer.concat([Buffer.from('HDTS'), Buffer.from([0, 1]), text('alias'), token, Buffer.from([0])]);
  const [w] = parseTokenStorage(writable);
  assert.deepEqual(
    [w!.alias, w!.identifier.length, w!.password.toString(), w!.kind, w!.service],
    ['alias', 300, 'secret', 'HDFS_DELEGATION_TOKEN', 'ha-hdfs:lake'],
  );
  assert.equal(encodeToken(w!), token.toString('base64url'));
  const [p] = parseTokenStorage(
    protobufFile('alias', { id, pw, kind: 'HDFS_DELEGATION_TOKEN', service: 'ha-hdfs:lake' }),
  );
  assert.deepEqual(
    [p!.alias, p!.identifier.length, p!.kind, p!.service],
    ['alias', 300, 'HDFS_DELEGATION_TOKEN', 'ha-hdfs:lake'],
  );
  assert.throws(() => parseTokenStorage(Buffer.from('HDTX\u0000')), /HDTS/);
});

/** Protobuf base-128 varint. */
function varint(n: number): Buffer {
  const out: number[] = [];
  do {
    out.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    n >>>= 7;
  } while (n > 0);
  return Buffer.from(out);
}
const field = (n: number, b: Buffer) => Buffer.concat([varint(n * 8 + 2), varint(b.length), b]);

/** "HDTS", format 1, one length-delimited CredentialsProto with one token. */
function protobufFile(alias: string, t: { id: Buffer; pw: Buffer; kind: string; service: string }): Buffer {
  const token = Buffer.concat([
    field(1, t.id),
    field(2, t.pw),
    field(3, Buffer.from(t.kind)),
    field(4, Buffer.from(t.service)),
  ]);
  const creds = field(1, Buffer.concat([field(1, Buffer.from(alias)), field(2, token)]));
  return Buffer.concat([Buffer.from('HDTS'), Buffer.from([1]), varint(creds.length), creds]);
}

describe(
  'Kerberos-secured WebHDFS (a real MIT KDC)',
  { skip: !KDC && 'no KDC: scripts/test.mjs starts one (scripts/kdc.sh)' },
  () => {
    let work: string;
    let cluster: WebHdfsCluster;
    let config: string;
    let n = 0;
    before(async () => {
      work = await mkdtemp(path.join(os.tmpdir(), 'krb-'));
      cluster = await new WebHdfsCluster({ root: path.join(work, 'hdfs'), spnego: true }).start(2);
      config = path.join(work, 'config.yaml');
      await writeFile(
        config,
        `webhdfs:\n  kerberos: true\n  retryBaseMs: 20\n  nameservices:\n    lake: [${cluster.nameNodeUrls.join(', ')}]\n`,
      );
    });
    after(async () => {
      await cluster.stop();
      await rm(work, { recursive: true, force: true });
    });

    const store = () =>
      new WebHdfsStore({
        nameNodes: cluster.nameNodeUrls,
        uriPrefix: 'hdfs://lake',
        spnego: new Spnego({}),
        retries: 2,
        retryBaseMs: 20,
      });

    /** stage, stage FILE, commit-task, commit-job with `env`; the first failure's result, or the target. */
    async function job(env: Record<string, string | undefined>) {
      const target = `/wh/t${n++}`;
      const staged = await cli(['stage', '--target', `hdfs://lake${target}`, '--tasks', '1'], { env });
      if (staged.code !== 0) return { failed: staged, target };
      const handle = staged.stdout.trim();
      const [file] = await localFiles({ 'part-0.csv': 'a,1\n' });
      for (const args of [
        ['stage', '--job', handle, '--task', '0', file!],
        ['commit-task', '--job', handle, '--task', '0'],
        ['commit-job', '--job', handle],
      ]) {
        const r = await cli(args, { env });
        if (r.code !== 0) return { failed: r, target };
      }
      return { target };
    }

    async function published(target: string) {
      assert.deepEqual(data(await readTree(store(), target)), { 'part-0.csv': 'a,1\n' });
    }

    test('the ticket cache after kinit: every name node call carries a ticket GSSAPI verified', async () => {
      const cache = `FILE:${path.join(work, 'cc-kinit')}`;
      execFileSync('kinit', ['-k', '-t', path.join(KDC!, 'tester.keytab'), 'tester'], {
        env: { ...process.env, KRB5CCNAME: cache },
      });
      const from = cluster.log.length;
      const r = await job({ STAGECOMMIT_CONFIG: config, KRB5CCNAME: cache, HADOOP_USER_NAME: 'someone-else' });
      assert.equal(r.failed, undefined, r.failed?.stderr);
      const calls = cluster.log.slice(from);
      await published(r.target);
      assert.ok(calls.length > 5);
      assert.deepEqual([...new Set(calls.map((c) => c.principal))], [`tester@${REALM}`]);
    });

    test("a keytab named in the config; the user's own ticket cache is not touched", async () => {
      const cache = path.join(work, 'cc-untouched');
      const withKeytab = path.join(work, 'keytab.yaml');
      await writeFile(
        withKeytab,
        `webhdfs:\n  kerberos:\n    principal: tester@${REALM}\n    keytab: ${path.join(KDC!, 'tester.keytab')}\n  nameservices:\n    lake: [${cluster.nameNodeUrls.join(', ')}]\n`,
      );
      const r = await job({ STAGECOMMIT_CONFIG: withKeytab, KRB5CCNAME: `FILE:${cache}` });
      assert.equal(r.failed, undefined, r.failed?.stderr);
      await published(r.target);
      assert.equal(existsSync(cache), false);
    });

    test('no ticket, or an expired one: exit 2 naming the kinit to run, nothing made', async () => {
      const expired = `FILE:${path.join(work, 'cc-expired')}`;
      execFileSync('kinit', ['-l', '2s', '-k', '-t', path.join(KDC!, 'tester.keytab'), 'tester'], {
        env: { ...process.env, KRB5CCNAME: expired },
      });
      await new Promise((r) => setTimeout(r, 3000));
      for (const cache of [`FILE:${path.join(work, 'cc-none')}`, expired]) {
        const r = await job({ STAGECOMMIT_CONFIG: config, KRB5CCNAME: cache });
        assert.equal(r.failed?.code, 2, r.failed?.stderr);
        assert.match(r.failed!.stderr, /no valid Kerberos ticket for HTTP\/localhost \(.*\): run 'kinit USER@REALM'/);
        assert.equal(await store().stat(r.target), null);
      }
    });

    test('a name node that wants Kerberos, not configured: exit 2 saying so', async () => {
      const plain = path.join(work, 'plain.yaml');
      await writeFile(
        plain,
        `webhdfs:\n  user: tester\n  nameservices:\n    lake: [${cluster.nameNodeUrls.join(', ')}]\n`,
      );
      const r = await job({ STAGECOMMIT_CONFIG: plain });
      assert.equal(r.failed?.code, 2, r.failed?.stderr);
      assert.match(
        r.failed!.stderr,
        /requires Kerberos \(HTTP 401, Negotiate\): run kinit and set 'webhdfs.kerberos: true'/,
      );
    });

    for (const format of ['Writable', 'protobuf'] as const) {
      test(`a delegation token from HADOOP_TOKEN_FILE_LOCATION (${format}), with no ticket at all`, async () => {
        // The token as the name node hands it out (GETDELEGATIONTOKEN, asked with a ticket).
        const res = await fetch(`${cluster.nameNodeUrls[1]}/webhdfs/v1/?op=GETDELEGATIONTOKEN&renewer=tester`, {
          headers: { authorization: await new Spnego({}).authorization(cluster.nameNodeUrls[1]!) },
        });
        const url = ((await res.json()) as { Token: { urlString: string } }).Token.urlString;
        const bytes = Buffer.from(url, 'base64url');
        // Its Writable form: id, password, kind, service, each after a one-byte length here.
        const parts: Buffer[] = [];
        for (let at = 0; at < bytes.length;) {
          const len = bytes[at]!;
          parts.push(bytes.subarray(at + 1, at + 1 + len));
          at += 1 + len;
        }
        const [id, pw, kind, service] = parts as [Buffer, Buffer, Buffer, Buffer];
        const text = (s: string) => Buffer.concat([Buffer.from([s.length]), Buffer.from(s)]);
        const file = path.join(work, `tokens-${format}`);
        await writeFile(
          file,
          format === 'Writable'
            ? Buffer.concat([Buffer.from('HDTS'), Buffer.from([0, 1]), text('hdfs'), bytes, Buffer.from([0])])
            : protobufFile('hdfs', { id, pw, kind: kind.toString(), service: service.toString() }),
        );
        const from = cluster.log.length;
        const r = await job({
          STAGECOMMIT_CONFIG: config,
          KRB5CCNAME: `FILE:${path.join(work, 'cc-none')}`,
          HADOOP_TOKEN_FILE_LOCATION: file,
        });
        assert.equal(r.failed, undefined, r.failed?.stderr);
        assert.deepEqual([...new Set(cluster.log.slice(from).map((c) => c.delegation))], [url]);
        await published(r.target);
      });
    }
  },
);
