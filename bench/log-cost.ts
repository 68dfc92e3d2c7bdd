// Benchmark: what one commit costs as the table log grows. A one-file append job (stage, stage
// FILE, commit-task, commit-job, each in this process, start-up excluded) into tables whose log
// already holds 0, 10,000 and 100,000 finished entries (BENCH_LOG_SIZES); store calls, HTTP
// requests and wall time per commit, median of BENCH_LOG_RUNS (3), and each size against the
// empty log (goal: the same, within 5%). Local always; S3 when AWS_ENDPOINT_URL names a server
// (`set -a; . <(bash scripts/rgw.sh env)`). The filled logs are kept between runs (local:
// BENCH_LOG_DIR, default /tmp/stagecommit-bench-log; S3: bucket BENCH_LOG_BUCKET, default
// stagecommit-bench-log): filling 100,000 entries on RGW takes minutes. `fill` as the first
// argument only fills. Not part of the tests.

import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path, { posix } from 'node:path';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { commitLogDir } from '../src/job/layout.js';
import { encodeManifest } from '../src/manifest/encode.js';
import { commitJob } from '../src/steps/commit-job.js';
import { commitTask } from '../src/steps/commit-task.js';
import { stageFiles } from '../src/steps/stage-files.js';
import { stageJob } from '../src/steps/stage-job.js';
import { LocalStore } from '../src/store/local.js';
import { S3Store } from '../src/store/s3/s3-store.js';
import { s3Settings } from '../src/store/s3/settings.js';
import type { Store } from '../src/store/types.js';
import { forEachLimit } from '../src/util/pool.js';
import { benchEnv, printTable, seconds } from './helpers.js';

const sizes = (process.env.BENCH_LOG_SIZES ?? '0,10000,100000').split(',').map(Number);
const runs = Number(process.env.BENCH_LOG_RUNS ?? 3);
const fillOnly = process.argv[2] === 'fill';

const name = (n: number, ext: string) => `${String(n).padStart(20, '0')}.${ext}`;

/**
 * A log of `size` finished entries for the table at `target`, written as commits write them
 * (an entry and its done marker each; a week-old `atMs` is not needed: nothing here is old).
 * Skipped when the log was filled before (its marker file says so).
 */
async function fill(store: Store, target: string, size: number): Promise<void> {
  const log = commitLogDir(target);
  const marker = posix.join(posix.dirname(log), `bench-filled-${size}`);
  if (size === 0 || (await store.stat(marker))) return;
  const t = process.hrtime.bigint();
  const atMs = Date.now();
  await store.writeFile(
    posix.join(log, 'log-id.yaml'),
    encodeManifest({ kind: 'stagecommit/log-id', version: 1, id: '00000000-0000-4000-8000-000000000000' }),
  );
  const numbers = Array.from({ length: size }, (_, i) => i);
  let done = 0;
  await forEachLimit(numbers, 32, async (n) => {
    const jobId = `filled-${n}`;
    const staging = posix.join(posix.dirname(log), jobId);
    await store.writeFile(
      posix.join(log, name(n, 'yaml')),
      encodeManifest({
        kind: 'stagecommit/log-entry',
        version: 1,
        number: n,
        jobId,
        staging,
        handle: store.toUri(staging),
        touches: [''],
        replaces: [],
        atMs,
        at: new Date(atMs).toISOString(),
      }),
    );
    await store.writeFile(
      posix.join(log, name(n, 'done')),
      encodeManifest({ kind: 'stagecommit/log-done', version: 1, number: n, jobId, outcome: 'committed', atMs }),
    );
    if (++done % 10000 === 0) process.stderr.write(`  filled ${done} of ${size} entries of ${store.toUri(log)}\n`);
  });
  await store.writeFile(marker, 'filled\n');
  process.stderr.write(`  filled ${size} entries in ${seconds(t).toFixed(0)} s\n`);
}

interface Cost {
  readonly requests: number;
  readonly calls: number;
  readonly ms: number;
  readonly byStep: Record<string, { requests: number; calls: number; ms: number }>;
}

