// URIs a cluster user writes, through the CLI: s3a:// and s3n:// on S3; hdfs:///…,
// hdfs://NAMESERVICE/… and webhdfs://… resolved through HADOOP_CONF_DIR (an HA pair whose first
// name node is standby or down); the name node's RPC port answered with a one-line hint.

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseUri } from '../src/store/resolve.js';
import { UsageError } from '../src/errors.js';
import { WebHdfsStore } from '../src/store/webhdfs/webhdfs-store.js';
import { cli } from '../testing/cli.js';
import { localFiles, type Runner } from '../testing/jobs.js';
import { inProcess } from '../testing/main.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree } from '../testing/tree.js';
import { WebHdfsCluster } from '../testing/webhdfs-server.js';

/**
 * stage → stage a file → commit-task → commit-job, all through `target`; returns the handle. Each
 * step a process with `cli`, else main() in this process (the URI and the environment are what
 * these tests are about, and main() reads them as the process does).
 */
async function oneFileJob(
  target: string,
  env: Record<string, string | undefined>,
  run: Runner = inProcess,
): Promise<string> {
  const must = async (args: string[]) => {
    const r = await run(args, { env });
    assert.equal(r.code, 0, `stagecommit ${args.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  };
  const job = await must(['stage', '--target', target, '--tasks', '1']);
  const [file] = await localFiles({ 'part-0.csv': 'x,1\n' });
  await must(['stage', '--job', job, '--task', '0', file!]);
  await must(['commit-task', '--job', job, '--task', '0']);
  await must(['commit-job', '--job', job]);
  return job;
}

test('s3a:// and s3n:// parse as S3; hdfs:/// as the default file system', () => {
  assert.deepEqual(parseUri('s3a://bucket/wh/sales', '/'), { scheme: 's3', authority: 'bucket', path: '/wh/sales' });
  assert.deepEqual(parseUri('S3N://bucket/x/', '/'), { scheme: 's3', authority: 'bucket', path: '/x' });
  assert.deepEqual(parseUri('hdfs:///wh/sales', '/'), { scheme: 'hdfs', authority: '', path: '/wh/sales' });
  assert.throws(() => parseUri('s3a:///x', '/'), {
    detail: { reason: 'uri-no-bucket', uri: 's3a:///x', scheme: 's3a' },
  });
});

test('a location holding a line break, written or percent-escaped, is a usage error, never a local path', () => {
  for (const raw of ['s3://b/raw\u2028y', 's3://b/ls%E2%80%A8x', 'hdfs://nn:8020/a%0Ab', '/tmp/a\nb', 's3://b/x\ry']) {
    assert.throws(
      () => parseUri(raw, '/'),
      (e: unknown) => e instanceof UsageError && e.detail.reason === 'uri-line-break' && e.detail.uri === raw,
      raw,
    );
  }
});

// Not a bare 'URI malformed'.
test("a '%' that starts no percent-escape is a usage error naming the URI (exit 2)", () => {
  assert.deepEqual(parseUri('s3://b/t%2541', '/'), { scheme: 's3', authority: 'b', path: '/t%41' });
  for (const raw of ['s3://b/x%bl', 'hdfs://nn:8020/50%', 'hdfs:/wh/%E0%A4%A']) {
    assert.throws(
      () => parseUri(raw, '/'),
      (e: unknown) =>
        e instanceof UsageError &&
        e.message === `'${raw}' has a '%' that is not a percent-escape (%XX of UTF-8): write a literal % as %25`,
    );
  }
});

for (const fx of storeFixtures().filter((f) => f.name === 's3')) {
  describe('s3a:// and s3n:// on S3', () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'u');
    for (const scheme of ['s3a', 's3n']) {
      test(`a job through ${scheme}:// lands in the bucket`, async () => {
        const target = path.posix.join(dir(), 'sales');
        const job = await oneFileJob(
          sb.uri(target).replace(/^s3:/, `${scheme}:`),
          sb.env,
          scheme === 's3a' ? cli : inProcess,
        );
        assert.match(job, /^s3:\/\//, 'handles are printed in the one spelling');
        assert.deepEqual(data(await readTree(sb.store, target)), { 'part-0.csv': 'x,1\n' });
      });
    }
  });
}

