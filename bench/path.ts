// Benchmark: the whole atomic path as users run it, each step its own process: `stage` (new job),
// `stage --task T FILE…` per task, `commit-task` per task, `commit-job`; against the plain,
// non-atomic upload of the same local files to the final place in the same run: `rclone copy`
// and `aws s3 cp --recursive` on S3 (Ceph RGW), `cp -r` locally, and `stage --move` against `mv`
// of the tree. Cases: 100 × 8 MiB, 2,000 × 1 KiB in 1, 10 and 100 tasks, 10,000 × 16 bytes
// (BENCH_PATH_CASES picks by name). Prints each part's
// wall time, the whole path, and ratios against the peers (above 1×: faster than the peer).
// BENCH_PATH_RUNS rounds (default 1), peers and ours in turns; the load average with the figures.
// Needs RGW (`scripts/rgw.sh start`) and the peers (scripts/bench-peers.sh). Not part of the tests.

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { S3Store } from '../src/store/s3/s3-store.js';
import { s3Settings } from '../src/store/s3/settings.js';
import { BIN, median, printTable, ROOT } from './helpers.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const RUNS = Number(process.env.BENCH_PATH_RUNS ?? 1);

interface Case {
  readonly name: string;
  readonly files: number;
  readonly size: number;
  readonly tasks: number;
}

const CASES: Case[] = [
  { name: 'large', files: 100, size: 8 * MiB, tasks: 1 },
  { name: 'small', files: 2000, size: KiB, tasks: 1 },
  { name: 'small-10-tasks', files: 2000, size: KiB, tasks: 10 },
  { name: 'small-100-tasks', files: 2000, size: KiB, tasks: 100 },
  { name: 'tiny-10000', files: 10_000, size: 16, tasks: 1 },
].filter((c) => !process.env.BENCH_PATH_CASES || process.env.BENCH_PATH_CASES.split(',').includes(c.name));

const STORES = (process.env.BENCH_PATH_STORES ?? 'local,s3').split(',');

function sh(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env, maxBuffer: 64 * MiB });
  if (r.status !== 0) throw new Error(`${cmd} ${args.slice(0, 3).join(' ')}… failed (${r.status}): ${r.stderr}`);
  return r.stdout.trim();
}

function time<T>(fn: () => T): [number, T] {
  const t = process.hrtime.bigint();
  const out = fn();
  return [Number(process.hrtime.bigint() - t) / 1e9, out];
}

/** The source tree: files spread over the tasks' dirs (`src/<task>/f-<i>`), random bytes. */
function makeSource(dir: string, c: Case): string[][] {
  const byTask: string[][] = Array.from({ length: c.tasks }, () => []);
  for (let t = 0; t < c.tasks; t++) mkdirSync(path.join(dir, String(t)), { recursive: true });
  for (let i = 0; i < c.files; i++) {
    const t = i % c.tasks;
    const f = path.join(dir, String(t), `f-${String(i).padStart(5, '0')}`);
    writeFileSync(f, Buffer.alloc(c.size, i % 251));
    byTask[t]!.push(f);
  }
  return byTask;
}

interface PathTimes {
  stage: number;
  commitTask: number;
  commitJob: number;
}

/**
 * Our path, step by step as separate processes; stage of each task's files runs as one process
 * per task, one after another (with --move: the files are consumed).
 */
function ours(targetUri: string, byTask: string[][], env: NodeJS.ProcessEnv, move = false): PathTimes {
  const node = process.execPath;
  const [t0, handle] = time(() => sh(node, [BIN, 'stage', '--target', targetUri, '--mode', 'append'], env));
  const extra = move ? ['--move'] : [];
  const [t1] = time(() => {
    byTask.forEach((files, t) =>
      sh(node, [BIN, 'stage', '--job', handle, '--task', String(t), '--quiet', ...extra, ...files], env),
    );
  });
  const [t2] = time(() =>
    byTask.forEach((_, t) => sh(node, [BIN, 'commit-task', '--job', handle, '--task', String(t)], env)),
  );
  const [t3] = time(() => sh(node, [BIN, 'commit-job', '--job', handle, '--quiet'], env));
  return { stage: t0 + t1, commitTask: t2, commitJob: t3 };
}

const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