/** One one-file append job, step by step, in this process. */
async function oneCommit(store: Store, target: string, file: string, i: number): Promise<Cost> {
  const byStep: Cost['byStep'] = {};
  const step = async <T>(label: string, fn: (env: ReturnType<typeof benchEnv>) => Promise<T>): Promise<T> => {
    const env = benchEnv(store, 8);
    const t = process.hrtime.bigint();
    const out = await fn(env);
    const ms = seconds(t) * 1000;
    const { requests, ...ops } = env.store.metrics();
    const calls = Object.values(ops).reduce((a, n) => a + (n ?? 0), 0);
    byStep[label] = { requests: requests ?? calls, calls, ms };
    return out;
  };
  const { stagingPath } = await step('stage', (env) =>
    stageJob(env, {
      targetPath: target,
      mode: 'append',
      algorithm: 'v1',
      partition: [],
      partitionBy: [],
    }),
  );
  await step('stage FILE', (env) =>
    stageFiles(env, { stagingPath, task: '0', partition: [], files: [{ localPath: file, name: `part-${i}.csv` }] }),
  );
  await step('commit-task', (env) => commitTask(env, { stagingPath, task: '0' }));
  await step('commit-job', (env) => commitJob(env, { stagingPath }));
  const all = Object.values(byStep);
  return {
    requests: all.reduce((a, s) => a + s.requests, 0),
    calls: all.reduce((a, s) => a + s.calls, 0),
    ms: all.reduce((a, s) => a + s.ms, 0),
    byStep,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(label: string, store: Store, root: string, file: string): Promise<string[][]> {
  const rows: string[][] = [];
  let base: { requests: number; ms: number } | null = null;
  for (const size of sizes) {
    const target = posix.join(root, `t${size}`);
    await fill(store, target, size);
    if (fillOnly) continue;
    const costs: Cost[] = [];
    // One commit first, not counted: the process's first store calls (connections, code) cost more.
    await oneCommit(store, target, file, -1);
    for (let i = 0; i < runs; i++) costs.push(await oneCommit(store, target, file, i));
    const requests = median(costs.map((c) => c.requests));
    const ms = median(costs.map((c) => c.ms));
    base ??= { requests, ms };
    const steps = Object.keys(costs[0]!.byStep)
      .map(
        (s) =>
          `${s} ${median(costs.map((c) => c.byStep[s]!.requests))}/${median(costs.map((c) => c.byStep[s]!.ms)).toFixed(0)}`,
      )
      .join(', ');
    rows.push([
      `${label} ${size.toLocaleString('en')} entries`,
      String(requests),
      `${(requests / base.requests).toFixed(2)}×`,
      `${ms.toFixed(0)} ms`,
      `${(ms / base.ms).toFixed(2)}×`,
      steps,
    ]);
  }
  return rows;
}

const dir = process.env.BENCH_LOG_DIR ?? path.join(os.tmpdir(), 'stagecommit-bench-log');
mkdirSync(dir, { recursive: true });
const file = path.join(dir, 'part.csv');
writeFileSync(file, 'a,b\n1,2\n');
const rows: string[][] = [];
if (process.env.BENCH_LOG_STORES !== 's3')
  rows.push(...(await measure('local', new LocalStore(), path.join(dir, 'wh'), file)));
if (process.env.AWS_ENDPOINT_URL && process.env.BENCH_LOG_STORES !== 'local') {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const s3 = new S3Store(await s3Settings(undefined, process.env));
  const bucket = process.env.BENCH_LOG_BUCKET ?? 'stagecommit-bench-log';
  await s3.client.send(new CreateBucketCommand({ Bucket: bucket })).catch(() => undefined);
  rows.push(...(await measure('s3', s3, `/${bucket}/wh`, file)));
}
if (!fillOnly) {
  console.log(
    `=== one commit (stage, stage FILE, commit-task, commit-job; this process) as the table log grows, ${new Date().toISOString()}, load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
  printTable(['table', 'requests', 'vs 0', 'wall', 'vs 0', 'requests/ms by step'], rows);
  console.log(
    '\nrequests: HTTP requests on S3, store calls locally; median of',
    runs,
    'commits (goal: within 5% of 0 entries).',
  );
}