for (const fx of storeFixtures()) {
  describe(`new jobs whose handles would not read back, on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'hs');
    // On S3 and HDFS, URIs are percent-decoded.
    test("a target holding '%' or a control character is refused, exit 2, nothing written", async () => {
      const remote = fx.name !== 'local';
      for (const [name, refused] of [
        ['t%41', remote],
        ['c\u0001z', true],
        ['d\u007f', true],
        ['n\u0085el', true],
        ['b\u202eidi', true],
        ['tab\tok', false],
      ] as const) {
        const target = path.posix.join(dir(), name);
        // A '%' is written %25 in a URI; a local path is taken as written.
        const r = await inProcess(
          ['stage', '--target', remote ? sb.uri(target).replace(/%(?!25)/g, '%25') : sb.uri(target), '--tasks', '1'],
          { env: sb.env },
        );
        if (!refused) {
          assert.equal(r.code, 0, `${name}: ${r.stderr}`);
          const status = await inProcess(['status', '--job', r.stdout.trim()], { env: sb.env });
          assert.equal(status.code, 0, `${name}: the handle reads back: ${status.stderr}`);
          continue;
        }
        assert.equal(r.code, 2, `${name}: ${r.stdout}${r.stderr}`);
        assert.match(r.stderr, /its job handle would not read back/);
      }
      const left = (await sb.store.list(dir())).map((e) => e.name);
      assert.ok(
        left.every((n) => n === '.stagecommit' || n.startsWith('tab')),
        `nothing of a refused job was written: ${left}`,
      );
    });
  });
}

for (const fx of storeFixtures()) {
  describe(`a backslash in a location, on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'bs');
    test("is part of a name, never a separator: a job into 'a\\b' lands there and leaves 'a/b' alone", async () => {
      const base = dir();
      await sb.store.writeFile(path.posix.join(base, 'a/b/keep.csv'), 'kept\n');
      // Written plain, and (local) as a file: URI whose backslash a URL parser would read as '/'.
      await oneFileJob(sb.uri(path.posix.join(base, 'a\\b')), sb.env);
      if (fx.name === 'local') await oneFileJob(`file://${path.posix.join(base, 'c\\d')}`, sb.env);
      const want: Record<string, string> = { 'a/b/keep.csv': 'kept\n', 'a\\b/part-0.csv': 'x,1\n' };
      if (fx.name === 'local') want['c\\d/part-0.csv'] = 'x,1\n';
      const got = data(await readTree(sb.store, base));
      assert.deepEqual(
        Object.fromEntries(
          Object.entries(got).filter(([k]) => !k.startsWith('.stagecommit') && !k.endsWith('/_SUCCESS')),
        ),
        want,
      );
    });
  });
}

