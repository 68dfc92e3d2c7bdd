// Temp files (protocol.md §5.12) through the CLI: a `stage` killed mid-stream or mid-copy publishes no
// partial file, its temp is never output and the next commit-task removes it; a full disk
// (a small tmpfs, local only) fails the step with exit 1 and leaves no temp debris anywhere.

import assert from 'node:assert/strict';
import { spawn, execFileSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path, { posix } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test, type TestContext } from 'node:test';
import { TEMP_PREFIX } from '../src/store/temp-names.js';
import type { Store } from '../src/store/types.js';
import { assertFailed, BIN, cli } from '../testing/cli.js';
import { inProcess, okInProcess } from '../testing/main.js';
import { commitJob, commitTask, localFiles, prepare, stage, stageTask } from '../testing/jobs.js';
import { localFixture, storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { readTree } from '../testing/tree.js';
import { JobLayout } from '../src/job/layout.js';
import { claimRootPath, readClaim } from '../src/job/claims.js';

/** A temp name of ours, or the `.x.tmp-*` debris that earlier versions left. */
function isDebris(name: string): boolean {
  return name.startsWith(TEMP_PREFIX) || /\.tmp-/.test(name);
}

/** Every path under `dir` (recursive, through the store) whose name is temp debris. */
async function debris(store: Store, dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await store.list(dir)) {
    if (isDebris(e.name)) out.push(e.path);
    else if (e.kind === 'dir') out.push(...(await debris(store, e.path)));
  }
  return out;
}

interface Running {
  readonly child: ChildProcessWithoutNullStreams;
  readonly done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

/** Starts the CLI and leaves its stdin open, so a test can feed it and kill it mid-way. */
function start(args: readonly string[], env: Record<string, string>): Running {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  child.stdout.resume();
  child.stdin.on('error', () => undefined); // EPIPE once it is killed
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stderr })),
  );
  return { child, done };
}

/** Polls until `probe` finds something, the process ends, or `ms` pass; returns what it found. */
async function waitFor<T>(run: Running, ms: number, probe: () => Promise<T | undefined>): Promise<T | undefined> {
  let ended = false;
  void run.done.then(() => (ended = true));
  const until = Date.now() + ms;
  while (!ended && Date.now() < until) {
    const found = await probe();
    if (found !== undefined) return found;
    await sleep(2);
  }
  return undefined;
}

async function attemptDirOf(sb: StoreSandbox, job: string, task: string): Promise<string> {
  return sb.pathOf(await okInProcess(['stage', '--job', job, '--task', task, '--print-path'], { env: sb.env }));
}

function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

