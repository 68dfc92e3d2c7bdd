// Benchmark: commit-job of 10,000 small files in 100 partitions on the local filesystem, against
// `rsync -a --remove-source-files` on the same files in the same run. The rows that matter are
// appends into existing partitions, with 1, 10 and 100 tasks writing each partition (100: every
// task writes one file into every partition, as a shuffle-then-write job does). Each row runs
// BENCH_ROUNDS times (default 3), ours and rsync in turns, and prints medians and the median of
// the round-by-round ratios. BENCH_ALL=1 adds absent-target and new-partition rows and a shell
// loop of one `mv` per file; BENCH_TASKS=100,1 picks rows by tasks per partition. Where the disk
// reports them (/sys/class/block/*/stat), the discard (trim) requests each command caused are
// counted: on a filesystem mounted with `discard` every freed block is one. Not part of the tests.

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../src/store/local.js';
import { listTreeLocal } from '../src/store/local-tree.js';
import {
  benchEnv,
  existingPartitions,
  median,
  ROOT,
  fmt,
  plainTree,
  printTable,
  runStep,
  stagedJob,
  timed,
  type Shape,
} from './helpers.js';

const PARTITIONS = Number(process.env.BENCH_PARTITIONS ?? 100);
const FILES = Number(process.env.BENCH_FILES ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ALL = process.env.BENCH_ALL === '1';

interface Round {
  readonly ours: number;
  readonly rsync: number;
  readonly loop?: number;
  /**
   * Removing only the staging dir's directories, emptied as the commit leaves them: this filesystem's floor for that
   * part.
   */
  readonly rmdirFloor: number;
  readonly discards: { readonly ours: number; readonly rsync: number };
}

interface Row {
  readonly name: string;
  readonly rounds: readonly Round[];
  readonly dirs: number;
  readonly metrics: Record<string, number>;
}

/** Every command starts with the files its set-up wrote on disk, not in the middle of writing them back. */
function settle(): void {
  execFileSync('sync');
}

/** The block device holding `dir`'s filesystem, as /sys/class/block names it (undefined when not a plain device). */
function deviceOf(dir: string): string | undefined {
  let best: [string, string] | undefined;
  for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
    const [dev, at] = line.split(' ');
    if (!dev?.startsWith('/dev/') || !at) continue;
    if ((dir === at || dir.startsWith(at.endsWith('/') ? at : `${at}/`)) && (!best || at.length > best[1].length))
      best = [path.basename(dev), at];
  }
  return best?.[0];
}

const DEVICE = deviceOf(os.tmpdir());

/** Discard requests the device has completed so far (field 12 of its stat), NaN where unknown. */
function discards(): number {
  try {
    return Number(readFileSync(`/sys/class/block/${DEVICE}/stat`, 'utf8').trim().split(/\s+/)[11] ?? Number.NaN);
  } catch {
    return Number.NaN;
  }
}

/** Wall time of `fn`, and the discards the disk completed meanwhile (a sync first and after). */
async function measured(fn: () => unknown): Promise<{ seconds: number; discards: number }> {
  settle();
  const before = discards();
  const seconds = await timed(fn);
  settle();
  return { seconds, discards: discards() - before };
}

function rsync(src: string, dst: string): void {
  execFileSync('rsync', ['-a', '--remove-source-files', `${src}/`, `${dst}/`]);
}

function mvLoop(src: string, dst: string): Promise<number> {
  // Only mv per file, the directories made beforehand: the loop at its cheapest.
  execFileSync('bash', ['-c', `cd "${src}" && for d in */; do mkdir -p "${dst}/$d"; done`]);
  return timed(() => execFileSync('bash', ['-c', `cd "${src}" && for f in */*; do mv "$f" "${dst}/$f"; done`]));
}

/**
 * The directories `dirs` made again under `skeleton`, each emptied as a commit empties it (a file
 * written, then renamed out), and removed the way the CLI removes a tree: in a process of its
 * own with the CLI's thread pool, by removeTreeLocal. Returns the removal's wall time.
 */
function rmdirFloor(skeleton: string, dirs: readonly string[]): number {
  const out = `${skeleton}-moved`;
  mkdirSync(out, { recursive: true });
  dirs.forEach((d) => {
    mkdirSync(d, { recursive: true });
    writeFileSync(path.join(d, 'f'), 'x\n');
  });
  settle();
  dirs.forEach((d, i) => renameSync(path.join(d, 'f'), path.join(out, String(i))));
  const tree = new URL('../src/store/local-tree.js', import.meta.url).href;
  const script = `const { removeTreeLocal } = await import(${JSON.stringify(tree)}); const t = process.hrtime.bigint(); await removeTreeLocal(process.argv[1]); console.log(Number(process.hrtime.bigint() - t) / 1e9);`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, skeleton], {
    encoding: 'utf8',
    env: { ...process.env, UV_THREADPOOL_SIZE: '128' },
  });
  if (r.status !== 0) throw new Error(r.stderr);
  return Number(r.stdout.trim());
}

type Target = 'absent' | 'new partitions' | 'existing partitions';