for (const fx of storeFixtures()) {
  describe(`a target under a file, on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'uf');
    // S3 keys have no such place.
    test('is a place that cannot exist where paths are directories: exit 2 naming the file, nothing made', async () => {
      const base = dir();
      await sb.store.writeFile(path.posix.join(base, 'afile'), 'a file\n');
      const target = sb.uri(path.posix.join(base, 'afile/sales'));
      if (fx.name === 's3') {
        await oneFileJob(target, sb.env);
        assert.equal(data(await readTree(sb.store, path.posix.join(base, 'afile/sales')))['part-0.csv'], 'x,1\n');
        return;
      }
      const r = await inProcess(['stage', '--target', target, '--tasks', '1'], { env: sb.env });
      assert.equal(r.code, 2, r.stderr);
      assert.match(
        r.stderr,
        /^stagecommit: error: .* is not a directory: choose a location under a directory, or move what is there\n$|ParentNotDirectoryException/,
      );
      assert.ok(r.stderr.includes(path.posix.join(base, 'afile')), r.stderr);
      // A staging dir elsewhere: stage and the task go through; commit-job stops before its commit point.
      const job = (
        await inProcess(
          ['stage', '--target', target, '--tasks', '1', '--staging-dir', sb.uri(path.posix.join(base, 'stg'))],
          { env: sb.env },
        )
      ).stdout.trim();
      const [f] = await localFiles({ 'part-0.csv': 'x,1\n' });
      assert.equal((await inProcess(['stage', '--job', job, '--task', '0', f!], { env: sb.env })).code, 0);
      assert.equal((await inProcess(['commit-task', '--job', job, '--task', '0'], { env: sb.env })).code, 0);
      const c = await inProcess(['commit-job', '--job', job], { env: sb.env });
      assert.equal(c.code, 2, c.stderr);
      assert.ok(c.stderr.includes(path.posix.join(base, 'afile')) && !/past its commit point/.test(c.stderr), c.stderr);
      assert.equal((await sb.store.readFile(path.posix.join(base, 'afile')))?.toString(), 'a file\n');
    });
  });
}

const site = (props: Record<string, string>) =>
  `<?xml version="1.0"?>\n<configuration>\n${Object.entries(props)
    .map(([k, v]) => `  <property>\n    <name>${k}</name>\n    <value>${v}</value>\n  </property>\n`)
    .join('')}</configuration>\n`;

describe('HDFS through HADOOP_CONF_DIR', () => {
  let work: string;
  let cluster: WebHdfsCluster;
  let store: WebHdfsStore;
  let closedPort: number;
  let ipc: Server;
  let n = 0;
  const port = (u: string) => new URL(u).port;
  const portOf = (s: Server) => (s.address() as AddressInfo).port;

  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'stagecommit-uris-'));
    cluster = await new WebHdfsCluster({ root: path.join(work, 'hdfs') }).start(2);
    cluster.active = 1; // the first name node is standby
    store = new WebHdfsStore({
      nameNodes: cluster.nameNodeUrls,
      uriPrefix: 'hdfs://testcluster',
      user: 'tester',
      retries: 2,
      retryBaseMs: 20,
    });
    // A port that refuses connections: a name node that is down.
    const closed = createTcpServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    closedPort = portOf(closed);
    await new Promise((r) => closed.close(r));
    // What Hadoop's RPC server answers to an HTTP request.
    ipc = createTcpServer((sock) => {
      sock.once('data', () =>
        sock.end(
          'HTTP/1.1 404 Not Found\r\nContent-type: text/plain\r\n\r\nIt looks like you are making an HTTP request to a Hadoop IPC port. This is not the correct port for the web interface on this daemon.\r\n',
        ),
      );
    });
    await new Promise<void>((r) => ipc.listen(0, '127.0.0.1', r));
  });
  after(async () => {
    await cluster.stop();
    await new Promise((r) => ipc.close(r));
    await rm(work, { recursive: true, force: true });
  });

  async function confDir(
    core: Record<string, string>,
    hdfs: Record<string, string>,
  ): Promise<Record<string, string | undefined>> {
    const dir = await mkdtemp(path.join(work, 'conf-'));
    await writeFile(path.join(dir, 'core-site.xml'), site(core));
    await writeFile(path.join(dir, 'hdfs-site.xml'), site(hdfs));
    return { HADOOP_CONF_DIR: dir, HADOOP_USER_NAME: 'tester', STAGECOMMIT_CONFIG: undefined, XDG_CONFIG_HOME: dir };
  }

  const haPair = (first: string, second: string) => ({
    'dfs.nameservices': 'testcluster',
    'dfs.ha.namenodes.testcluster': 'nn1,nn2',
    'dfs.namenode.rpc-address.testcluster.nn1': '127.0.0.1:8020',
    'dfs.namenode.http-address.testcluster.nn1': `127.0.0.1:${first}`,
    'dfs.namenode.rpc-address.testcluster.nn2': '127.0.0.1:8020',
    'dfs.namenode.http-address.testcluster.nn2': `127.0.0.1:${second}`,
  });

  for (const [form, uri] of [
    ['hdfs:/// (fs.defaultFS)', (p: string) => `hdfs://${p}`],
    ['hdfs://NAMESERVICE/', (p: string) => `hdfs://testcluster${p}`],
    ['webhdfs://NAMESERVICE/', (p: string) => `webhdfs://testcluster${p}`],
  ] as const) {
    test(`${form} finds the HA pair in hdfs-site.xml and fails over from the standby`, async () => {
      const env = await confDir(
        { 'fs.defaultFS': 'hdfs://testcluster' },
        haPair(port(cluster.nameNodeUrls[0]!), port(cluster.nameNodeUrls[1]!)),
      );
      const target = `/u${++n}/sales`;
      const job = await oneFileJob(uri(target), env, form.startsWith('hdfs:///') ? cli : inProcess);
      assert.ok(job.startsWith(uri('/')), `the handle keeps the form given: ${job}`);
      assert.deepEqual(data(await readTree(store, target)), { 'part-0.csv': 'x,1\n' });
    });
  }

  test('an HA pair whose first name node is down: the second one is used', async () => {
    const env = await confDir(
      { 'fs.defaultFS': 'hdfs://testcluster' },
      haPair(String(closedPort), port(cluster.nameNodeUrls[1]!)),
    );
    const target = `/u${++n}/sales`;
    await oneFileJob(`hdfs://${target}`, env);
    assert.deepEqual(data(await readTree(store, target)), { 'part-0.csv': 'x,1\n' });
  });

  test('fs.defaultFS naming the RPC address maps to dfs.namenode.http-address', async () => {
    cluster.active = 0;
    try {
      const env = await confDir(
        { 'fs.defaultFS': 'hdfs://127.0.0.1:8020' },
        { 'dfs.namenode.http-address': `0.0.0.0:${port(cluster.nameNodeUrls[0]!)}` },
      );
      const target = `/u${++n}/sales`;
      await oneFileJob(`hdfs://${target}`, env);
      await oneFileJob(`hdfs://127.0.0.1:8020${target}2`, env);
      assert.deepEqual(data(await readTree(store, target)), { 'part-0.csv': 'x,1\n' });
    } finally {
      cluster.active = 1;
    }
  });

  test('an RPC port is exit 2 with a one-line hint naming dfs.namenode.http-address', async () => {
    const env = { HADOOP_CONF_DIR: undefined, STAGECOMMIT_CONFIG: undefined, XDG_CONFIG_HOME: work };
    for (const uri of ['hdfs://127.0.0.1:54310/x/sales', `hdfs://127.0.0.1:${portOf(ipc)}/x/sales`]) {
      const r = await cli(['stage', '--target', uri], { env });
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(
        r.stderr,
        /stagecommit speaks WebHDFS over HTTP, not the name node's RPC port; use its HTTP address, dfs\.namenode\.http-address in hdfs-site\.xml \(port 9870 by default/,
      );
    }
  });

  test('hdfs:/// without HADOOP_CONF_DIR, or with one that lacks the files, is exit 2 saying what to set', async () => {
    const r = await cli(['stage', '--target', 'hdfs:///x/sales'], {
      env: { HADOOP_CONF_DIR: undefined, STAGECOMMIT_CONFIG: undefined, XDG_CONFIG_HOME: work },
    });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /hdfs:\/\/\/ names no name node: set HADOOP_CONF_DIR .*fs\.defaultFS/);
    const empty = await mkdtemp(path.join(work, 'empty-'));
    const r2 = await cli(['stage', '--target', 'hdfs:///x/sales'], {
      env: { HADOOP_CONF_DIR: empty, STAGECOMMIT_CONFIG: undefined, XDG_CONFIG_HOME: work },
    });
    assert.equal(r2.code, 2, r2.stderr);
    assert.match(r2.stderr, /holds neither core-site\.xml nor hdfs-site\.xml/);
  });
});
