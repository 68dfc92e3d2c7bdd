// A `stage` whose files land after the job or the attempt moved on: it says so (never exit 0) and
// takes back what nothing can hold, so no file lingers where the job's staging dir was.

import assert from 'node:assert/strict';
import { appendFile, chmod, link, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { posix } from 'node:path';
import { describe, test } from 'node:test';
import { CommitDeniedError, ConflictError, StoreError } from '../src/errors.js';
import { JobLayout } from '../src/job/layout.js';
import { abort } from '../src/steps/abort.js';
import { stageFiles } from '../src/steps/stage-files.js';
import { commitTask } from '../src/steps/commit-task.js';
import { cli, spawnCli } from '../testing/cli.js';
import { prepare, stage, stageTask } from '../testing/jobs.js';
import { libCommitJob, libCommitTask, testEnv } from '../testing/lib.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree } from '../testing/tree.js';

const ROUNDS = Number(process.env.STAGECOMMIT_RACE_ROUNDS ?? 3);

for (const fx of storeFixtures()) {
  describe(`stage racing the job's end on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'sr');

    /** A job of table `name`: task 0 committed (dt=0/a), task 1 declared but not staged. */
    const job = async (name: string) => {
      const target = posix.join(dir(), name);
      const handle = await prepare(sb, { target, partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=0'], files: { a: 'a' } },
      ]);
      const stagingPath = sb.pathOf(handle);
      return { target, handle, stagingPath, layout: new JobLayout(stagingPath) };
    };

    /** A local file to stage; `bytes` above the store's pending-upload size makes it an upload on S3. */
    const localFile = async (name: string, bytes: number) => {
      const p = posix.join(os.tmpdir(), `sr-${process.pid}-${name.replace(/\//g, '_')}`);
      await writeFile(p, Buffer.alloc(bytes, 'x'));
      return p;
    };

    /** stage of task 1 (files `names`) whose first write waits until `meanwhile` has run whole. */
    const stageWith = async (
      stagingPath: string,
      files: { name: string; bytes: number }[],
      meanwhile: () => Promise<unknown>,
    ) => {
      let ran = false;
      const env = testEnv(sb.store, async () => {
        if (ran) return;
        ran = true;
        await meanwhile();
      });
      const list = await Promise.all(
        files.map(async (f) => ({ localPath: await localFile(f.name, f.bytes), name: f.name })),
      );
      const error = await stageFiles(env, {
        stagingPath,
        task: '1',
        partition: [{ column: 'dt', value: '1' }],
        files: list,
      }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(ran, 'the other step ran');
      return error;
    };

    test('a stage whose files land after commit-job removed the staging dir exits 6, leaving nothing there', async () => {
      const { target, stagingPath } = await job('after-commit');
      // A large file goes up as a pending upload on S3: it is aborted, not left to the age rule.
      // A name with dirs in it (--name a/b/c) makes dirs below the partition's: they go too.
      const error = await stageWith(
        stagingPath,
        [
          { name: 'b', bytes: 10 },
          { name: 'sub/dir/c', bytes: 10 },
          { name: 'big', bytes: 2 * 1024 ** 2 },
        ],
        () => libCommitJob(testEnv(sb.store), stagingPath),
      );
      assert.ok(error instanceof ConflictError, String(error));
      assert.match(
        error.message,
        /^job \S+ finished while this stage ran: its output cannot have these files, and the files were taken back; stage them into a new job$/,
      );
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a' });
      assert.equal(await sb.store.stat(stagingPath), null, 'nothing where the staging dir was');
      if (sb.store.listUploads) assert.deepEqual(await sb.store.listUploads(target), [], 'no upload left pending');
    });

    // Not the store error.
    test('a stage whose write fails as commit-job removed the staging dir: exit 6 saying so, nothing left', async () => {
      const { target, stagingPath } = await job('write-fails');
      const error = await stageWith(stagingPath, [{ name: 'b', bytes: 10 }], async () => {
        await libCommitJob(testEnv(sb.store), stagingPath);
        throw new StoreError('not-found', 'put', [sb.store.toUri(stagingPath)], 'the dir is gone');
      });
      assert.ok(error instanceof ConflictError, String(error));
      assert.match(error.message, /finished while this stage ran/);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a' });
      assert.equal(await sb.store.stat(stagingPath), null);
    });

    // The job is aborted and a new job of the same id staged in its place.
    test('a stage whose job is replaced by one of the same id meanwhile: exit 6, the new job never takes it', async () => {
      const target = posix.join(dir(), 'same-id');
      const handle = await stage(sb, { target, partitionBy: 'dt', jobId: 'reused' });
      const stagingPath = sb.pathOf(handle);
      const error = await stageWith(stagingPath, [{ name: 'b', bytes: 10 }], async () => {
        await abort(testEnv(sb.store), { stagingPath });
        assert.equal(await stage(sb, { target, partitionBy: 'dt', jobId: 'reused' }), handle);
      });
      assert.ok(error instanceof ConflictError, String(error));
      assert.match(
        error.message,
        /^job reused finished while this stage ran, and a new job of that id is now staged in \S+: its output cannot have these files/,
      );
      await stageTask(sb, handle, { task: '0', partition: ['dt=0'], files: { a: 'a' } });
      assert.equal((await cli(['commit-task', '--job', handle, '--task', '0'], { env: sb.env })).code, 0);
      const t1 = await cli(['commit-task', '--job', handle, '--task', '1'], { env: sb.env });
      assert.equal(t1.code, 2, `task 1 was never staged in the new job: ${t1.stderr}`);
      assert.equal((await cli(['commit-job', '--job', handle], { env: sb.env })).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a' });
    });

    // A chmod or a hard link meanwhile is no change.
    test('a local file written to while stage copies it: exit 4 naming it; staged again, its new bytes publish', async () => {
      const { target, stagingPath, handle } = await job('changed');
      // 2 MiB goes up as a pending upload on S3; 10 bytes as a plain copy.
      for (const [name, bytes] of [
        ['small', 10],
        ['big', 2 * 1024 ** 2],
      ] as const) {
        const local = posix.join(os.tmpdir(), `sr-${process.pid}-${name}`);
        const error = await stageWith(stagingPath, [{ name, bytes }], () => appendFile(local, 'y'));
        assert.ok(error instanceof ConflictError, String(error));
        assert.equal(
          error.message,
          `${local} changed while it was staged: the staged copy may hold old and new bytes mixed; stage it again into the same attempt once it is written whole (the last staging of a name wins)`,
        );
        await stageFiles(testEnv(sb.store), {
          stagingPath,
          task: '1',
          partition: [{ column: 'dt', value: '1' }],
          files: [{ localPath: local, name }],
        });
      }
      // A chmod or a new hard link meanwhile changes no byte: staged as usual.
      const linked = posix.join(os.tmpdir(), `sr-${process.pid}-linked`);
      await rm(`${linked}.link`, { force: true });
      assert.equal(
        await stageWith(stagingPath, [{ name: 'linked', bytes: 10 }], async () =>
          Promise.all([chmod(linked, 0o600), link(linked, `${linked}.link`)]),
        ),
        null,
      );
      await commitTask(testEnv(sb.store), { stagingPath, task: '1' });
      assert.equal((await cli(['commit-job', '--job', handle], { env: sb.env })).code, 0);
      const tree = data(await readTree(sb.store, target));
      assert.deepEqual(Object.keys(tree).sort(), ['dt=0/a', 'dt=1/big', 'dt=1/linked', 'dt=1/small']);
      assert.equal(tree['dt=1/small'], 'x'.repeat(10) + 'y');
      assert.equal(tree['dt=1/big'], 'x'.repeat(2 * 1024 ** 2) + 'y');
    });

    test('a stage whose attempt is aborted meanwhile exits 3, takes its files back; the job commits without', async () => {
      const { target, stagingPath, layout, handle } = await job('after-abort');
      const error = await stageWith(stagingPath, [{ name: 'b', bytes: 10 }], () =>
        abort(testEnv(sb.store), { stagingPath, task: '1', attempt: 0 }),
      );
      assert.ok(error instanceof CommitDeniedError, String(error));
      assert.deepEqual(error.detail, {
        reason: 'staged-into-aborted',
        taskAttempt: error.detail.taskAttempt,
        taken: 'files',
      });
      const attemptDir = (await sb.store.list(layout.attemptsDir(0)))
        .map((e) => e.name)
        .filter((n) => n.includes('_1_'));
      assert.deepEqual(attemptDir, [], 'the attempt dir went with the files');
      assert.equal((await cli(['commit-job', '--job', handle], { env: sb.env })).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a' });
    });

    // The commit lacks the file; the job commits without it.
    test('a stage whose attempt a commit-task commits meanwhile exits 6 naming the file, and takes it back', async () => {
      const { target, stagingPath, handle } = await job('after-task');
      await stageTask(sb, handle, { task: '1', partition: ['dt=1'], files: { b: 'b' } });
      const error = await stageWith(stagingPath, [{ name: 'c', bytes: 10 }], () =>
        libCommitTask(testEnv(sb.store), stagingPath, { task: '1', files: {} }),
      );
      assert.ok(error instanceof ConflictError, String(error));
      assert.match(
        error.message,
        /was committed while this stage ran, without 'dt=1\/c': those files were taken back; stage them as another task, or run the job again$/,
      );
      assert.equal((await cli(['commit-job', '--job', handle], { env: sb.env })).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a', 'dt=1/b': 'b' });
    });

    // The commit has not ended: the file is taken back from wherever the commit put it, and commit-job
    // is not stopped by it.
    test('a stage whose file lands after commit-task listed the files: exit 6, the file taken back', async () => {
      const { target, stagingPath, handle, layout } = await job('mid-task');
      await stageTask(sb, handle, { task: '1', partition: ['dt=1'], files: { b: 'b' } });
      let atPromote!: () => void;
      const promoting = new Promise<void>((r) => (atPromote = r));
      let written!: () => void;
      const landed = new Promise<void>((r) => (written = r));
      let claimed = false;
      let task: Promise<unknown> | undefined;
      // commit-task stops at its first change once its claim exists (the promotion) until the stage's file has landed.
      const taskEnv = testEnv(sb.store, async (_n, op, p) => {
        if (op === 'createExclusive' && p === layout.claimFile(0, '1')) return void (claimed = true);
        if (!claimed) return;
        claimed = false;
        atPromote();
        await landed;
      });
      let wrote = false;
      const stageEnv = testEnv(sb.store, {
        beforeMutation: async () => {
          if (task) return;
          task = libCommitTask(taskEnv, stagingPath, { task: '1', files: {} }).then(
            () => null,
            (e: unknown) => e,
          );
          await promoting;
          wrote = true;
        },
        beforeRead: (_op, p) => void (wrote && p === layout.jobFile && written()),
      });
      const file = await localFile('c', 10);
      const error = await stageFiles(stageEnv, {
        stagingPath,
        task: '1',
        partition: [{ column: 'dt', value: '1' }],
        files: [{ localPath: file, name: 'c' }],
      }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.equal(await task, null, 'commit-task exits 0');
      assert.ok(error instanceof ConflictError, String(error));
      assert.match(error.message, /without 'dt=1\/c': those files were taken back/);
      const cj = await cli(['commit-job', '--job', handle], { env: sb.env });
      assert.equal(cj.code, 0, cj.stderr);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a', 'dt=1/b': 'b' });
      assert.equal(await sb.store.stat(stagingPath), null);
    });

    // A known defect: a stage without --attempt that runs after a live commit-task decided, before
    // it claimed, goes to the task's next attempt (as a rerun after a killed commit-task must) and
    // exits 0; the claim then names the earlier attempt, so that file is never published.
    const nextAttemptDefect = 'a known defect: a stage racing a deciding commit-task takes a new attempt';
    test(
      'a stage run whole before each store call of a commit-task of its attempt: exit 0 means published',
      { todo: nextAttemptDefect },
      async (t) => {
        const outcomes: string[] = [];
        for (let k = 1; ; k++) {
          const { target, stagingPath, handle } = await job(`ct${k}`);
          await stageTask(sb, handle, { task: '1', partition: ['dt=1'], files: { b: 'b' } });
          let calls = 0;
          let staged: Promise<unknown> | undefined;
          const before = async () => {
            if (++calls !== k) return;
            const file = await localFile('c', 1);
            staged = stageFiles(testEnv(sb.store), {
              stagingPath,
              task: '1',
              partition: [{ column: 'dt', value: '1' }],
              files: [{ localPath: file, name: 'c' }],
            }).then(
              () => null,
              (e: unknown) => e,
            );
            await staged;
          };
          await libCommitTask(testEnv(sb.store, { beforeMutation: before, beforeRead: before }), stagingPath, {
            task: '1',
            files: {},
          });
          if (!staged) break;
          const error = await staged;
          const cj = await cli(['commit-job', '--job', handle], { env: sb.env });
          const tree = cj.code === 0 ? data(await readTree(sb.store, target)) : {};
          outcomes.push(
            `${k}: stage ${error ? (error as Error).constructor.name : 'ok'}, commit-job ${cj.code}${'dt=1/c' in tree ? ', c published' : ''}`,
          );
          if (error === null) {
            assert.equal(cj.code, 0, `${outcomes.at(-1)}: ${cj.stderr}`);
            assert.equal(tree['dt=1/c'], 'x', `call ${k}: stage exited 0, so its file is published`);
          } else
            assert.ok(
              error instanceof ConflictError || error instanceof CommitDeniedError,
              `call ${k}: ${String(error)}`,
            );
        }
        t.diagnostic(outcomes.join('; '));
      },
    );

    // Each stage exits 0 or gives a reason; nothing is left of the staging dir.
    test(`stage racing commit-job as processes, ${ROUNDS} rounds: the target has only committed tasks`, async (t) => {
      const seen: string[] = [];
      const file = await localFile('b', 10);
      for (let round = 0; round < ROUNDS; round++) {
        const { target, handle, stagingPath } = await job(`race${round}`);
        const offset = Math.random() * 600 - 300;
        const pause = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
        const [cj, st] = await Promise.all([
          pause(offset).then(
            () =>
              spawnCli(['commit-job', '--job', handle], { env: { ...sb.env, STAGECOMMIT_TEST_DELAY_MS: '15' } }).result,
          ),
          // The stage's write waits 50-400 ms after its look at the job: long enough to land at any point of the
          // commit.
          pause(-offset).then(() =>
            cli(['stage', '--job', handle, '--task', '1', '--partition', 'dt=1', file], {
              env: { ...sb.env, STAGECOMMIT_TEST_DELAY_MS: String(Math.round(50 + Math.random() * 350)) },
            }),
          ),
        ]);
        assert.equal(cj.code, 0, cj.stderr);
        // Before the job ended, or once it has (2: finished, 4: committing), or while it ended (6).
        assert.ok(
          st.code === 0 ||
            ((st.code === 2 || st.code === 4 || st.code === 6) &&
              /^stagecommit: error: .*(finished|while this stage ran|cannot stage files)/.test(st.stderr)),
          `round ${round}: stage exit ${st.code}: ${st.stderr}`,
        );
        assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a' });
        assert.equal(
          await sb.store.stat(stagingPath),
          null,
          `round ${round}: stage exit ${st.code}, and something is left of the staging dir`,
        );
        seen.push(`stage ${st.code}`);
      }
      t.diagnostic(seen.join('; '));
    });
  });
}