for (const fx of storeFixtures()) {
  describe(`temp files on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'tf');
    // Stores that write through a temp name (S3 uploads are invisible until complete).
    const makesTemps = fx.name !== 's3';

    test('a stage from stdin killed mid-stream publishes nothing; the next commit-task removes its temp', async () => {
      const target = posix.join(dir(), 'table');
      const job = await stage(sb, { target, tasks: 1 });
      const attemptDir = await attemptDirOf(sb, job, '0');
      const run = start(['stage', '--job', job, '--task', '0', '-', '--name', 'data.bin'], sb.env);
      run.child.stdin.write(randomBytes(256 * 1024));
      const temp = await waitFor(run, makesTemps ? 5000 : 1000, async () =>
        (await sb.store.list(attemptDir)).find((e) => e.name.startsWith(TEMP_PREFIX)),
      );
      run.child.kill('SIGKILL');
      const r = await run.done;
      assert.equal(r.signal, 'SIGKILL', `the stage was still reading stdin: ${r.stderr}`);
      if (makesTemps) assert.ok(temp, 'the bytes went to a temp name in the reserved pattern');
      assert.equal(
        await sb.store.stat(posix.join(attemptDir, 'data.bin')),
        null,
        'no partial file under the final name',
      );

      // A file named like a temp would be removed, never committed: stage refuses it up front.
      const [reserved] = await localFiles({ [`${TEMP_PREFIX}data.bin`]: 'x' });
      const refused = await cli(['stage', '--job', job, '--task', '0', reserved!, '--json'], { env: sb.env });
      assertFailed(refused, 2, { reason: 'file-name-reserved', name: `${TEMP_PREFIX}data.bin`, prefix: TEMP_PREFIX });
      // So is a name commit-task would leave out as a writer's marker, at any depth, or put under the job's own
      // _SUCCESS.
      for (const name of ['_SUCCESS', 'sub/._SUCCESS.crc', 'sub/_committed_7', '_SUCCESS/x']) {
        const stageIt = ['stage', '--job', job, '--task', '0', '--name', name, '-', '--json'];
        const m = await cli(stageIt, { env: sb.env, input: 'x' });
        assertFailed(m, 2, { reason: 'file-name-marker', name, successFile: '_SUCCESS' });
        // The words a user reads (a golden line).
        assert.match(
          m.stderr,
          new RegExp(
            `^stagecommit: error: file name '${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}': a writer's marker .* it would never be committed; rename it\n$`,
          ),
        );
      }

      await stageTask(sb, job, { task: '0', files: { 'good.csv': 'good\n' } });
      if (makesTemps)
        assert.equal((await debris(sb.store, attemptDir)).length, 1, 'the killed stage left its temp for commit-task');
      const ct = await commitTask(sb, job, '0');
      assert.equal(ct.code, 0, ct.stderr);
      assert.match(ct.stderr, /1 file\(s\)/, 'the claim records the good file only');
      assert.deepEqual(await debris(sb.store, sb.pathOf(job)), [], 'commit-task removed the temp');
      const cj = await commitJob(sb, job);
      assert.equal(cj.code, 0, cj.stderr);

      const tree = await readTree(sb.store, target);
      assert.deepEqual(Object.keys(tree), ['_SUCCESS', 'good.csv'], 'exactly the good file: no data.bin, no temp');
      assert.equal(tree['good.csv'], 'good\n');
      const listed = JSON.parse(tree._SUCCESS!).filenames as string[];
      assert.ok(
        listed.length === 1 && listed[0]!.endsWith('/good.csv'),
        `_SUCCESS lists the good file only: ${listed.join(', ')}`,
      );
      assert.equal(await sb.store.stat(sb.pathOf(job)), null, 'the staging dir is gone');
    });

    // A commit-task that refuses the attempt leaves it alone; one carried into committed output is
    // removed by commit-job.
    test("a stage's temp in flight is never published: left by a refused attempt, removed by commit-job", async () => {
      const target = posix.join(dir(), 'temps');
      const job = await stage(sb, { target, partitionBy: 'dt' });
      const layout = new JobLayout(sb.pathOf(job));
      const attempt = sb.pathOf(
        await okInProcess(['stage', '--job', job, '--task', '0', '--print-path'], { env: sb.env }),
      );
      const inFlight = posix.join(attempt, 'dt=1', `${TEMP_PREFIX}0123abcd-slow.csv`);
      await sb.store.writeFile(inFlight, 'half');
      await sb.store.writeFile(posix.join(attempt, 'dt=1', 'a.csv'), 'a');
      await sb.store.writeFile(posix.join(attempt, '_SUCCESS', 'inner'), 'x');
      const refused = await commitTask(sb, job, '0');
      assert.equal(refused.code, 2, refused.stderr);
      assert.ok(await sb.store.stat(inFlight), 'the refused commit-task changed nothing: the temp is still there');
      await sb.store.delete(posix.join(attempt, '_SUCCESS'), true);
      await sb.store.delete(inFlight, false);
      assert.equal((await commitTask(sb, job, '0')).code, 0);
      // A temp whose stage lost its race against the promotion, carried into the committed output.
      const claim = await readClaim(sb.store, layout, { jobId: posix.basename(layout.root), task: '0', appAttempt: 0 });
      const committedRoot = claimRootPath(layout, sb.pathOf(target), claim!.root!);
      const carried = posix.join(committedRoot, 'dt=1', `${TEMP_PREFIX}4567cdef-late.csv`);
      await sb.store.writeFile(carried, 'late');
      const cj = await commitJob(sb, job);
      assert.equal(cj.code, 0, cj.stderr);
      assert.deepEqual(Object.keys(await readTree(sb.store, target)).sort(), ['_SUCCESS', 'dt=1/a.csv']);
    });

    // recover, status and commit-job all go on.
    test('an empty temp a killed recover left among the decisions is never read as one: the steps go on', async () => {
      const target = posix.join(dir(), 'table');
      const job = await prepare(sb, { target, partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=0'], files: { a: 'a' } },
      ]);
      const decisions = new JobLayout(sb.pathOf(job)).decisionsDir(0);
      await sb.store.writeFile(posix.join(decisions, `${TEMP_PREFIX}0123456789ab-attempt_x_1_0.yaml`), '');
      for (const step of ['status', 'recover']) {
        const r = await cli([step, '--job', job], { env: sb.env });
        assert.equal(r.code, 0, `${step}: ${r.stderr}`);
      }
      const cj = await commitJob(sb, job);
      assert.equal(cj.code, 0, cj.stderr);
      assert.deepEqual(Object.keys(await readTree(sb.store, target)).sort(), ['_SUCCESS', 'dt=0/a']);
      assert.equal(await sb.store.stat(sb.pathOf(job)), null, 'the staging dir is gone, temp and all');
    });

    test('a stage FILE killed mid-copy publishes the whole file or nothing', async (t) => {
      const big = randomBytes(64 * 1024 * 1024);
      const [bigPath] = await localFiles({ 'big.bin': '' });
      await fs.writeFile(bigPath!, big);
      const target = posix.join(dir(), 'table');
      const job = await stage(sb, { target, tasks: 1 });
      const attemptDir = await attemptDirOf(sb, job, '0');
      const run = start(['stage', '--job', job, '--task', '0', bigPath!], sb.env);
      run.child.stdin.end();
      // Killed as soon as anything shows in the attempt dir: a copy to the final name dies half done.
      const seen = await waitFor(run, 5000, async () => (await sb.store.list(attemptDir, { details: true }))[0]);
      run.child.kill('SIGKILL');
      const r = await run.done;
      t.diagnostic(
        r.signal === 'SIGKILL'
          ? `killed ${seen ? `once ${seen.name} held ${seen.size} byte(s)` : 'before anything showed'}`
          : `finished first (exit ${r.code})`,
      );
      if (r.signal !== 'SIGKILL') assert.equal(r.code, 0, r.stderr);
      const staged = await sb.store.stat(posix.join(attemptDir, 'big.bin'));
      if (staged) assert.equal(staged.size, big.length, 'a file under the final name is whole');

      await stageTask(sb, job, { task: '0', files: { 'good.csv': 'good\n' } });
      const ct = await commitTask(sb, job, '0');
      assert.equal(ct.code, 0, ct.stderr);
      const cj = await commitJob(sb, job);
      assert.equal(cj.code, 0, cj.stderr);

      const names = (await sb.store.list(target)).map((e) => e.name).sort();
      assert.deepEqual(
        names,
        staged ? ['_SUCCESS', 'big.bin', 'good.csv'] : ['_SUCCESS', 'good.csv'],
        'the whole file or nothing, and no temp',
      );
      if (staged)
        assert.equal(sha256((await sb.store.readFile(posix.join(target, 'big.bin')))!), sha256(big), 'byte-equal');
      assert.equal(await sb.store.stat(sb.pathOf(job)), null, 'the staging dir is gone');
    });
  });
}

