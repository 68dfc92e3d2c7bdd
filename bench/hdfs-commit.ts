// Benchmark: commit-job of 100 partitions × 100 files over WebHDFS (the project's test server,
// backed by a local directory): into new partitions, and into existing ones written by 1, 10 and
// 100 tasks each (100: every task writes one file into every partition). Prints RENAME calls,
// all requests and time, against moving the same files with one RENAME per file.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
// The WebHDFS server the tests run against: the store needs a name node to talk to.
import { WebHdfsCluster } from '../testing/webhdfs-server.js';
import { WebHdfsStore } from '../src/store/webhdfs/webhdfs-store.js';
import { forEachLimit } from '../src/util/pool.js';
import {
  benchEnv,
  existingPartitions,
  fileName,
  fmt,
  plainTree,
  printTable,
  runStep,
  seconds,
  stagedJob,
  type Shape,
} from './helpers.js';

const PARTITIONS = 100;
const PER = 100;

const dir = mkdtempSync(path.join(os.tmpdir(), 'stagecommit-hdfs-bench-'));
const cluster = await new WebHdfsCluster({ root: path.join(dir, 'hdfs') }).start(1);
const config = path.join(dir, 'config.yaml');
writeFileSync(config, `webhdfs:\n  user: bench\n  nameservices:\n    bench: [${cluster.nameNodeUrls[0]}]\n`);
const store = new WebHdfsStore({
  nameNodes: cluster.nameNodeUrls,
  uriPrefix: 'hdfs://bench',
  user: 'bench',
  retries: 2,
  retryBaseMs: 50,
});
const local = (p: string) => path.join(dir, 'hdfs', p);

function renames(since: number): number {
  return cluster.log.slice(since).filter((l) => l.op === 'RENAME').length;
}

async function scenario(name: string, existing: boolean, tasksPerPartition: number) {
  const table = `/wh/${name.replace(/\W+/g, '-')}`;
  mkdirSync(local(table), { recursive: true });
  writeFileSync(local(`${table}/README`), 'a table');
  if (existing) existingPartitions(local(table), PARTITIONS);
  const shape: Shape = { partitions: PARTITIONS, filesPerPartition: PER, tasksPerPartition };
  const stagingPath = await stagedJob(benchEnv(store), { target: table, mode: 'append', shape, localPathOf: local });
  const since = cluster.log.length;
  // The server answers from this very process: the step runs as a child, asynchronously.
  // BENCH_PARALLELISM: store operations in flight for our commit (default: the config's, 32).
  const parallelism = process.env.BENCH_PARALLELISM ? ['--parallelism', process.env.BENCH_PARALLELISM] : [];
  const r = await runStep(['commit-job', '--job', `hdfs://bench${stagingPath}`, ...parallelism], {
    env: { ...process.env, STAGECOMMIT_CONFIG: config },
  });
  return { seconds: r.seconds, renames: renames(since), requests: r.metrics.requests ?? 0 };
}

let baselines = 0;

/**
 * The baseline: the same 10,000 files moved with one RENAME each (32 in flight). Measured right
 * after each case, not once for all: the test server's rate drifts over a run (by up to 1.6×).
 */
async function perFile(existing: boolean) {
  const src = `/base/src-${++baselines}`;
  const dst = `/base/dst-${baselines}`;
  plainTree(local(src), { partitions: PARTITIONS, filesPerPartition: PER });
  if (existing) existingPartitions(local(dst), PARTITIONS);
  else for (let p = 0; p < PARTITIONS; p++) mkdirSync(local(`${dst}/dt=${p}`), { recursive: true });
  const files: string[] = [];
  for (let p = 0; p < PARTITIONS; p++) for (let f = 0; f < PER; f++) files.push(`dt=${p}/${fileName(p, f)}`);
  const before = store.requestCount();
  const since = cluster.log.length;
  const t = process.hrtime.bigint();
  await forEachLimit(files, 32, (f) => store.rename(`${src}/${f}`, `${dst}/${f}`));
  return { seconds: seconds(t), renames: renames(since), requests: store.requestCount() - before };
}

try {
  console.log(`commit-job of ${PARTITIONS} partitions × ${PER} files over WebHDFS (test server, one name node)\n`);
  const cases: [string, boolean, number][] = [
    ['new partitions, 1 task/partition', false, 1],
    ['existing partitions, 100 tasks/partition', true, 100],
    ['existing partitions, 10 tasks/partition', true, 10],
    ['existing partitions, 1 task/partition', true, 1],
  ];
  const rows: string[][] = [];
  // BENCH_TASKS=100,1 picks the existing-partition cases by tasks per partition (default: all, and new partitions).
  const only = process.env.BENCH_TASKS?.split(',').map(Number);
  for (const [name, existing, tpp] of cases) {
    if (only && !(existing && only.includes(tpp))) continue;
    const ours = await scenario(name, existing, tpp);
    const base = await perFile(existing);
    rows.push([
      name,
      fmt.s(ours.seconds),
      String(ours.renames),
      String(ours.requests),
      fmt.s(base.seconds),
      String(base.requests),
      fmt.ratio(base.seconds / ours.seconds),
    ]);
  }
  printTable(['scenario', 'stagecommit', 'RENAMEs', 'requests', 'RENAME per file', 'requests', 'vs per file'], rows);
  console.log('\nstagecommit time is the whole `stagecommit commit-job` process (start-up included); the baseline');
  console.log('runs in this process with 32 RENAMEs in flight, right after each case. New partitions: goal at most');
  console.log('110 RENAMEs.');
} finally {
  await cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
