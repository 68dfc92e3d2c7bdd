// Benchmark: `stagecommit commit-job` on Ceph RGW against `aws s3 mv --recursive` (Debian's awscli)
// and `rclone move --transfers 16 --checkers 16` over the same data in the same run: 2,000 × 1 KiB
// in 20 partitions; 100 × 8 MiB in 10 partitions staged by `stage FILE` (pending uploads) and by
// an outside writer (copies), the peers' sources uploaded both as single parts and as multipart
// objects; one 1 KiB file step by step; and the size at which completing a
// pending upload beats copying. Prints times, ratios and requests per file.
// Needs RGW (`scripts/rgw.sh install && scripts/rgw.sh start`) and the peers (scripts/bench-peers.sh).

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { S3Store } from '../src/store/s3/s3-store.js';
import { s3Settings } from '../src/store/s3/settings.js';
import { testEnv } from '../testing/lib.js';
import { stageJob } from '../src/steps/stage-job.js';
import { stageFiles } from '../src/steps/stage-files.js';
import { commitTask } from '../src/steps/commit-task.js';
import { commitJob } from '../src/steps/commit-job.js';
import { JobLayout, taskAttemptName } from '../src/job/layout.js';
import { forEachLimit } from '../src/util/pool.js';
import { copiesInFlight } from '../src/plan/apply.js';
import { BIN, median, ROOT } from './helpers.js';

const KiB = 1024;
const MiB = 1024 * KiB;

function rgwEnv(): Record<string, string> {
  const start = spawnSync('bash', [path.join(ROOT, 'scripts', 'rgw.sh'), 'start'], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (start.status !== 0)
    throw new Error('RGW is not running and could not be started: scripts/rgw.sh install && scripts/rgw.sh start');
  const out = execFileSync('bash', [path.join(ROOT, 'scripts', 'rgw.sh'), 'env'], { encoding: 'utf8' });
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

/**
 * The server's garbage collector works off what earlier deletes left before each timed command:
 * otherwise the collection of one case's 800 MiB runs inside the next command (measured: our
 * 100 × 8 MiB copy commit 5.1–5.8 s right after the stage FILE case's deletes, 3.4–4.0 s first).
 */
function settle(): void {
  execFileSync('bash', [path.join(ROOT, 'scripts', 'rgw.sh'), 'settle']);
}

function time(fn: () => void): number {
  const t = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t) / 1e9;
}

async function timeAsync(fn: () => Promise<unknown>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e9;
}

const peers = spawnSync('bash', [path.join(ROOT, 'scripts', 'bench-peers.sh'), 'awscli', 'rclone'], {
  stdio: ['ignore', 'inherit', 'inherit'],
});
if (peers.status !== 0) throw new Error('could not install the peer tools: run scripts/bench-peers.sh as root');
// The SDK in this process reads credentials from the environment, so the server's go there too.
Object.assign(process.env, rgwEnv(), { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' });
const env: Record<string, string | undefined> = { ...process.env };
const store = new S3Store(await s3Settings(undefined, env));
const bucket = `bench-${Date.now().toString(36)}`;
await store.client.send(new CreateBucketCommand({ Bucket: bucket }));
const work = mkdtempSync(path.join(os.tmpdir(), 'bench-s3-'));
const stepEnv = () => testEnv(store, undefined, { concurrency: 32 });

/**
 * The peers' sources: each object one PutObject ('single'), or a multipart upload of 8 MiB parts
 * ('multipart', as `aws s3 cp` uploads a file of 8 MiB or more). RGW copies a multipart object by
 * reference to its parts, a shortcut AWS S3 does not take: both are shown.
 */
type SourceKind = 'single' | 'multipart';
const PEER_PART = 8 * MiB;

async function putObjects(keys: readonly string[], body: Buffer, kind: SourceKind = 'single'): Promise<void> {
  await forEachLimit(keys, 16, async (Key) => {
    if (kind === 'single') {
      await store.client.send(new PutObjectCommand({ Bucket: bucket, Key, Body: body }));
      return;
    }
    const { UploadId } = await store.client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key }));
    const Parts: { ETag: string; PartNumber: number }[] = [];
    for (let at = 0, n = 1; at < body.length || n === 1; at += PEER_PART, n++) {
      const Body = body.subarray(at, at + PEER_PART);
      const r = await store.client.send(new UploadPartCommand({ Bucket: bucket, Key, UploadId, PartNumber: n, Body }));
      Parts.push({ ETag: r.ETag!, PartNumber: n });
    }
    await store.client.send(
      new CompleteMultipartUploadCommand({ Bucket: bucket, Key, UploadId, MultipartUpload: { Parts } }),
    );
  });
}

