// Benchmark: commit-job of 2,000 objects of 1 KiB in 20 partitions on Ceph RGW, against
// `aws s3 mv --recursive` (Debian's awscli) and `rclone move --transfers 16 --checkers 16`
// over the same data in the same run. Prints times, ratios and requests per file.
// Needs RGW: `scripts/rgw.sh install && scripts/rgw.sh start` (the script starts it if it can).

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { S3Store } from '../src/store/s3/s3-store.js';
import { s3Settings } from '../src/store/s3/settings.js';
import { testEnv } from '../test/helpers/lib.js';
import { stageJob } from '../src/steps/stage-job.js';
import { commitTask } from '../src/steps/commit-task.js';
import { JobLayout, taskAttemptName } from '../src/job/layout.js';
import { forEachLimit } from '../src/util/pool.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const BIN = path.join(root, 'bin', 'stagecommit.js');
const FILES = Number(process.env.BENCH_FILES ?? 2000);
const PARTITIONS = Number(process.env.BENCH_PARTITIONS ?? 20);
const BODY = Buffer.alloc(1024, 'x');

function rgwEnv(): Record<string, string> {
  const start = spawnSync('bash', [path.join(root, 'scripts', 'rgw.sh'), 'start'], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (start.status !== 0) throw new Error('RGW is not running and could not be started: scripts/rgw.sh install && scripts/rgw.sh start');
  const out = execFileSync('bash', [path.join(root, 'scripts', 'rgw.sh'), 'env'], { encoding: 'utf8' });
  return Object.fromEntries(out.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

function time(fn: () => void): number {
  const t = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t) / 1e9;
}

// The SDK in this process reads credentials from the environment, so the server's go there too.
Object.assign(process.env, rgwEnv(), { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' });
const env: Record<string, string | undefined> = { ...process.env };
const store = new S3Store(s3Settings(undefined, env));
const bucket = `bench-${Date.now().toString(36)}`;
await store.client.send(new CreateBucketCommand({ Bucket: bucket }));

async function upload(keys: string[]): Promise<void> {
  await forEachLimit(keys, 32, async (Key) => {
    await store.client.send(new PutObjectCommand({ Bucket: bucket, Key, Body: BODY }));
  });
}

const names = Array.from({ length: FILES }, (_, i) => `dt=2026-11-${String(i % PARTITIONS).padStart(2, '0')}/part-${String(i).padStart(5, '0')}.csv`);

// stagecommit: 20 tasks (one per partition) uploaded into their attempt dirs and committed.
const stepEnv = testEnv(store, undefined, { concurrency: 32 });
const { stagingPath, job } = await stageJob(stepEnv, { targetPath: `/${bucket}/wh/sales`, mode: 'create', algorithm: 'v1', partition: [], partitionBy: ['dt'] });
const layout = new JobLayout(stagingPath);
const taskOf = (i: number) => String(i % PARTITIONS);
await upload(names.map((n, i) => `${layout.attemptDir(0, taskAttemptName(job.jobId, taskOf(i), 0)).slice(bucket.length + 2)}/${n}`));
for (let t = 0; t < PARTITIONS; t++) await commitTask(stepEnv, { stagingPath, task: String(t) });
let metrics: Record<string, number> = {};
const ours = time(() => {
  const r = spawnSync(process.execPath, [BIN, 'commit-job', '--job', store.toUri(stagingPath), '--json'], { encoding: 'utf8', env });
  if (r.status !== 0) throw new Error(r.stderr);
  metrics = JSON.parse(r.stdout).metrics;
});

// aws s3 mv --recursive
await upload(names.map((n) => `src-aws/${n}`));
const awsDir = mkdtempSync(path.join(os.tmpdir(), 'bench-aws-'));
writeFileSync(path.join(awsDir, 'config'), '[default]\nregion = us-east-1\ns3 =\n  addressing_style = path\n');
const awsEnv = { ...env, AWS_CONFIG_FILE: path.join(awsDir, 'config'), AWS_CA_BUNDLE: '' };
const aws = time(() => execFileSync('/usr/bin/aws', ['--endpoint-url', env.AWS_ENDPOINT_URL!, 's3', 'mv', '--recursive', '--only-show-errors', `s3://${bucket}/src-aws/`, `s3://${bucket}/dst-aws/`], { env: awsEnv }));

// rclone move --transfers 16 --checkers 16
await upload(names.map((n) => `src-rclone/${n}`));
const rcloneConf = path.join(awsDir, 'rclone.conf');
writeFileSync(rcloneConf, `[rgw]\ntype = s3\nprovider = Ceph\nendpoint = ${env.AWS_ENDPOINT_URL}\naccess_key_id = ${env.AWS_ACCESS_KEY_ID}\nsecret_access_key = ${env.AWS_SECRET_ACCESS_KEY}\nforce_path_style = true\n`);
const { AWS_CA_BUNDLE: _ca, ...rcloneEnv } = env;
const rclone = time(() => execFileSync('rclone', ['--config', rcloneConf, 'move', `rgw:${bucket}/src-rclone`, `rgw:${bucket}/dst-rclone`, '--transfers', '16', '--checkers', '16'], { env: rcloneEnv }));
rmSync(awsDir, { recursive: true, force: true });

const requests = metrics.requests ?? 0;
console.log(`commit-job of ${FILES} objects of 1 KiB in ${PARTITIONS} partitions on Ceph RGW`);
console.log(`stagecommit commit-job:  ${ours.toFixed(2)} s   ${requests} requests = ${(requests / FILES).toFixed(3)} per file (copy ${metrics.copy}, delete ops ${metrics.delete}, list ${metrics.list})`);
console.log(`aws s3 mv --recursive:   ${aws.toFixed(2)} s   ratio ${(aws / ours).toFixed(1)}x (goal 3x)`);
console.log(`rclone move (16/16):     ${rclone.toFixed(2)} s   ratio ${(rclone / ours).toFixed(1)}x (goal 2x)`);
console.log('stagecommit time is the whole `stagecommit commit-job` process (start-up included).');
await store.delete(`/${bucket}`, true);
