// A job is its location, not the spelling of its URI: through the CLI, a job staged as one
// spelling is listed, shown, resumed and committed through another (s3/s3a/s3n; a name service
// and its name nodes' HTTP addresses, from the config file or HADOOP_CONF_DIR; file:// and a path).

import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cli } from '../testing/cli.js';
import { localFiles, type Runner } from '../testing/jobs.js';
import { inProcess } from '../testing/main.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree } from '../testing/tree.js';
import { WebHdfsCluster } from '../testing/webhdfs-server.js';

/** Other spellings of a store path's location on each store. */
async function otherSpellings(fx: string, sb: StoreSandbox): Promise<((p: string) => string)[]> {
  if (fx === 'local') return [(p) => `file://${p}`];
  if (fx === 's3') return ['s3a', 's3n'].map((s) => (p: string) => sb.uri(p).replace(/^s3:/, `${s}:`));
  // The config file lists the name service's name nodes: the active one's HTTP address names the
  // cluster (the first is standby, and answers nothing when addressed alone).
  const config = await readFile(sb.env.STAGECOMMIT_CONFIG!, 'utf8');
  const urls = [...config.matchAll(/http:\/\/([\w.-]+:\d+)/g)].map((m) => m[1]!);
  assert.equal(urls.length, 2, config);
  return [(p: string) => `webhdfs://${urls[1]}${p}`, (p: string) => `hdfs://${urls[1]}${p}`];
}

/** Runs a step and checks its exit code; the result's stdout, trimmed. */
async function step(run: Runner, args: string[], env: Record<string, string | undefined>, code = 0) {
  const r = await run(args, { env });
  assert.equal(r.code, code, `stagecommit ${args.join(' ')}: ${r.stderr}`);
  return { out: r.stdout.trim(), err: r.stderr };
}