function names(files: number, partitions: number): string[] {
  return Array.from(
    { length: files },
    (_, i) => `dt=2026-11-${String(i % partitions).padStart(2, '0')}/part-${String(i).padStart(5, '0')}.bin`,
  );
}

/** A job whose tasks (one per partition) are staged by `how` and committed; returns its handle. */
async function stagedJob(
  table: string,
  files: string[],
  partitions: number,
  body: Buffer,
  how: 'writer' | 'stage-file',
): Promise<{ handle: string; stagingPath: string; taskCommits: number }> {
  const e = stepEnv();
  const { stagingPath, job } = await stageJob(e, {
    targetPath: `/${bucket}/wh/${table}`,
    mode: 'create',
    algorithm: 'v1',
    partition: [],
    partitionBy: ['dt'],
  });
  const layout = new JobLayout(stagingPath);
  const taskOf = (i: number) => String(i % partitions);
  if (how === 'writer') {
    await putObjects(
      files.map(
        (n, i) => `${layout.attemptDir(0, taskAttemptName(job.jobId, taskOf(i), 0)).slice(bucket.length + 2)}/${n}`,
      ),
      body,
    );
  } else {
    const local = path.join(work, `body-${body.length}`);
    writeFileSync(local, body);
    await forEachLimit(
      Array.from({ length: partitions }, (_, t) => t),
      4,
      async (t) => {
        const mine = files.filter((_, i) => i % partitions === t);
        const [dt] = mine[0]!.split('/');
        await stageFiles(stepEnv(), {
          stagingPath,
          task: String(t),
          partition: [{ column: 'dt', value: dt!.slice(3) }],
          files: mine.map((n) => ({ localPath: local, name: path.posix.basename(n) })),
        });
      },
    );
  }
  // Timed too: on S3 an outside writer's large files are copied here (into pending uploads).
  const taskCommits = await timeAsync(() =>
    forEachLimit(
      Array.from({ length: partitions }, (_, t) => t),
      8,
      async (t) => void (await commitTask(stepEnv(), { stagingPath, task: String(t) })),
    ),
  );
  return { handle: store.toUri(stagingPath), stagingPath, taskCommits };
}

/** `stagecommit commit-job` as a process (start-up included); its wall time and --json metrics. */
function cliCommitJob(handle: string): { wall: number; metrics: Record<string, number> } {
  let metrics: Record<string, number> = {};
  const wall = time(() => {
    // BENCH_PARALLELISM: store operations in flight for our commit (default: the config's, 32).
    const parallelism = process.env.BENCH_PARALLELISM ? ['--parallelism', process.env.BENCH_PARALLELISM] : [];
    // BENCH_VERBOSE=1: our commit's phases and store operation counts on stderr.
    const verbose = process.env.BENCH_VERBOSE === '1' ? ['--verbose'] : [];
    const r = spawnSync(process.execPath, [BIN, 'commit-job', '--job', handle, '--json', ...parallelism, ...verbose], {
      encoding: 'utf8',
      env,
    });
    if (r.status !== 0) throw new Error(r.stderr);
    if (verbose.length) process.stderr.write(r.stderr);
    metrics = JSON.parse(r.stdout).metrics;
  });
  return { wall, metrics };
}

const awsDir = path.join(work, 'aws');
execFileSync('mkdir', ['-p', awsDir]);
writeFileSync(path.join(awsDir, 'config'), '[default]\nregion = us-east-1\ns3 =\n  addressing_style = path\n');
const rcloneConf = path.join(awsDir, 'rclone.conf');
writeFileSync(
  rcloneConf,
  `[rgw]\ntype = s3\nprovider = Ceph\nendpoint = ${env.AWS_ENDPOINT_URL}\naccess_key_id = ${env.AWS_ACCESS_KEY_ID}\nsecret_access_key = ${env.AWS_SECRET_ACCESS_KEY}\nforce_path_style = true\n`,
);

