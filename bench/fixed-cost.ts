// Benchmark: the fixed cost of a one-file job, per step (stage, stage FILE, commit-task,
// commit-job), on the local filesystem, on WebHDFS (the project's test server) and on S3 when
// AWS_ENDPOINT_URL names a server: store calls by operation, HTTP requests, sequential round
// trips and wall time, each step run in this process (start-up excluded;
// `node --cpu-prof bin/stagecommit.js …` shows that part). Not part of the tests.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../src/store/local.js';
import type { Store } from '../src/store/types.js';
import { WebHdfsStore } from '../src/store/webhdfs/webhdfs-store.js';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { S3Store } from '../src/store/s3/s3-store.js';
import { s3Settings } from '../src/store/s3/settings.js';
import { commitJob } from '../src/steps/commit-job.js';
import { commitTask } from '../src/steps/commit-task.js';
import { stageFiles } from '../src/steps/stage-files.js';
import { stageJob } from '../src/steps/stage-job.js';
// The WebHDFS server the tests run against: the store needs a name node to talk to.
import { WebHdfsCluster } from '../testing/webhdfs-server.js';
import { benchEnv, printTable, seconds } from './helpers.js';

/**
 * The store with its sequential round trips counted: a call that starts while no other is in
 * flight begins a new round (calls made at once share one). BENCH_TRACE=1 prints each call (its
 * round, operation and first path, `root` shortened to '…') on stderr.
 */
function countingRounds(store: Store, root: string): { store: Store; rounds: () => number } {
  let inFlight = 0;
  let rounds = 0;
  const began = process.hrtime.bigint();
  const proxy = new Proxy(store, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        const starts = inFlight === 0;
        if (starts) rounds++;
        inFlight++;
        if (process.env.BENCH_TRACE === '1' && key !== 'toUri') {
          const first = typeof args[0] === 'string' ? args[0] : (JSON.stringify(args[0])?.slice(0, 160) ?? '');
          const ms = (Number(process.hrtime.bigint() - began) / 1e6).toFixed(1).padStart(6);
          process.stderr.write(
            `  ${String(rounds).padStart(3)} ${ms} ms ${String(key)} ${first.split(root).join('…')}\n`,
          );
        }
        const out = (v as (...a: unknown[]) => unknown).apply(target, args);
        if (out instanceof Promise) return out.finally(() => inFlight--);
        inFlight--;
        if (starts) rounds--; // a synchronous helper (toUri), not a round trip
        return out;
      };
    },
  });
  return { store: proxy, rounds: () => rounds };
}

async function oneFileJob(label: string, store: Store, root: string, file: string): Promise<string[][]> {
  const rows: string[][] = [];
  const step = async <T>(name: string, fn: (env: ReturnType<typeof benchEnv>) => Promise<T>): Promise<T> => {
    const counted = countingRounds(store, root);
    const env = benchEnv(counted.store, 8);
    const t = process.hrtime.bigint();
    const out = await fn(env);
    const wall = seconds(t);
    const { requests, ...ops } = env.store.metrics();
    const calls = Object.values(ops).reduce((a, n) => a + (n ?? 0), 0);
    const detail = Object.entries(ops)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    rows.push([
      `${label} ${name}`,
      String(calls),
      requests === undefined ? '-' : String(requests),
      String(counted.rounds()),
      `${(wall * 1000).toFixed(1)} ms`,
      detail,
    ]);
    return out;
  };
  const target = `${root}/table`;
  const { stagingPath } = await step('stage', (env) =>
    stageJob(env, { targetPath: target, mode: 'append', algorithm: 'v1', partition: [], partitionBy: [] }),
  );
  await step('stage FILE', (env) =>
    stageFiles(env, { stagingPath, task: '0', partition: [], files: [{ localPath: file, name: 'part-0.csv' }] }),
  );
  await step('commit-task', (env) => commitTask(env, { stagingPath, task: '0' }));
  await step('commit-job', (env) => commitJob(env, { stagingPath }));
  return rows;
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'stagecommit-fixed-'));
const cluster = await new WebHdfsCluster({ root: path.join(dir, 'hdfs') }).start(1);
try {
  const file = path.join(dir, 'part-0.csv');
  writeFileSync(file, 'a,b\n1,2\n');
  const hdfs = new WebHdfsStore({
    nameNodes: cluster.nameNodeUrls,
    uriPrefix: 'hdfs://bench',
    user: 'bench',
    retries: 2,
    retryBaseMs: 50,
  });
  const rows = [
    ...(await oneFileJob('local', new LocalStore(), path.join(dir, 'local'), file)),
    ...(await oneFileJob('hdfs', hdfs, '/wh', file)),
  ];
  // S3 when a server is given (the RGW of scripts/rgw.sh: `set -a; . <(bash scripts/rgw.sh env)`).
  if (process.env.AWS_ENDPOINT_URL) {
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
    const s3 = new S3Store(await s3Settings(undefined, process.env));
    const bucket = `fixed-${Date.now().toString(36)}`;
    await s3.client.send(new CreateBucketCommand({ Bucket: bucket }));
    rows.push(...(await oneFileJob('s3', s3, `/${bucket}`, file)));
  }
  console.log('A one-file job, step by step, each step in this process (start-up excluded)\n');
  printTable(['step', 'store calls', 'requests', 'rounds', 'wall', 'calls by operation'], rows);
  console.log('\nrounds: sequential round trips (store calls made at once count as one).');
} finally {
  await cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
