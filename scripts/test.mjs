#!/usr/bin/env node
// `npm test`: starts the servers the suites need (Ceph RGW for S3, an MIT KDC for secured
// HDFS), runs every test file with node's test runner, longest first, stops what it started.
// With CI set, a server that cannot start fails the run; elsewhere its store's suites are left
// out with a warning. The suites' CLI processes run the bundle, as the installed package does.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { finished } from 'node:stream/promises';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ci = Boolean(process.env.CI);
// HDFS runs on the project's own WebHDFS server, which every test file starts for itself.
const stores = ['local', 'hdfs'];
const env = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
const stops = [];

function sh(script, args, opts = {}) {
  return spawnSync('bash', [path.join(root, 'scripts', script), ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    ...opts,
  });
}

function startS3() {
  if (process.env.STAGECOMMIT_TEST_S3_ENDPOINT) return true;
  if (process.env.STAGECOMMIT_TEST_S3 === 'off' && !ci) return false;
  // A gateway already up (a developer's, started by hand) is used and left running.
  const wasRunning = sh('rgw.sh', ['status']).status === 0;
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
  if (!wasRunning) stops.push(() => sh('rgw.sh', ['stop']));
  for (const line of sh('rgw.sh', ['env']).stdout.trim().split('\n')) {
    const [k, ...v] = line.split('=');
    env[k] = v.join('=');
  }
  env.STAGECOMMIT_TEST_S3_ENDPOINT = env.AWS_ENDPOINT_URL;
  return true;
}

/**
 * A private MIT KDC (scripts/kdc.sh) for the secured HDFS store, hdfs-kerberos: the WebHDFS test
 * server verifies SPNEGO tickets with GSSAPI, the suites' processes hold tester's ticket.
 */
function startKdc() {
  if (process.env.STAGECOMMIT_TEST_KDC === 'off' && !ci) return false;
  // A KDC already up (another run's, or started by hand) is used and left running.
  const wasRunning = sh('kdc.sh', ['status']).status === 0;
  const install = sh('kdc.sh', ['install']);
  const start = install.status === 0 ? sh('kdc.sh', ['start']) : install;
  const env_ = start.status === 0 ? sh('kdc.sh', ['env']) : start;
  let gss = env_.status === 0;
  if (gss) {
    // The GSSAPI binding (the optional package 'kerberos') must load, as a kerberised user's would.
    gss = spawnSync(process.execPath, ['-e', "require('kerberos')"], { cwd: root, stdio: 'ignore' }).status === 0;
  }
  if (!gss) {
    const msg =
      "the Kerberos KDC (scripts/kdc.sh) could not be installed or started, or the 'kerberos' package not loaded";
    if (ci) {
      console.error(`test: ${msg}; CI is set, so this run fails`);
      process.exit(1);
    }
    console.error(`test: warning: ${msg}: the hdfs-kerberos suites are left out`);
    return false;
  }
  if (!wasRunning) stops.push(() => sh('kdc.sh', ['stop']));
  for (const line of env_.stdout.trim().split('\n')) {
    const [k, ...v] = line.split('=');
    env[k] = v.join('=');
  }
  return true;
}

/**
 * The suites' CLI processes run the bundle, as the installed package does (STAGECOMMIT_BUNDLE=1
 * tells bin/stagecommit.js so), built now from the sources: the tsc output's many modules take a
 * third longer to start, and every suite starts hundreds of processes.
 */
function buildBundle() {
  const built = spawnSync(process.execPath, [path.join(root, 'scripts', 'bundle.mjs')], { stdio: 'inherit' });
  if (built.status !== 0) process.exit(1);
}

/**
 * Longest first, so that the two workers end together (measured with every store). `node --test`
 * sorts the files it is given by name; run() takes them in this order. Files not named here
 * follow in name order. Only files with a source in test/ run: a compiled test whose source was
 * removed is stale.
 */
const LONGEST_FIRST = [
  'simulate',
  'adversarial',
  'adopt-engines',
  'concurrency',
  'crash',
  'protocol-steps',
  'damaged-manifests',
  'adopt-safety',
  'protocol-modes',
  'kill',
  'reruns',
  'tempfiles',
  'orphans',
  'writers',
  'uris',
  'examples',
];

function testFiles() {
  const dir = path.join(root, 'dist', 'test');
  const names = readdirSync(path.join(root, 'test'))
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => f.slice(0, -'.test.ts'.length))
    .sort();
  const rank = (n) => (LONGEST_FIRST.includes(n) ? LONGEST_FIRST.indexOf(n) : LONGEST_FIRST.length);
  return names.sort((a, b) => rank(a) - rank(b)).map((n) => path.join(dir, `${n}.test.js`));
}

if (startS3()) stores.push('s3');
if (startKdc()) stores.push('hdfs-kerberos');
env.STAGECOMMIT_TEST_STORES = process.env.STAGECOMMIT_TEST_STORES ?? stores.join(',');
buildBundle();
env.STAGECOMMIT_BUNDLE = '1';
const only = process.argv.slice(2).map((f) => path.resolve(f));
const files = only.length ? only : testFiles();
console.error(`test: stores ${env.STAGECOMMIT_TEST_STORES}`);
// Each file in a process of its own, two at a time, as `node --test --test-concurrency=2` runs them.
Object.assign(process.env, env);
let failed = false;
const report = run({ files, concurrency: 2 })
  // A todo test that fails is expected to (a known defect): it does not fail the run.
  .on('test:fail', (e) => (failed ||= !e.todo))
  .compose(spec);
report.pipe(process.stdout);
await finished(report);
for (const stop of stops) stop();
process.exit(failed ? 1 : 0);