/** `aws s3 mv --recursive` and `rclone move` of the same objects (uploaded first, not timed). */
async function peerTimes(files: string[], body: Buffer, kind: SourceKind): Promise<{ aws: number; rclone: number }> {
  await putObjects(
    files.map((n) => `src-aws/${n}`),
    body,
    kind,
  );
  const awsEnv = { ...env, AWS_CONFIG_FILE: path.join(awsDir, 'config'), AWS_CA_BUNDLE: '' };
  settle();
  const aws = time(() =>
    execFileSync(
      '/usr/bin/aws',
      [
        '--endpoint-url',
        env.AWS_ENDPOINT_URL!,
        's3',
        'mv',
        '--recursive',
        '--only-show-errors',
        `s3://${bucket}/src-aws/`,
        `s3://${bucket}/dst-aws/`,
      ],
      { env: awsEnv },
    ),
  );
  await store.delete(`/${bucket}/dst-aws`, true);
  await putObjects(
    files.map((n) => `src-rclone/${n}`),
    body,
    kind,
  );
  const { AWS_CA_BUNDLE: _ca, ...rcloneEnv } = env;
  settle();
  const rclone = time(() =>
    execFileSync(
      'rclone',
      [
        '--config',
        rcloneConf,
        'move',
        `rgw:${bucket}/src-rclone`,
        `rgw:${bucket}/dst-rclone`,
        '--transfers',
        '16',
        '--checkers',
        '16',
      ],
      { env: rcloneEnv },
    ),
  );
  await store.delete(`/${bucket}/dst-rclone`, true);
  return { aws, rclone };
}

const rows: string[] = [];
type Ours = { wall: number; metrics: Record<string, number>; taskCommits: number };
const runs = (xs: readonly number[]): string =>
  xs.length > 1 ? ` (runs: ${xs.map((x) => x.toFixed(2)).join(', ')})` : '';

function row(
  label: string,
  ours: readonly Ours[],
  files: number,
  peer: { aws: number[]; rclone: number[] },
  goals: string,
): void {
  const m = ours[0]!.metrics;
  const wall = median(ours.map((o) => o.wall));
  // Ratios are taken run by run (a run's peers against the same run's commit), then the median.
  const ratio = (peers: number[]) => median(peers.map((p, i) => p / ours[i]!.wall)).toFixed(2);
  rows.push(
    `${label}\n  stagecommit commit-job ${wall.toFixed(2)} s${runs(ours.map((o) => o.wall))}, ${m.requests} requests = ${((m.requests ?? 0) / files).toFixed(3)}/file (complete ${m.complete ?? 0}, copy ${m.copy ?? 0})\n` +
      `  aws s3 mv ${median(peer.aws).toFixed(2)} s${runs(peer.aws)} → ${ratio(peer.aws)}×   rclone move ${median(peer.rclone).toFixed(2)} s${runs(peer.rclone)} → ${ratio(peer.rclone)}×   (goals: ${goals})\n` +
      // The task commits before it (in-process, 8 at once, as an engine's tasks would): what moved there is not hidden.
      `  before it, the task commits ${median(ours.map((o) => o.taskCommits)).toFixed(2)} s (in-process, 8 at once); both together against rclone move: ${median(peer.rclone.map((p, i) => p / (ours[i]!.wall + ours[i]!.taskCommits))).toFixed(2)}×`,
  );
  console.log(rows.at(-1));
}

/** One measured case: `files` files of `size` bytes in `partitions` partitions, staged each way in `hows`. */
interface ManyCase {
  readonly label: string;
  readonly files: number;
  readonly partitions: number;
  readonly size: number;
  readonly hows: readonly ('writer' | 'stage-file')[];
  readonly goals: string;
  readonly rounds?: number;
  /** How the peers' sources are uploaded: each kind a pair of peer runs a round (default: single). */
  readonly sources?: readonly SourceKind[];
}

async function caseMany(c: ManyCase): Promise<void> {
  const { label, files, partitions, size, hows, goals, rounds = 1, sources = ['single'] } = c;
  const fileNames = names(files, partitions);
  const body = Buffer.alloc(size, 'x');
  const ours: Record<string, Ours[]> = {};
  const peers = new Map(sources.map((k) => [k, { aws: [] as number[], rclone: [] as number[] }]));
  const peer = peers.get(sources[0]!)!;
  const floor: Floor[] = [];
  // Each round times every command once, in turn, so a drift in the machine's speed hits all alike.
  for (let r = 0; r < rounds; r++) {
    for (const how of hows) {
      const { handle, taskCommits } = await stagedJob(`${how}-${files}-${r}`, fileNames, partitions, body, how);
      settle();
      (ours[how] ??= []).push({ ...cliCommitJob(handle), taskCommits });
      await store.delete(`/${bucket}/wh/${how}-${files}-${r}`, true);
    }
    // BENCH_PEERS=0 skips aws and rclone (a quick look at our own figures).
    for (const [kind, times] of peers) {
      const p = process.env.BENCH_PEERS === '0' ? { aws: NaN, rclone: NaN } : await peerTimes(fileNames, body, kind);
      times.aws.push(p.aws);
      times.rclone.push(p.rclone);
    }
    if (hows.includes('writer')) floor.push(await copyFloor(fileNames, body));
  }
  for (const how of hows)
    for (const [kind, times] of peers)
      row(
        `${label}, staged by ${how === 'writer' ? 'an outside writer (--print-path)' : 'stage FILE'}${peers.size > 1 ? `; peers' sources ${kind === 'single' ? 'single-part' : 'multipart (8 MiB parts)'}` : ''}`,
        ours[how]!,
        files,
        times,
        goals,
      );
  if (floor.length) floorRows(files, floor, ours.writer!, peer.aws, peer.rclone);
}

