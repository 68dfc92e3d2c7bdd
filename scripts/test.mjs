#!/usr/bin/env node
// `npm test`: starts the servers the suites need (Ceph RGW for S3), runs every test file with
// node's test runner, stops what it started. With CI set, a server that cannot start fails
// the run; elsewhere its store's suites are left out with a warning.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ci = Boolean(process.env.CI);
// HDFS runs on the project's own WebHDFS server, which every test file starts for itself.
const stores = ['local', 'hdfs'];
const env = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
const stops = [];

function sh(script, args, opts = {}) {
  return spawnSync('bash', [path.join(root, 'scripts', script), ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], ...opts });
}

function startS3() {
  if (process.env.STAGECOMMIT_TEST_S3_ENDPOINT) return true;
  if (process.env.STAGECOMMIT_TEST_S3 === 'off' && !ci) return false;
  const install = sh('rgw.sh', ['install']);
  const start = install.status === 0 ? sh('rgw.sh', ['start']) : install;
  if (start.status !== 0) {
    const msg = 'the S3 test server (Ceph RGW) could not be installed or started';
    if (ci) {
      console.error(`test: ${msg}; CI is set, so this run fails`);
      process.exit(1);
    }
    console.error(`test: warning: ${msg}: the S3 suites are left out (see scripts/rgw.sh)`);
    return false;
  }
  stops.push(() => sh('rgw.sh', ['stop']));
  for (const line of sh('rgw.sh', ['env']).stdout.trim().split('\n')) {
    const [k, ...v] = line.split('=');
    env[k] = v.join('=');
  }
  env.STAGECOMMIT_TEST_S3_ENDPOINT = env.AWS_ENDPOINT_URL;
  return true;
}

if (startS3()) stores.push('s3');
env.STAGECOMMIT_TEST_STORES = process.env.STAGECOMMIT_TEST_STORES ?? stores.join(',');
const only = process.argv.slice(2);
const dir = path.join(root, 'dist', 'test');
const files = only.length ? only : readdirSync(dir).filter((f) => f.endsWith('.test.js')).sort().map((f) => path.join(dir, f));
console.error(`test: stores ${env.STAGECOMMIT_TEST_STORES}`);
const child = spawn(process.execPath, ['--test', '--test-concurrency=2', ...files], { stdio: 'inherit', env });
const code = await new Promise((resolve) => child.on('close', (c) => resolve(c ?? 1)));
for (const stop of stops) stop();
process.exit(code);