const work = mkdtempSync(path.join(os.tmpdir(), 'stagecommit-path-'));
const rows: string[][] = [];
try {
  let s3env: NodeJS.ProcessEnv | null = null;
  let bucket = '';
  let rcloneConf = '';
  let s3: S3Store | null = null;
  if (STORES.includes('s3')) {
    spawnSync('bash', [path.join(ROOT, 'scripts', 'bench-peers.sh'), 'awscli', 'rclone'], { stdio: 'inherit' });
    const out = execFileSync('bash', [path.join(ROOT, 'scripts', 'rgw.sh'), 'env'], { encoding: 'utf8' });
    const vars = Object.fromEntries(
      out
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    const awsDir = path.join(work, 'aws');
    mkdirSync(awsDir);
    writeFileSync(path.join(awsDir, 'config'), '[default]\nregion = us-east-1\ns3 =\n  addressing_style = path\n');
    rcloneConf = path.join(awsDir, 'rclone.conf');
    writeFileSync(
      rcloneConf,
      `[rgw]\ntype = s3\nprovider = Ceph\nendpoint = ${vars.AWS_ENDPOINT_URL}\naccess_key_id = ${vars.AWS_ACCESS_KEY_ID}\nsecret_access_key = ${vars.AWS_SECRET_ACCESS_KEY}\nforce_path_style = true\n`,
    );
    const { AWS_CA_BUNDLE: _ca, ...rest } = process.env;
    s3env = { ...rest, ...vars, AWS_CONFIG_FILE: path.join(awsDir, 'config'), STAGECOMMIT_BUNDLE: '1' };
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
    Object.assign(process.env, vars);
    s3 = new S3Store(await s3Settings(undefined, { ...process.env, ...vars }));
    bucket = `path-${Date.now().toString(36)}`;
    await s3.client.send(new CreateBucketCommand({ Bucket: bucket }));
  }
  for (const c of CASES) {
    const src = path.join(work, `src-${c.name}`);
    const byTask = makeSource(src, c);
    const label = `${c.files.toLocaleString('en')} × ${c.size >= MiB ? `${c.size / MiB} MiB` : c.size >= KiB ? `${c.size / KiB} KiB` : `${c.size} B`}, ${c.tasks} task${c.tasks > 1 ? 's' : ''}`;
    const variants = STORES.flatMap((s) => (s === 'local' ? ['local', 'local --move'] : [s]));
    for (const store of variants) {
      const runs: { ours: PathTimes; peers: Record<string, number> }[] = [];
      for (let r = 0; r < RUNS; r++) {
        const peers: Record<string, number> = {};
        let mine: PathTimes;
        if (store === 's3') {
          const env = s3env!;
          const base = `${c.name}-${r}`;
          peers['rclone copy'] = time(() =>
            sh('rclone', ['--config', rcloneConf, 'copy', src, `rgw:${bucket}/${base}-rclone`], env),
          )[0];
          peers['aws s3 cp'] = time(() =>
            sh(
              '/usr/bin/aws',
              [
                '--endpoint-url',
                env.AWS_ENDPOINT_URL!,
                's3',
                'cp',
                '--recursive',
                '--quiet',
                src,
                `s3://${bucket}/${base}-aws`,
              ],
              env,
            ),
          )[0];
          mine = ours(`s3://${bucket}/${base}-ours`, byTask, env);
          // What the three uploaded goes, and the server's collector works it off before the next round.
          for (const p of ['rclone', 'aws', 'ours']) await s3!.delete(`/${bucket}/${base}-${p}`, true);
          await s3!.delete(`/${bucket}/.stagecommit`, true);
          spawnSync('bash', [path.join(ROOT, 'scripts', 'rgw.sh'), 'settle'], { stdio: 'ignore' });
        } else if (store === 'local') {
          const dst = path.join(work, `dst-${c.name}-${r}`);
          mkdirSync(dst);
          peers['cp -r'] = time(() => sh('cp', ['-r', src, path.join(dst, 'cp')]))[0];
          mine = ours(path.join(dst, 'ours'), byTask, { ...process.env, STAGECOMMIT_BUNDLE: '1' });
          rmSync(dst, { recursive: true, force: true });
        } else {
          // Moves consume their sources: each gets a fresh copy of the tree (not timed) on the same filesystem.
          const dst = path.join(work, `dst-${c.name}-${r}`);
          mkdirSync(dst);
          const [forMv, forOurs] = ['mv', 'ours'].map((p) => path.join(work, `src-${c.name}-${p}`));
          sh('cp', ['-r', src, forMv!]);
          sh('cp', ['-r', src, forOurs!]);
          sh('sync', []);
          peers['mv'] = time(() => sh('mv', [forMv!, path.join(dst, 'mv')]))[0];
          const moved = byTask.map((files) => files.map((f) => path.join(forOurs!, path.relative(src, f))));
          mine = ours(path.join(dst, 'ours'), moved, { ...process.env, STAGECOMMIT_BUNDLE: '1' }, true);
          rmSync(dst, { recursive: true, force: true });
          rmSync(forOurs!, { recursive: true, force: true });
        }
        runs.push({ ours: mine, peers });
      }
      const stage = median(runs.map((r) => r.ours.stage));
      const task = median(runs.map((r) => r.ours.commitTask));
      const job = median(runs.map((r) => r.ours.commitJob));
      const whole = median(runs.map((r) => r.ours.stage + r.ours.commitTask + r.ours.commitJob));
      const peerNames = Object.keys(runs[0]!.peers);
      const ratios = peerNames.map((p) => {
        const t = median(runs.map((r) => r.peers[p]!));
        return `${p} ${t.toFixed(2)} s: stage ${(t / stage).toFixed(2)}×, path ${(t / whole).toFixed(2)}×`;
      });
      rows.push([
        `${store} ${label}`,
        `${stage.toFixed(2)} s`,
        `${task.toFixed(2)} s`,
        `${job.toFixed(2)} s`,
        `${whole.toFixed(2)} s`,
        ratios.join('; '),
      ]);
      console.error(`  done: ${store} ${label} (load ${load()})`);
    }
    rmSync(src, { recursive: true, force: true });
  }
  console.log(
    `=== the whole atomic path, each step a process, ${new Date().toISOString()}, median of ${RUNS}, load ${load()}\n`,
  );
  printTable(
    ['case', 'stage', 'commit-task', 'commit-job', 'whole path', 'peer (same files to the final place)'],
    rows,
  );
  console.log('\nratios: peer time / ours (above 1×: ours is faster).');
} finally {
  rmSync(work, { recursive: true, force: true });
}