interface Floor {
  readonly copies: number;
  readonly deletes: number;
  /** The same copies and deletes, each source deleted once copied (rclone move's schedule). */
  readonly overlapped: number;
  /**
   * A CLI process that loads the S3 code, asks the store once and exits (`stagecommit jobs` of a path that is not
   * there, exit 2).
   */
  readonly startup: number;
  /** `node -e 0`: what any Node process costs before a line of ours runs. */
  readonly bareNode: number;
  /** `stagecommit --version`: Node and our bundle, no store. */
  readonly version: number;
  /**
   * The commit protocol alone: an in-process commit-job of one 1 KiB file an outside writer staged (its reads, commit
   * point, one copy, `_SUCCESS`, clean-up).
   */
  readonly protocol: number;
  readonly atOnce: number;
}

/**
 * What the server alone needs for the work a commit of outside writers' files must do: the same
 * CopyObject requests, as many at a time as the commit sends (copiesInFlight: 16 of 8 MiB, 32 of
 * 1 KiB), then DeleteObjects of the sources, in-process, nothing else; the same with the deletes
 * overlapping the copies, as rclone move schedules them; and what a process of ours needs to start
 * and reach the store. If half of aws's time is below their sum, "2× aws s3 mv" is out of reach on
 * this machine; if rclone's time is below bare Node's start plus the overlapped work, so is
 * "faster than rclone move" for any Node process.
 */
async function copyFloor(files: string[], body: Buffer): Promise<Floor> {
  const keys = files.map((n) => `/${bucket}/floor/${n}`);
  await putObjects(
    keys.map((k) => k.slice(bucket.length + 2)),
    body,
  );
  settle();
  const atOnce = copiesInFlight(
    keys.map(() => ({ op: 'copy' as const, from: 's:x', to: 't:x', size: body.length })),
    32,
  );
  const copies = await timeAsync(() => forEachLimit(keys, atOnce, (k) => store.copy(k, `${k}.copy`)));
  const deletes = await timeAsync(() => store.deleteMany(keys));
  // rclone's schedule: each source deleted once its copy is done (here in DeleteObjects batches
  // sent while the other copies go on), so the deletes overlap the copies. The copies above go
  // first: the server holds one case's data at a time, as it does for every other command timed.
  await store.delete(`/${bucket}/floor`, true);
  await putObjects(
    keys.map((k) => k.slice(bucket.length + 2)),
    body,
  );
  settle();
  const overlapped = await timeAsync(async () => {
    let pending: string[] = [];
    let sending: Promise<void> = Promise.resolve();
    const flush = () => {
      const batch = pending;
      pending = [];
      sending = sending.then(() => store.deleteMany(batch));
    };
    await forEachLimit(keys, atOnce, async (k) => {
      await store.copy(k, `${k}.moved`);
      pending.push(k);
      if (pending.length >= atOnce / 2) flush();
    });
    if (pending.length) flush();
    await sending;
  });
  await store.delete(`/${bucket}/floor`, true);
  const startup = time(() =>
    spawnSync(process.execPath, [BIN, 'jobs', `s3://${bucket}/not-there`], { env, stdio: 'ignore' }),
  );
  const bareNode = time(() => spawnSync(process.execPath, ['-e', '0'], { env, stdio: 'ignore' }));
  const version = time(() => spawnSync(process.execPath, [BIN, '--version'], { env, stdio: 'ignore' }));
  const one = await stagedJob('floor-one', ['dt=1/part-0.bin'], 1, Buffer.alloc(1024, 'x'), 'writer');
  const protocol = await timeAsync(() => commitJob(stepEnv(), { stagingPath: one.stagingPath }));
  await store.delete(`/${bucket}/wh/floor-one`, true);
  return { copies, deletes, overlapped, startup, bareNode, version, protocol, atOnce };
}

