// Benchmark: commit-job of 100 partitions × 100 files over WebHDFS (the project's test server,
// backed by a local directory), into new partitions and into existing ones. Prints RENAME
// calls, all requests and time, against moving the same files with one RENAME per file.

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebHdfsCluster } from '../test/webhdfs/server.js';
import { WebHdfsStore } from '../src/store/webhdfs/webhdfs-store.js';
import { testEnv } from '../test/helpers/lib.js';
import { stageJob } from '../src/steps/stage-job.js';
import { commitTask } from '../src/steps/commit-task.js';
import { JobLayout, taskAttemptName } from '../src/job/layout.js';
import { forEachLimit } from '../src/util/pool.js';

const BIN = fileURLToPath(new URL('../../bin/stagecommit.js', import.meta.url));
const PARTITIONS = 100;
const PER = 100;

const dir = mkdtempSync(path.join(os.tmpdir(), 'stagecommit-hdfs-bench-'));
const cluster = await new WebHdfsCluster({ root: path.join(dir, 'hdfs') }).start(1);
const config = path.join(dir, 'config.yaml');
writeFileSync(config, `webhdfs:\n  user: bench\n  nameservices:\n    bench: [${cluster.nameNodeUrls[0]}]\n`);
const store = new WebHdfsStore({ nameNodes: cluster.nameNodeUrls, uriPrefix: 'hdfs://bench', user: 'bench', retries: 2, retryBaseMs: 50 });
const local = (p: string) => path.join(dir, 'hdfs', p);

function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, args, { env });
    let stdout = '';
    let stderr = '';
    c.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    c.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    c.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function renames(since: number): number {
  return cluster.log.slice(since).filter((l) => l.op === 'RENAME').length;
}

async function scenario(name: string, existing: boolean) {
  const table = `/wh/${name}`;
  mkdirSync(local(table), { recursive: true });
  writeFileSync(local(`${table}/README`), 'a table');
  if (existing) for (let p = 0; p < PARTITIONS; p++) {
    mkdirSync(local(`${table}/dt=${p}`), { recursive: true });
    writeFileSync(local(`${table}/dt=${p}/old.csv`), 'old');
  }
  const env = testEnv(store, undefined, { concurrency: 32 });
  const { stagingPath, job } = await stageJob(env, { targetPath: table, mode: 'append', algorithm: 'v1', partition: [], partitionBy: ['dt'] });
  const layout = new JobLayout(stagingPath);
  for (let p = 0; p < PARTITIONS; p++) {
    // Writers write their attempt dirs themselves (--print-path); here straight into the namespace.
    const d = local(`${layout.attemptDir(0, taskAttemptName(job.jobId, String(p), 0))}/dt=${p}`);
    mkdirSync(d, { recursive: true });
    for (let f = 0; f < PER; f++) writeFileSync(path.join(d, `part-${f}.csv`), `${p},${f}\n`);
  }
  for (let p = 0; p < PARTITIONS; p++) await commitTask(env, { stagingPath, task: String(p) });

  const since = cluster.log.length;
  const t = process.hrtime.bigint();
  // Asynchronously: the server answers from this very process.
  const r = await run([BIN, 'commit-job', '--job', `hdfs://bench${stagingPath}`, '--json'], { ...process.env, STAGECOMMIT_CONFIG: config });
  const seconds = Number(process.hrtime.bigint() - t) / 1e9;
  if (r.code !== 0) throw new Error(r.stderr);
  const metrics = JSON.parse(r.stdout).metrics as Record<string, number>;
  return { name, seconds, renames: renames(since), requests: metrics.requests ?? 0 };
}

/** The baseline: the same 10,000 files moved with one RENAME each (32 in flight). */
async function perFile(existing: boolean) {
  const src = `/base/src-${existing}`;
  const dst = `/base/dst-${existing}`;
  const files: string[] = [];
  for (let p = 0; p < PARTITIONS; p++) {
    mkdirSync(local(`${src}/dt=${p}`), { recursive: true });
    mkdirSync(local(`${dst}/dt=${p}`), { recursive: true });
    if (existing) writeFileSync(local(`${dst}/dt=${p}/old.csv`), 'old');
    for (let f = 0; f < PER; f++) {
      writeFileSync(local(`${src}/dt=${p}/part-${f}.csv`), `${p},${f}\n`);
      files.push(`dt=${p}/part-${f}.csv`);
    }
  }
  const before = store.requestCount();
  const since = cluster.log.length;
  const t = process.hrtime.bigint();
  await forEachLimit(files, 32, (f) => store.rename(`${src}/${f}`, `${dst}/${f}`));
  return { seconds: Number(process.hrtime.bigint() - t) / 1e9, renames: renames(since), requests: store.requestCount() - before };
}

try {
  console.log(`commit-job of ${PARTITIONS} partitions × ${PER} files over WebHDFS (test server, one name node)\n`);
  for (const existing of [false, true]) {
    const ours = await scenario(existing ? 'existing' : 'new', existing);
    const base = await perFile(existing);
    console.log(`${existing ? 'existing partitions' : 'new partitions'}:`);
    console.log(`  stagecommit commit-job: ${ours.seconds.toFixed(2)} s, ${ours.renames} RENAME calls, ${ours.requests} requests`);
    console.log(`  one RENAME per file:    ${base.seconds.toFixed(2)} s, ${base.renames} RENAME calls, ${base.requests} requests`);
    console.log(`  ratio: ${(base.seconds / ours.seconds).toFixed(1)}x faster, ${(base.renames / Math.max(1, ours.renames)).toFixed(1)}x fewer RENAMEs${existing ? '' : ' (goal: at most 110 RENAMEs)'}`);
  }
  console.log('\nstagecommit time is the whole `stagecommit commit-job` process (start-up included).');
} finally {
  await cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