for (const fx of storeFixtures()) {
  describe(`a job's identity is its location, on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'id');

    test('jobs, status and every step take any spelling of the job and its table', async () => {
      for (const [i, spell] of (await otherSpellings(fx.name, sb)).entries()) {
        const target = path.posix.join(dir(), 'sales');
        const job = ['--mode', 'overwrite', '--partition-by', 'dt', '--tasks', '2', '--job-id', `j${i}`];
        const handle = (await step(cli, ['stage', '--target', sb.uri(target), ...job], sb.env)).out;
        const [a, b] = await localFiles({ 'a.csv': 'a\n', 'b.csv': 'b\n' });
        await step(inProcess, ['stage', '--job', handle, '--task', '0', '--partition', 'dt=1', a!], sb.env);
        await step(inProcess, ['commit-task', '--job', handle, '--task', '0'], sb.env);

        const listed = JSON.parse((await step(inProcess, ['--json', 'jobs', spell(target)], sb.env)).out);
        assert.deepEqual(
          listed.jobs.map((r: { jobId: string; state: string; problem?: string }) => [r.jobId, r.state, r.problem]),
          [[`j${i}`, 'staged', undefined]],
          spell(target),
        );
        const other = spell(sb.pathOf(handle));
        assert.equal((await step(inProcess, ['status', '--job', other, '--tasks-to-run'], sb.env)).out, '1');
        // A rerun in the other spelling finds the job (HDFS prints the handle in that spelling; local
        // and S3 have one spelling of their own).
        const again = await step(inProcess, ['stage', '--target', spell(target), ...job], sb.env);
        assert.equal(again.out, fx.name.startsWith('hdfs') ? other : handle);
        assert.match(again.err, new RegExp(`resumed job j${i} .*: 1 of 2 task\\(s\\) committed, kept`));
        await step(inProcess, ['stage', '--job', other, '--task', '1', '--partition', 'dt=2', b!], sb.env);
        await step(inProcess, ['commit-task', '--job', other, '--task', '1'], sb.env);
        await step(inProcess, ['commit-job', '--job', other], sb.env);
        assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a.csv': 'a\n', 'dt=2/b.csv': 'b\n' });
        assert.equal(await sb.store.stat(sb.pathOf(handle)), null, 'no staging dir left');
        const done = await step(inProcess, ['stage', '--target', sb.uri(target), ...job], sb.env);
        assert.match(done.err, /already committed/);
      }
    });
  });
}

// Symbolic links exist on the local filesystem alone (S3 keys and WebHDFS paths have none).
describe('a local table reached through a symbolic link is one job', () => {
  let root!: string;
  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'stagecommit-link-'));
  });
  after(() => rm(root, { recursive: true, force: true }));

  test('staged through a link, it is resumed, shown, listed once and committed by its real path', async () => {
    const real = path.join(root, 'w5');
    const link = path.join(root, 'w5link');
    await mkdir(real);
    await symlink(real, link);
    const job = ['--mode', 'overwrite', '--tasks', '1', '--job-id', 'S'];
    const viaLink = await step(cli, ['stage', '--target', path.join(link, 't'), ...job], {});
    assert.equal(viaLink.out, path.join(real, '.stagecommit', 't', 'S'), 'the handle is the resolved path');
    const again = await step(inProcess, ['stage', '--target', path.join(real, 't'), ...job], {});
    assert.equal(again.out, viaLink.out);
    assert.match(again.err, /resumed job S .*: 0 of 1 task\(s\) committed, kept/);
    const handleViaLink = path.join(link, '.stagecommit', 't', 'S');
    const [a] = await localFiles({ 'a.csv': 'a\n' });
    await step(inProcess, ['stage', '--job', handleViaLink, '--task', '0', a!], {});
    assert.equal((await step(inProcess, ['status', '--job', viaLink.out, '--tasks-to-run'], {})).out, '0');
    const listed = JSON.parse(
      (await step(inProcess, ['--json', 'jobs', path.join(link, 't'), path.join(real, 't')], {})).out,
    );
    assert.deepEqual(
      listed.jobs.map((r: { jobId: string; state: string; problem?: string }) => [r.jobId, r.state, r.problem]),
      [['S', 'staged', undefined]],
    );
    const orphans = JSON.parse(
      (await step(inProcess, ['--json', 'clean-orphans', '--older-than', '0s', real], {})).out,
    );
    assert.deepEqual(
      orphans.leftovers.map((l: { kind: string; jobId?: string; jobState?: string }) => [l.kind, l.jobId, l.jobState]),
      [['stagecommit', 'S', 'staged']],
    );
    await step(inProcess, ['commit-task', '--job', viaLink.out, '--task', '0'], {});
    await step(inProcess, ['commit-job', '--job', handleViaLink], {});
    assert.equal(await readFile(path.join(real, 't', 'a.csv'), 'utf8'), 'a\n');
    assert.ok(!(await readdir(path.join(real, '.stagecommit', 't'))).includes('S'), 'no staging dir left');
  });
});

const site = (props: Record<string, string>) =>
  `<?xml version="1.0"?>\n<configuration>\n${Object.entries(props)
    .map(([k, v]) => `  <property><name>${k}</name><value>${v}</value></property>\n`)
    .join('')}</configuration>\n`;

describe('a name service in HADOOP_CONF_DIR and its name nodes are one cluster', () => {
  let work: string;
  let cluster: WebHdfsCluster;
  let env: Record<string, string | undefined>;
  let nn: string[];

  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'stagecommit-identity-'));
    cluster = await new WebHdfsCluster({ root: path.join(work, 'hdfs') }).start(2);
    cluster.active = 1; // the first name node is standby
    nn = cluster.nameNodeUrls.map((u) => new URL(u).host);
    await writeFile(path.join(work, 'core-site.xml'), site({ 'fs.defaultFS': 'hdfs://mycluster' }));
    await writeFile(
      path.join(work, 'hdfs-site.xml'),
      site({
        'dfs.nameservices': 'mycluster',
        'dfs.ha.namenodes.mycluster': 'nn1,nn2',
        'dfs.namenode.rpc-address.mycluster.nn1': '127.0.0.1:8020',
        'dfs.namenode.http-address.mycluster.nn1': nn[0]!,
        'dfs.namenode.rpc-address.mycluster.nn2': '127.0.0.1:8020',
        'dfs.namenode.http-address.mycluster.nn2': nn[1]!,
      }),
    );
    env = { HADOOP_CONF_DIR: work, HADOOP_USER_NAME: 'tester', STAGECOMMIT_CONFIG: undefined, XDG_CONFIG_HOME: work };
  });
  after(async () => {
    await cluster.stop();
    await rm(work, { recursive: true, force: true });
  });

  test('a job staged as hdfs://mycluster is listed, resumed and committed as webhdfs://nn:port', async () => {
    const job = ['--mode', 'append', '--tasks', '2', '--job-id', 'nightly'];
    const handle = (await step(cli, ['stage', '--target', 'hdfs://mycluster/wh/sales', ...job], env)).out;
    assert.equal(handle, 'hdfs://mycluster/wh/.stagecommit/sales/nightly');
    const [a, b] = await localFiles({ 'a.csv': 'a\n', 'b.csv': 'b\n' });
    await step(inProcess, ['stage', '--job', handle, '--task', '0', a!], env);
    await step(inProcess, ['commit-task', '--job', handle, '--task', '0'], env);

    const direct = `webhdfs://${nn[1]}/wh/sales`;
    const rows = JSON.parse((await step(inProcess, ['--json', 'jobs', direct], env)).out).jobs;
    assert.deepEqual(
      rows.map((r: { state: string; tasksCommitted: number }) => [r.state, r.tasksCommitted]),
      [['staged', 1]],
    );
    const other = (await step(inProcess, ['stage', '--target', direct, ...job], env)).out;
    assert.equal(other, `webhdfs://${nn[1]}/wh/.stagecommit/sales/nightly`);
    assert.equal(
      (await step(inProcess, ['status', '--job', `hdfs:///wh/.stagecommit/sales/nightly`, '--tasks-to-run'], env)).out,
      '1',
    );
    await step(inProcess, ['stage', '--job', other, '--task', '1', b!], env);
    await step(inProcess, ['commit-task', '--job', other, '--task', '1'], env);
    // Another job's staging dir given in the other spelling is on the same store.
    const elsewhere = ['--staging-dir', `webhdfs://${nn[0]}/wh/_stg/x`, '--mode', 'append'];
    assert.match(
      (await step(inProcess, ['stage', '--target', 'hdfs://mycluster/wh/t2', ...elsewhere], env)).out,
      /^hdfs:\/\/mycluster\/wh\/_stg\/x$/,
    );
    await step(inProcess, ['commit-job', '--job', `hdfs://${nn[1]}/wh/.stagecommit/sales/nightly`], env);
    const rowsAfter = JSON.parse((await step(inProcess, ['--json', 'jobs', direct], env)).out).jobs;
    assert.deepEqual(rowsAfter, []);
    const files = await Promise.all(
      ['a.csv', 'b.csv'].map((f) => readFile(path.join(work, 'hdfs', 'wh', 'sales', f), 'utf8')),
    );
    assert.deepEqual(files, ['a\n', 'b\n']);
  });

  test("a name node outside the name service is another cluster: its job's manifest is refused (exit 1)", async () => {
    const other = await new WebHdfsCluster({ root: path.join(work, 'hdfs') }).start(1);
    try {
      // The same namespace served at an address the name service does not list: a copy elsewhere.
      await step(cli, ['stage', '--target', 'hdfs://mycluster/wh/t3', '--job-id', 'c'], env);
      const host = new URL(other.nameNodeUrls[0]!).host;
      const r = await inProcess(['status', '--job', `webhdfs://${host}/wh/.stagecommit/t3/c`], { env });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /_job\.yaml: field '(target|staging)' is hdfs:\/\/mycluster\/wh\/\S+, but .* is webhdfs:/);
    } finally {
      await other.stop();
    }
  });
});