function floorRows(
  files: number,
  floor: readonly Floor[],
  ours: readonly Ours[],
  aws: readonly number[],
  rclone: readonly number[],
): void {
  const m = (f: (x: Floor) => number) => median(floor.map(f));
  const sum = (x: Floor) => x.copies + x.deletes;
  const least = (x: Floor) => Math.min(sum(x), x.overlapped);
  rows.push(
    `  the server's floor, in-process: ${files} CopyObject ${floor[0]!.atOnce} at a time ${m((x) => x.copies).toFixed(2)} s + DeleteObjects of the sources ${m((x) => x.deletes).toFixed(2)} s = ${m(sum).toFixed(2)} s${runs(floor.map(sum))}\n` +
      `  a CLI process that starts, makes one request and exits: ${m((x) => x.startup).toFixed(2)} s (node -e 0: ${m((x) => x.bareNode).toFixed(2)} s, stagecommit --version: ${m((x) => x.version).toFixed(2)} s); floor + start-up ${m((x) => sum(x) + x.startup).toFixed(2)} s against half of aws's time ${(median(aws) / 2).toFixed(2)} s\n` +
      `  (commit-job is ${median(ours.map((o, i) => o.wall - sum(floor[i]!))).toFixed(2)} s over the floor, run by run)\n` +
      `  the same work on rclone's schedule (each source deleted once copied, deletes overlapping copies): ${m((x) => x.overlapped).toFixed(2)} s${runs(floor.map((x) => x.overlapped))};\n` +
      `  with node -e 0, the least any Node process doing it could take, no commit protocol at all: ${m((x) => x.overlapped + x.bareNode).toFixed(2)} s against rclone move ${median(rclone).toFixed(2)} s (${(median(rclone) / m((x) => x.overlapped + x.bareNode)).toFixed(2)}×)\n` +
      // Where commit-job's time goes: each part measured alone, in this run. What is not the server's
      // or Node's is the CLI's load (bundle and SDK) and the protocol's sequential round trips.
      `  where it goes: the CLI's start-up ${m((x) => x.startup).toFixed(2)} s (Node ${m((x) => x.bareNode).toFixed(2)}, bundle, SDK and one request ${m((x) => x.startup - x.bareNode).toFixed(2)}) + the commit protocol for one file, in-process, ${m((x) => x.protocol).toFixed(2)} s + the server's floor ${m(least).toFixed(2)} s = ${m((x) => x.startup + x.protocol + least(x)).toFixed(2)} s; commit-job ${median(ours.map((o) => o.wall)).toFixed(2)} s`,
  );
  console.log(rows.at(-1));
}

/** Each step of a one-file job: wall time as a process, requests counted in-process. */
async function caseOneFile(): Promise<void> {
  const local = path.join(work, 'one.csv');
  writeFileSync(local, Buffer.alloc(KiB, 'x'));
  const steps: [string, string[]][] = [];
  const target = store.toUri(`/${bucket}/wh/one-cli`);
  let handle = '';
  const run = (args: string[]) => {
    const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env });
    if (r.status !== 0) throw new Error(r.stderr);
    return r.stdout.trim();
  };
  const walls: number[] = [];
  walls.push(time(() => (handle = run(['stage', '--target', target, '--partition-by', 'dt']))));
  steps.push(['stage (job)', []], ['stage FILE', []], ['commit-task', []], ['commit-job', []]);
  walls.push(time(() => run(['stage', '--job', handle, '--task', '0', '--partition', 'dt=1', local])));
  walls.push(time(() => run(['commit-task', '--job', handle, '--task', '0'])));
  walls.push(time(() => run(['commit-job', '--job', handle])));
  const counts: number[] = [];
  const inProc: number[] = [];
  let stagingPath = '';
  const count = async (fn: (e: ReturnType<typeof stepEnv>) => Promise<unknown>) => {
    const e = stepEnv();
    inProc.push(await timeAsync(() => fn(e)));
    counts.push(e.store.metrics().requests ?? 0);
  };
  await count(
    async (e) =>
      ({ stagingPath } = await stageJob(e, {
        targetPath: `/${bucket}/wh/one-lib`,
        mode: 'create',
        algorithm: 'v1',
        partition: [],
        partitionBy: ['dt'],
      })),
  );
  await count((e) =>
    stageFiles(e, {
      stagingPath,
      task: '0',
      partition: [{ column: 'dt', value: '1' }],
      files: [{ localPath: local, name: 'one.csv' }],
    }),
  );
  await count((e) => commitTask(e, { stagingPath, task: '0' }));
  await count((e) => commitJob(e, { stagingPath }));
  rows.push('one 1 KiB file, step by step (process wall time incl. start-up; in-process time; requests)');
  steps.forEach(([name], i) =>
    rows.push(`  ${name.padEnd(12)} ${walls[i]!.toFixed(2)} s   ${inProc[i]!.toFixed(2)} s   ${counts[i]} requests`),
  );
  console.log(rows.slice(-5).join('\n'));
}

