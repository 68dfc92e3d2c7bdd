// The cluster's Hadoop client config read as Hadoop's Configuration reads it: `${var}` expansion
// (other properties, `${env.NAME}`, user.name), `xi:include` with relative hrefs and fallbacks,
// final properties; what is still not read is exit 2 naming the property, file and variable.

import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { UsageError } from '../src/errors.js';
import { HadoopConf, readHadoopConf, webHdfsUrls } from '../src/store/webhdfs/hadoop-conf.js';
import { WebHdfsStore } from '../src/store/webhdfs/webhdfs-store.js';
import { cli } from '../testing/cli.js';
import { localFiles } from '../testing/jobs.js';
import { data, readTree } from '../testing/tree.js';
import { WebHdfsCluster } from '../testing/webhdfs-server.js';

const prop = (k: string, v: string, extra = '') => `<property><name>${k}</name><value>${v}</value>${extra}</property>`;
const XI = 'xmlns:xi="http://www.w3.org/2001/XInclude"';

describe('Hadoop XML as Hadoop reads it', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hadoop-conf-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  async function confDir(files: Record<string, string>): Promise<string> {
    const d = await mkdtemp(path.join(dir, 'c-'));
    for (const [name, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(d, name)), { recursive: true });
      await writeFile(path.join(d, name), text);
    }
    return d;
  }

  test('${var} from other properties, ${env.NAME} with defaults, ${user.name}; the depth limit', () => {
    const conf = HadoopConf.of(
      {
        'nn.host': 'nn-${env.RACK}.example',
        'nn.port': '${env.NN_PORT:-9870}',
        'dfs.namenode.http-address': '${nn.host}:${nn.port}',
        dash: '${env.EMPTY-unset}|${env.EMPTY:-empty}|${env.GONE-gone}',
        who: '${user.name}@${env.NOT_SET:-x}',
        a: '${b}',
        b: '${a}',
        ...Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`d${i}`, `\${d${i + 1}}`])),
        d25: 'deep',
      },
      { RACK: 'r1', EMPTY: '', USER: 'etl' },
    );
    assert.equal(conf.get('dfs.namenode.http-address'), 'nn-r1.example:9870');
    assert.equal(conf.get('dash'), '|empty|gone');
    assert.equal(conf.get('who'), 'etl@x');
    assert.equal(conf.get('d10'), 'deep');
    assert.throws(
      () => conf.get('d0'),
      (e: unknown) =>
        e instanceof UsageError &&
        e.detail.reason === 'hadoop-conf-substitution-loop' &&
        e.detail.name === 'd0' &&
        e.detail.limit === 20,
    );
    assert.throws(() => conf.get('a'), UsageError);
    assert.equal(conf.get('missing'), undefined);
  });

  test('xi:include: a relative href from the including file, nested; a fallback when it is missing', async () => {
    const d = await confDir({
      'hdfs-site.xml': `<configuration ${XI}>${prop('dfs.nameservices', 'lake')}<xi:include href="ha/nodes.xml"/><xi:include href="gone.xml"><xi:fallback>${prop('fallback.used', 'yes')}</xi:fallback></xi:include><xi:include href="ha/nodes.xml"><xi:fallback>${prop('fallback.skipped', 'yes')}</xi:fallback></xi:include></configuration>`,
      'ha/nodes.xml': `<configuration ${XI}>${prop('dfs.ha.namenodes.lake', 'nn1,nn2')}<xi:include href="more/addr.xml"/></configuration>`,
      'ha/more/addr.xml': `<configuration>${prop('dfs.namenode.http-address.lake.nn1', 'a:1')}${prop('dfs.namenode.http-address.lake.nn2', 'b:2')}</configuration>`,
    });
    const conf = await readHadoopConf(d);
    assert.deepEqual(webHdfsUrls(conf, 'lake', false), ['http://a:1', 'http://b:2']);
    assert.equal(conf.get('fallback.used'), 'yes');
    assert.equal(conf.get('fallback.skipped'), undefined);
  });

  test('an include with no fallback that cannot be read: exit-2 error naming the file and href', async () => {
    const d = await confDir({ 'core-site.xml': `<configuration ${XI}><xi:include href="nope.xml"/></configuration>` });
    await assert.rejects(readHadoopConf(d), (e: unknown) => {
      assert.ok(e instanceof UsageError && e.detail.reason === 'hadoop-include-unreadable');
      assert.equal(path.basename(e.detail.file), 'core-site.xml');
      assert.equal(e.detail.href, 'nope.xml');
      return true;
    });
  });

  test('files that include the next twice, 15 deep: exit-2 error at once, not 2^15 reads', async () => {
    const files: Record<string, string> = { 'f15.xml': `<configuration>${prop('a', 'b')}</configuration>` };
    for (let i = 0; i < 15; i++) {
      const inc = `<xi:include href="f${i + 1}.xml"/>`;
      files[i === 0 ? 'core-site.xml' : `f${i}.xml`] = `<configuration ${XI}>${inc}${inc}</configuration>`;
    }
    const start = Date.now();
    await assert.rejects(readHadoopConf(await confDir(files)), (e: Error) => {
      assert.ok(e instanceof UsageError);
      assert.match(e.message, /more than 1000 xi:includes read \(at f\d+\.xml\): .*Include each file once/);
      return true;
    });
    assert.ok(Date.now() - start < 10_000, `took ${Date.now() - start} ms`);
  });

  test('a final property in core-site.xml is not overridden by hdfs-site.xml', async () => {
    const d = await confDir({
      'core-site.xml': `<configuration>${prop('fs.defaultFS', 'hdfs://lake', '<final>true</final>')}</configuration>`,
      'hdfs-site.xml': `<configuration>${prop('fs.defaultFS', 'hdfs://other')}</configuration>`,
    });
    assert.equal((await readHadoopConf(d)).get('fs.defaultFS'), 'hdfs://lake');
  });

  test('hdfs:/// through HADOOP_CONF_DIR with ${var} and xi:include reaches the name nodes', async () => {
    const cluster = await new WebHdfsCluster({ root: path.join(dir, 'hdfs') }).start(2);
    try {
      cluster.active = 1;
      const [nn1, nn2] = cluster.nameNodeUrls.map((u) => new URL(u));
      const d = await confDir({
        'core-site.xml': `<configuration>${prop('fs.defaultFS', 'hdfs://${cluster.name}')}${prop('cluster.name', 'lake')}</configuration>`,
        'hdfs-site.xml': `<configuration ${XI}>${prop('dfs.nameservices', '${cluster.name}')}${prop('nn.host', '${env.NN_HOST}')}<xi:include href="nodes.xml"/></configuration>`,
        'nodes.xml': `<configuration>${prop('dfs.ha.namenodes.lake', 'nn1,nn2')}${prop('dfs.namenode.http-address.lake.nn1', `\${nn.host}:${nn1!.port}`)}${prop('dfs.namenode.http-address.lake.nn2', `\${nn.host}:${nn2!.port}`)}</configuration>`,
      });
      const env = {
        HADOOP_CONF_DIR: d,
        NN_HOST: nn1!.hostname,
        HADOOP_USER_NAME: 'etl',
        STAGECOMMIT_CONFIG: undefined,
      };
      const staged = await cli(['stage', '--target', 'hdfs:///wh/sales', '--tasks', '1'], { env });
      assert.equal(staged.code, 0, staged.stderr);
      const job = staged.stdout.trim();
      const [file] = await localFiles({ 'part-0.csv': 'a,1\n' });
      for (const args of [
        ['stage', '--job', job, '--task', '0', file!],
        ['commit-task', '--job', job, '--task', '0'],
        ['commit-job', '--job', job],
      ]) {
        const r = await cli(args, { env });
        assert.equal(r.code, 0, r.stderr);
      }
      const store = new WebHdfsStore({
        nameNodes: cluster.nameNodeUrls,
        uriPrefix: 'hdfs://lake',
        user: 'etl',
        retries: 2,
        retryBaseMs: 20,
      });
      assert.deepEqual(data(await readTree(store, '/wh/sales')), { 'part-0.csv': 'a,1\n' });

      // The same config with the variable unset: exit 2 naming it, not a failed DNS look-up.
      const r = await cli(['stage', '--target', 'hdfs:///wh/other', '--tasks', '1'], {
        env: { ...env, NN_HOST: undefined },
      });
      assert.equal(r.code, 2, r.stderr);
      assert.match(
        r.stderr,
        /nodes\.xml \(HADOOP_CONF_DIR\): dfs\.namenode\.http-address\.lake\.nn1 is '\$\{nn\.host\}:\d+', and nothing defines '\$\{env\.NN_HOST\}'/,
      );
      assert.doesNotMatch(r.stderr, /ENOTFOUND/);
    } finally {
      await cluster.stop();
    }
  });
});