/** One round: our commit and rsync of the same files, in the order `oursFirst` says, then the floor. */
async function round(
  target: Target,
  tasksPerPartition: number,
  oursFirst: boolean,
): Promise<Round & { dirs: number; metrics: Record<string, number> }> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'stagecommit-bench-'));
  const shape: Shape = { partitions: PARTITIONS, filesPerPartition: FILES / PARTITIONS, tasksPerPartition };
  const existing = target === 'existing partitions';
  try {
    const table = path.join(root, 'table');
    if (target !== 'absent') {
      mkdirSync(table, { recursive: true });
      if (existing) existingPartitions(table, PARTITIONS);
      else writeFileSync(path.join(table, 'README'), 'a table\n');
    }
    const mode = target === 'absent' ? 'create' : 'append';
    const staging = await stagedJob(benchEnv(new LocalStore()), {
      target: table,
      staging: path.join(root, 'staging'),
      mode,
      shape,
    });
    const skeleton = path.join(root, 'skeleton');
    const dirs = (await listTreeLocal(staging)).filter((e) => e.kind === 'dir').map((e) => path.join(skeleton, e.name));
    const [src, dst] = [path.join(root, 'rs-src'), path.join(root, 'rs-dst')];
    plainTree(src, shape);
    if (existing) existingPartitions(dst, PARTITIONS);

    let metrics: Record<string, number> = {};
    const runOurs = () => measured(async () => (metrics = (await runStep(['commit-job', '--job', staging])).metrics));
    const runRsync = () => measured(() => rsync(src, dst));
    const first = await (oursFirst ? runOurs() : runRsync());
    const second = await (oursFirst ? runRsync() : runOurs());
    const [ours, rs] = oursFirst ? [first, second] : [second, first];
    const floor = rmdirFloor(skeleton, dirs);
    let loop: number | undefined;
    if (ALL) {
      const [lsrc, ldst] = [path.join(root, 'loop-src'), path.join(root, 'loop-dst')];
      plainTree(lsrc, shape);
      if (existing) existingPartitions(ldst, PARTITIONS);
      settle();
      loop = await mvLoop(lsrc, ldst);
    }
    return {
      ours: ours.seconds,
      rsync: rs.seconds,
      loop,
      rmdirFloor: floor,
      discards: { ours: ours.discards, rsync: rs.discards },
      dirs: dirs.length,
      metrics,
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function scenario(target: Target, tasksPerPartition: number): Promise<Row> {
  const rounds: (Round & { dirs: number; metrics: Record<string, number> })[] = [];
  for (let r = 0; r < ROUNDS; r++) rounds.push(await round(target, tasksPerPartition, r % 2 === 0));
  return {
    name: `${target}, ${tasksPerPartition} task(s)/partition`,
    rounds,
    dirs: rounds[0]!.dirs,
    metrics: rounds[0]!.metrics,
  };
}

async function main(): Promise<void> {
  const peers = spawnSync('bash', [path.join(ROOT, 'scripts', 'bench-peers.sh'), 'rsync'], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (peers.status !== 0) {
    console.error('could not install rsync: run scripts/bench-peers.sh rsync as root');
    process.exit(2);
  }
  console.log(
    `commit-job of ${FILES} files in ${PARTITIONS} partitions (local filesystem, ${os.cpus().length} cores)\n`,
  );
  const cases: [Target, number][] = [
    ['existing partitions', 100],
    ['existing partitions', 10],
    ['existing partitions', 1],
  ];
  const only = process.env.BENCH_TASKS?.split(',').map(Number);
  if (only) cases.splice(0, cases.length, ...cases.filter(([, tpp]) => only.includes(tpp)));
  if (ALL) cases.push(['absent', 1], ['absent', 10], ['new partitions', 1], ['new partitions', 10]);
  const rows: Row[] = [];
  for (const [target, tpp] of cases) rows.push(await scenario(target, tpp));
  printRows(rows);
}

/** The table of the scenarios measured, and how to read it. */
function printRows(rows: readonly Row[]): void {
  const m = (r: Row, f: (x: Round) => number) => median(r.rounds.map(f));
  const count = (x: number) => (Number.isNaN(x) ? '-' : String(Math.round(x)));
  printTable(
    [
      'scenario',
      'stagecommit',
      'rsync',
      'vs rsync',
      'ratio by round',
      ...(ALL ? ['mv loop', 'vs loop'] : []),
      'dirs',
      'rmdir floor',
      'discards ours/rsync',
      'renames',
      'lists',
      'deletes',
    ],
    rows.map((r) => [
      r.name,
      fmt.s(m(r, (x) => x.ours)),
      fmt.s(m(r, (x) => x.rsync)),
      fmt.ratio(m(r, (x) => x.rsync / x.ours)),
      r.rounds.map((x) => (x.rsync / x.ours).toFixed(2)).join(' '),
      ...(ALL ? [fmt.s(m(r, (x) => x.loop!)), fmt.ratio(m(r, (x) => x.loop! / x.ours))] : []),
      String(r.dirs),
      fmt.s(m(r, (x) => x.rmdirFloor)),
      `${count(m(r, (x) => x.discards.ours))}/${count(m(r, (x) => x.discards.rsync))}`,
      String(r.metrics.rename ?? 0),
      String(r.metrics.list ?? 0),
      String(r.metrics.delete ?? 0),
    ]),
  );
  console.log(`\n${ROUNDS} round(s) a row, ours and rsync in turns; times are medians, "vs rsync" is the median of`);
  console.log("the rounds' ratios (rsync's time over ours: above 1, we are faster). stagecommit time is the whole");
  console.log('`stagecommit commit-job` process, start-up and removal of the staging dir included; rsync');
  console.log('--remove-source-files leaves its emptied source directories in place. "rmdir floor" removes the');
  console.log('staging dir\'s directories ("dirs") alone, each emptied as the commit empties it, in a process with');
  console.log('the CLI\'s thread pool: what this filesystem charges for that part of the commit. "discards" are the');
  console.log(
    `trim requests disk ${DEVICE ?? '(unknown)'} completed during each command: with a \`discard\` mount every freed block`,
  );
  console.log("is one, and a removed directory frees one block as rsync's removed source file does.");
}

await main();
