// The scripts in examples/ run as a user would run them: parallel tasks with xargs -P and the
// scheduler wrapper locally, the HDFS name service one against the project's WebHDFS server
// through a HADOOP_CONF_DIR, the S3 one on RGW when S3 is tested; the Spark job and the
// Kubernetes manifest are checked for syntax (neither engine runs here).

import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { WebHdfsStore } from '../src/store/webhdfs/webhdfs-store.js';
import { yamlLib } from '../src/manifest/codec.js';
import { BIN } from '../testing/cli.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree } from '../testing/tree.js';
import { WebHdfsCluster } from '../testing/webhdfs-server.js';

const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));
const STAGECOMMIT = `${process.execPath} ${BIN}`;

function script(
  name: string,
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const e: Record<string, string | undefined> = {
      ...process.env,
      STAGECOMMIT,
      NO_COLOR: '1',
      STAGECOMMIT_CONFIG: undefined,
      ...env,
    };
    for (const [k, v] of Object.entries(e)) if (v === undefined) delete e[k];
    execFile('bash', [path.join(EXAMPLES, name), ...args], { env: e as NodeJS.ProcessEnv }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('examples', () => {
  let work: string;
  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'stagecommit-examples-'));
  });
  after(() => rm(work, { recursive: true, force: true }));

  test('parallel-xargs.sh: one task per file, four at a time, one commit', async () => {
    const files = [];
    for (let i = 0; i < 6; i++) {
      files.push(path.join(work, `in-${i}.csv`));
      await writeFile(files[i]!, `row ${i}\n`);
    }
    const target = path.join(work, 'sales');
    const r = await script('parallel-xargs.sh', [target, ...files]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), path.join(target, '_SUCCESS'));
    const names = (await import('node:fs/promises').then((fs) => fs.readdir(target))).sort();
    assert.deepEqual(names, ['_SUCCESS', ...files.map((f) => path.basename(f))].sort());
    assert.equal(await readFile(path.join(target, 'in-3.csv'), 'utf8'), 'row 3\n');

    const bad = await script('parallel-xargs.sh', [
      path.join(work, 'other'),
      files[0]!,
      path.join(work, 'missing.csv'),
    ]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /a task failed: aborting job/);
    assert.equal(spawnSync('test', ['-e', path.join(work, 'other')]).status, 1, 'the target was never made');
  });

  test('scheduler-wrapper.sh: 3 is skip (99), 4 is retried then fails, 5 and 6 fail at once, 0 is ok', async () => {
    const env = { RETRIES: '2', DELAY: '0' };
    assert.equal((await script('scheduler-wrapper.sh', ['sh', '-c', 'exit 0'], env)).code, 0);
    const skip = await script('scheduler-wrapper.sh', ['sh', '-c', 'exit 3'], env);
    assert.equal(skip.code, 99);
    assert.match(skip.stderr, /skip: another attempt of this task won/);
    const retry = await script('scheduler-wrapper.sh', ['sh', '-c', 'echo run >&2; exit 4'], env);
    assert.equal(retry.code, 4);
    assert.equal(retry.stderr.match(/^run$/gm)?.length, 2, retry.stderr);
    assert.match(retry.stderr, /retry 1\/2/);
    assert.equal((await script('scheduler-wrapper.sh', ['sh', '-c', 'exit 5'], env)).code, 5);
    const never = await script('scheduler-wrapper.sh', ['sh', '-c', 'echo run >&2; exit 6'], env);
    assert.equal(never.code, 6);
    assert.equal(never.stderr.match(/^run$/gm)?.length, 1, 'exit 6 is never retried');
    assert.match(never.stderr, /will never pass as it is \(exit 6\), not retried/);
    // A real denial: a second attempt of a committed task.
    const target = path.join(work, 'denied');
    const sc = (...a: string[]) => spawnSync(process.execPath, [BIN, ...a], { encoding: 'utf8' });
    const job = sc('stage', '--target', target, '--tasks', '1').stdout.trim();
    await writeFile(path.join(work, 'd.csv'), 'd\n');
    for (const attempt of ['0', '1'])
      sc('stage', '--job', job, '--task', '0', '--attempt', attempt, path.join(work, 'd.csv'));
    assert.equal(sc('commit-task', '--job', job, '--task', '0', '--attempt', '0').status, 0);
    const denied = await script(
      'scheduler-wrapper.sh',
      [process.execPath, BIN, 'commit-task', '--job', job, '--task', '0', '--attempt', '1'],
      env,
    );
    assert.equal(denied.code, 99, denied.stderr);
    // A real append clash: exit 6, tried once.
    const table = path.join(work, 'clash');
    await writeFile(path.join(work, 'c.csv'), 'other bytes\n');
    const first = sc('stage', '--target', table, '--tasks', '1').stdout.trim();
    sc('stage', '--job', first, '--task', '0', path.join(work, 'd.csv'));
    sc('commit-task', '--job', first, '--task', '0');
    assert.equal(sc('commit-job', '--job', first).status, 0);
    const clash = sc('stage', '--target', table, '--mode', 'append', '--tasks', '1').stdout.trim();
    await writeFile(path.join(work, 'd.csv'), 'new bytes\n');
    sc('stage', '--job', clash, '--task', '0', path.join(work, 'd.csv'));
    sc('commit-task', '--job', clash, '--task', '0');
    const blocked = await script('scheduler-wrapper.sh', [process.execPath, BIN, 'commit-job', '--job', clash], env);
    assert.equal(blocked.code, 6, blocked.stderr);
    assert.equal(blocked.stderr.match(/append would overwrite/g)?.length, 1, blocked.stderr);
    assert.equal(await readFile(path.join(table, 'd.csv'), 'utf8'), 'd\n');
  });

  test("rerun-pipeline.sh: a run killed mid-way, run again from the top: one job's data, nothing staged", async () => {
    const target = path.join(work, 'daily');
    const env = { TASKS: '4', TASK_SECONDS: '0.3' };
    // The first run is killed (SIGKILL, as a scheduler's timeout does) once two tasks are committed.
    const staging = path.join(work, '.stagecommit', 'daily', 'daily-2026-12-01');
    const first = spawn('bash', [path.join(EXAMPLES, 'rerun-pipeline.sh'), target, '2026-12-01'], {
      env: { ...process.env, STAGECOMMIT, NO_COLOR: '1', ...env },
      detached: true,
      stdio: 'ignore',
    });
    const ended = new Promise<number | null>((r) => first.on('exit', (code) => r(code)));
    const toRun = () =>
      spawnSync(process.execPath, [BIN, 'status', '--job', staging, '--tasks-to-run'], { encoding: 'utf8' });
    for (let i = 0; i < 200; i++) {
      const st = toRun();
      if (st.status === 0 && st.stdout.trim().split('\n').length <= 2) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    process.kill(-first.pid!, 'SIGKILL'); // the script and the step it runs, as a scheduler's timeout does
    assert.notEqual(await ended, 0, 'the first run was killed');
    assert.equal(spawnSync('test', ['-e', target]).status, 1, 'nothing published by the killed run');
    const st = toRun();
    assert.equal(st.status, 0, st.stderr);
    const left = st.stdout.trim().split('\n');
    assert.ok(left.length >= 1 && left.length <= 2, `tasks still to run: ${st.stdout}`);

    const again = await script('rerun-pipeline.sh', [target, '2026-12-01'], env);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /resumed job daily-2026-12-01 .*: [23] of 4 task\(s\) committed, kept/);
    const rows = await Promise.all(
      ['0', '1', '2', '3'].map((t) => readFile(path.join(target, 'dt=2026-12-01', `part-${t}.csv`), 'utf8')),
    );
    assert.deepEqual(
      rows,
      ['0', '1', '2', '3'].map((t) => `dt=2026-12-01,task=${t}\n`),
    );
    const jobs = spawnSync(process.execPath, [BIN, '--json', 'jobs', target], { encoding: 'utf8' });
    assert.deepEqual(JSON.parse(jobs.stdout).jobs, [], 'no staged job left');

    const third = await script('rerun-pipeline.sh', [target, '2026-12-01'], env);
    assert.equal(third.code, 0, third.stderr);
    assert.match(third.stderr, /already committed/);
  });

  test('hdfs-nameservice.sh: hdfs:/// through HADOOP_CONF_DIR, first name node standby', async () => {
    const cluster = await new WebHdfsCluster({ root: path.join(work, 'hdfs') }).start(2);
    try {
      cluster.active = 1;
      const conf = path.join(work, 'hadoop-conf');
      await import('node:fs/promises').then((fs) => fs.mkdir(conf));
      const prop = (k: string, v: string) => `<property><name>${k}</name><value>${v}</value></property>`;
      await writeFile(
        path.join(conf, 'core-site.xml'),
        `<configuration>${prop('fs.defaultFS', 'hdfs://mycluster')}</configuration>`,
      );
      const [nn1, nn2] = cluster.nameNodeUrls.map((u) => new URL(u).host);
      await writeFile(
        path.join(conf, 'hdfs-site.xml'),
        `<configuration>${prop('dfs.nameservices', 'mycluster')}${prop('dfs.ha.namenodes.mycluster', 'nn1,nn2')}${prop('dfs.namenode.http-address.mycluster.nn1', nn1!)}${prop('dfs.namenode.http-address.mycluster.nn2', nn2!)}</configuration>`,
      );
      const r = await script('hdfs-nameservice.sh', ['hdfs:///warehouse/sales'], {
        HADOOP_CONF_DIR: conf,
        HADOOP_USER_NAME: 'etl',
        XDG_CONFIG_HOME: work,
      });
      assert.equal(r.code, 0, r.stderr);
      const store = new WebHdfsStore({
        nameNodes: cluster.nameNodeUrls,
        uriPrefix: 'hdfs://mycluster',
        user: 'etl',
        retries: 2,
        retryBaseMs: 20,
      });
      assert.deepEqual(data(await readTree(store, '/warehouse/sales')), { 'part-0.csv': 'a,1\n' });
    } finally {
      await cluster.stop();
    }
  });

  test('spark_print_path.py parses; k8s-indexed-job.yaml is an indexed Job using JOB_COMPLETION_INDEX', async () => {
    const py = spawnSync(
      'python3',
      ['-c', 'import ast, sys; ast.parse(open(sys.argv[1]).read())', path.join(EXAMPLES, 'spark_print_path.py')],
      { encoding: 'utf8' },
    );
    assert.ok(py.error || py.status === 0, py.stderr);
    const job = yamlLib().parse(await readFile(path.join(EXAMPLES, 'k8s-indexed-job.yaml'), 'utf8')) as {
      kind: string;
      spec: { completionMode: string; template: { spec: { containers: { args: string[] }[] } } };
    };
    assert.equal(job.kind, 'Job');
    assert.equal(job.spec.completionMode, 'Indexed');
    assert.match(job.spec.template.spec.containers[0]!.args[0]!, /--task "\$task"/);
    assert.match(job.spec.template.spec.containers[0]!.args[0]!, /task="\$JOB_COMPLETION_INDEX"/);
  });
});

for (const fx of storeFixtures().filter((f) => f.name === 's3')) {
  describe('examples on S3', () => {
    let sb!: StoreSandbox;
    useSandbox(fx, (s) => (sb = s), 'x');
    test('s3.sh: a partitioned job through s3a:// against the endpoint given', async () => {
      const bucket = sb.base.split('/')[1]!;
      const r = await script('s3.sh', [bucket, 'example/sales'], {
        S3_ENDPOINT: process.env.STAGECOMMIT_TEST_S3_ENDPOINT,
      });
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(data(await readTree(sb.store, `/${bucket}/example/sales`)), {
        'dt=2026-11-29/part-0.csv': 'id,amount\n1,10\n',
        'dt=2026-11-30/part-1.csv': 'id,amount\n2,20\n',
      });
    });
  });
}