/** Files (recursive) under a local dir whose names are temp debris. */
async function localDebris(dir: string): Promise<string[]> {
  const names = (await fs.readdir(dir, { recursive: true })) as string[];
  return names.filter((n) => isDebris(path.basename(n)));
}

/** The tests count tmpfs space in pages of this size. */
const PAGE = 4096;

/** Fills a local filesystem to its last page with one file; returns its path. */
async function fill(dir: string): Promise<string> {
  const filler = path.join(dir, 'filler');
  const page = Buffer.alloc(PAGE, 1);
  const fh = await fs.open(filler, 'a');
  try {
    for (;;) await fh.write(page);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
  } finally {
    await fh.close();
  }
  return filler;
}

/** Runs `fn` on a fresh tmpfs of `size` mounted at `dir`; skips the test where mounting is not allowed. */
async function onTmpfs(t: TestContext, dir: string, size: string, fn: () => Promise<void>): Promise<void> {
  const pageSize = Number(execFileSync('getconf', ['PAGESIZE'], { encoding: 'utf8' }).trim());
  if (pageSize !== PAGE) {
    t.skip(`this machine's pages are ${pageSize} bytes; the space arithmetic here assumes ${PAGE}`);
    return;
  }
  await fs.mkdir(dir, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (e) {
    t.skip(
      `cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): ${String((e as { stderr?: Buffer }).stderr ?? e).trim()}`,
    );
    return;
  }
  try {
    await fn();
  } finally {
    try {
      execFileSync('umount', [dir], { stdio: 'pipe' });
    } catch {
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' }); // still busy: detach it now, gone when free
    }
  }
}

if (storeFixtures().some((f) => f.name === 'local') && os.platform() === 'linux') {
  describe('a full filesystem (local, on a small tmpfs)', () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(localFixture, (s) => (sb = s), 'full');

    test('commit-job that runs out of space exits 1, leaves no temp debris, and finishes once there is room', async (t) => {
      const mnt = dir();
      await onTmpfs(t, mnt, '256k', async () => {
        const target = path.join(mnt, 'table');
        // Long names make _SUCCESS (it lists them) two pages, more than any write before it needs.
        const files = Object.fromEntries(
          Array.from({ length: 20 }, (_, i) => [`part-${String(i).padStart(2, '0')}-${'x'.repeat(180)}.csv`, `${i}\n`]),
        );
        const job = await prepare(sb, { target, tasks: 1 }, [{ task: '0', files }]);
        const filler = await fill(mnt);
        const failedOn: string[] = [];
        for (let round = 0; ; round++) {
          assert.ok(round < 40, 'commit-job should finish once a few pages are free');
          // Each round through main() in this process: the outcome is the exit code, the message and the disk.
          const r = await commitJob(sb, job, [], inProcess);
          if (r.code === 0) break;
          assert.equal(r.code, 1, `round ${round}: ${r.stderr}`);
          assert.match(r.stderr, /no space left on device/i, `round ${round}: the message says why`);
          assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
          // A plan write refused for space is known not to have landed: no "whether … is not known".
          assert.doesNotMatch(r.stderr, /is not known/, `round ${round}: ${r.stderr}`);
          failedOn.push(r.stderr.trim().split('\n').pop()!);
          assert.deepEqual(
            await localDebris(mnt),
            [],
            `round ${round}: no temp debris in the target or staging (${r.stderr.trim()})`,
          );
          // One more page free for the next round.
          await fs.truncate(filler, Math.max(0, (await fs.stat(filler)).size - PAGE));
        }
        t.diagnostic(`failed on: ${failedOn.join(' | ')}`);
        assert.ok(failedOn.length > 0, 'the full disk failed at least one run');
        assert.ok(
          failedOn.some((f) => f.includes('_SUCCESS')),
          `_SUCCESS hit the full disk once (${failedOn.join(' | ')})`,
        );
        const tree = await readTree(sb.store, target);
        assert.deepEqual(Object.keys(tree), ['_SUCCESS', ...Object.keys(files).sort()]);
        assert.deepEqual(await localDebris(mnt), []);
        assert.equal(await sb.store.stat(sb.pathOf(job)), null, 'the staging dir is gone');
      });
    });

    test('stage FILE bigger than the free space exits 1 and leaves nothing in the attempt dir', async (t) => {
      const mnt = dir();
      await onTmpfs(t, mnt, '256k', async () => {
        const target = path.join(mnt, 'table');
        const job = await stage(sb, { target, tasks: 1 });
        const attemptDir = await attemptDirOf(sb, job, '0');
        const [bigPath] = await localFiles({ 'big.bin': 'x'.repeat(512 * 1024) });
        const r = await cli(['stage', '--job', job, '--task', '0', bigPath!], { env: sb.env });
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stderr, /big\.bin.*no space left on device/i);
        assert.deepEqual(await fs.readdir(attemptDir, { recursive: true }), [], 'no partial file, no temp');
        assert.deepEqual(await localDebris(mnt), []);
      });
    });
  });
}