/** Completing N pending uploads against copying N objects, 16 at a time, per size. */
async function caseCrossover(): Promise<void> {
  const n = Number(process.env.BENCH_CROSSOVER_FILES ?? 40);
  rows.push(`pending-upload completion vs server-side copy, ${n} files of each size, 16 at a time (files per second)`);
  for (const size of [KiB, 64 * KiB, 256 * KiB, MiB, 4 * MiB]) {
    const local = path.join(work, `x-${size}`);
    writeFileSync(local, Buffer.alloc(size, 'y'));
    const keys = Array.from({ length: n }, (_, i) => `/${bucket}/x/${size}/f${i}`);
    const ready = await Promise.all(
      keys.map(async (k) => {
        const uploadId = await store.beginUpload(`${k}.up`);
        return { path: `${k}.up`, uploadId, size, etags: await store.uploadParts(`${k}.up`, uploadId, local, size) };
      }),
    );
    await putObjects(
      keys.map((k) => k.slice(bucket.length + 2)),
      Buffer.alloc(size, 'y'),
    );
    const complete = await timeAsync(() => forEachLimit(ready, 16, (u) => store.completeUpload(u)));
    const copy = await timeAsync(() => forEachLimit(keys, 16, (k) => store.copy(k, `${k}.copy`)));
    rows.push(
      `  ${String(size / KiB).padStart(5)} KiB: complete ${(n / complete).toFixed(0)}/s, copy ${(n / copy).toFixed(0)}/s → ${complete < copy ? 'complete' : 'copy'} is cheaper`,
    );
    console.log(rows.at(-1));
    await store.delete(`/${bucket}/x`, true);
  }
}

try {
  // BENCH_ONLY=one,crossover,small,large picks cases (default: all).
  const only = (process.env.BENCH_ONLY ?? 'one,crossover,small,large').split(',');
  if (only.includes('one')) await caseOneFile();
  if (only.includes('crossover')) await caseCrossover();
  // BENCH_ROUNDS: runs of the 2,000-file case, each command once a round (medians are printed).
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  // BENCH_FILES scales it (default 2,000).
  const small = Number(process.env.BENCH_FILES ?? 2000);
  if (only.includes('small'))
    await caseMany({
      label: `${small.toLocaleString('en')} × 1 KiB in 20 partitions`,
      files: small,
      partitions: 20,
      size: KiB,
      hows: ['writer'],
      goals: '≥2× aws, faster than rclone',
      rounds,
    });
  // BENCH_LARGE_FILES scales the 8 MiB case (the test RGW's in-memory OSD holds 4 GiB and its
  // garbage collector, set by scripts/rgw.sh to run every 15 s, frees what the cases delete).
  const large = Number(process.env.BENCH_LARGE_FILES ?? 100);
  // BENCH_LARGE_ROUNDS: runs of the 8 MiB case (default 1: the test RGW holds little).
  const largeRounds = Number(process.env.BENCH_LARGE_ROUNDS ?? 1);
  if (only.includes('large'))
    await caseMany({
      label: `${large} × 8 MiB in 10 partitions`,
      files: large,
      partitions: 10,
      size: 8 * MiB,
      hows: ['stage-file', 'writer'],
      goals: 'stage FILE: ≥3× aws, ≥1× rclone; every row faster than both',
      rounds: largeRounds,
      sources: ['single', 'multipart'],
    });
  console.log(
    `\n=== S3 (Ceph RGW) commit-job, ${new Date().toISOString()}\n${rows.join('\n')}\nstagecommit times are whole processes (start-up included), as rclone's and aws's are.`,
  );
} finally {
  await store.delete(`/${bucket}`, true);
  rmSync(work, { recursive: true, force: true });
}
