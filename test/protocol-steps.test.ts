// The staged-commit protocol's steps through the CLI, on every store: declared tasks, claims,
// abort, status, stdin and --print-path writers, bad input, STAGECOMMIT_JOB (the modes:
// protocol-modes.test.ts). Outcomes: files under the target, exit codes and messages.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { cli, errorOf, ok } from '../testing/cli.js';
import { commitJob, commitTask, localFiles, prepare, stage, stageTask } from '../testing/jobs.js';
import { inProcess, okInProcess } from '../testing/main.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree, writeTree } from '../testing/tree.js';
import { JobLayout } from '../src/job/layout.js';
import { InjectedFault } from '../src/errors.js';
import { killed } from '../testing/crash-points.js';
import { DEAD_PID, libCommitJob, testEnv } from '../testing/lib.js';

for (const fx of storeFixtures()) {
  describe(`protocol: steps on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 't');

    test('declared tasks: commit-job exits 5 naming the missing ones, and changes nothing', async () => {
      const target = posix.join(dir(), 't');
      const job = await prepare(sb, { target, tasks: 3 }, [
        { task: '0', files: { a: 'a' } },
        { task: '2', files: { c: 'c' } },
      ]);
      const r = await commitJob(sb, job, ['--json']);
      assert.equal(r.code, 5);
      const { kind, detail } = errorOf(r);
      assert.deepEqual([kind, detail], ['IncompleteError', { reason: 'tasks-missing', missing: ['1'], declared: 3 }]);
      // The words a user reads (a golden line).
      assert.equal(
        r.stderr.trim(),
        "stagecommit: error: 1 of 3 declared task(s) are not committed: 1; commit them ('stagecommit status --tasks-to-run' lists them)",
      );
      assert.equal(await sb.store.stat(target), null);
      await stageTask(sb, job, { task: '1', files: { b: 'b' } });
      assert.equal((await commitTask(sb, job, '1')).code, 0);
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { a: 'a', b: 'b', c: 'c' });
    });

    test('two tasks writing one destination: exit 6 before the commit point', async () => {
      const target = posix.join(dir(), 't');
      await writeTree(sb.store, target, { 'dt=1/keep': 'k' });
      const job = await prepare(sb, { target, mode: 'append', partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=2'], files: { 'x.csv': 'from-0' } },
        { task: '1', partition: ['dt=2'], files: { 'x.csv': 'from-1' } },
      ]);
      const r = await commitJob(sb, job);
      assert.equal(r.code, 6);
      assert.match(r.stderr, /tasks 0 and 1 both wrote 'dt=2\/x.csv'/);
      // A committed task cannot commit again; the advice is the job's.
      assert.match(
        r.stderr,
        /the tasks are committed, and a commit is final: nothing was changed; abort the job and run it again with distinct file names$/m,
      );
      assert.deepEqual(await readTree(sb.store, target), { 'dt=1/keep': 'k' });
    });

    test('commit claims: the first attempt wins, others exit 3, the same attempt again is fine', async () => {
      const target = posix.join(dir(), 't');
      const job = await stage(sb, { target });
      await stageTask(sb, job, { task: '7', attempt: 0, files: { 'winner.csv': 'w' } });
      await stageTask(sb, job, { task: '7', attempt: 1, files: { 'loser.csv': 'l' } });
      assert.equal((await commitTask(sb, job, '7', 0)).code, 0);
      const denied = await cli(['commit-task', '--job', job, '--task', '7', '--attempt', '1', '--json'], {
        env: sb.env,
      });
      assert.equal(denied.code, 3);
      const { reason, detail } = errorOf(denied);
      assert.equal(reason, 'other-attempt-won');
      assert.ok(
        detail.reason === 'other-attempt-won' && detail.task === '7' && detail.winner.endsWith('_7_0'),
        denied.stdout,
      );
      const again = await commitTask(sb, job, '7', 0);
      assert.equal(again.code, 0);
      assert.match(again.stderr, /already committed/);
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'winner.csv': 'w' });
    });

    test('abort: an aborted attempt never commits; a job abort leaves the target untouched, is idempotent', async () => {
      const target = posix.join(dir(), 't');
      await writeTree(sb.store, target, { 'old.csv': 'old' });
      const job = await stage(sb, { target, mode: 'overwrite' });
      await stageTask(sb, job, { task: '0', files: { 'a.csv': 'a0' } });
      assert.equal((await cli(['abort', '--job', job, '--task', '0'], { env: sb.env })).code, 0);
      const d = await cli(['commit-task', '--job', job, '--task', '0', '--json'], { env: sb.env });
      assert.equal(d.code, 3);
      assert.equal(errorOf(d).reason, 'attempt-aborted');
      await stageTask(sb, job, { task: '0', attempt: 1, files: { 'a.csv': 'a1' } });
      assert.equal((await commitTask(sb, job, '0', 1)).code, 0);
      const st = JSON.parse(await okInProcess(['status', '--job', job, '--json'], { env: sb.env }));
      assert.equal(st.state, 'staged');
      assert.equal(st.tasks[0].state, 'committed');
      assert.equal(st.tasks[0].winner.endsWith('_0_1'), true);

      const a = await cli(['abort', '--job', job], { env: sb.env });
      assert.equal(a.code, 0);
      assert.deepEqual(await readTree(sb.store, target), { 'old.csv': 'old' });
      assert.equal(await sb.store.stat(sb.pathOf(job)), null);
      const again = await cli(['abort', '--job', job], { env: sb.env });
      assert.equal(again.code, 0);
      assert.match(again.stderr, /nothing to abort/);
      const c = await commitJob(sb, job);
      assert.equal(c.code, 2);
      assert.match(c.stderr, /finished .*or never existed/);
    });

    test('a committed job: stage, commit-task and abort exit 2, commit-job and recover 0, nothing changed', async () => {
      const target = posix.join(dir(), 't');
      const job = await prepare(sb, { target }, [{ task: '0', files: { 'a.csv': 'a' } }]);
      assert.equal((await commitJob(sb, job)).code, 0);
      const before = await readTree(sb.store, target);
      const [file] = await localFiles({ 'b.csv': 'b' });
      for (const [args, code, said] of [
        [
          ['abort', '--job', job],
          2,
          /cannot abort: job \S+ is finished: it was committed \(.*_SUCCESS, .*\); nothing was changed/,
        ],
        [['abort', '--job', job, '--task', '0'], 2, /cannot abort: job \S+ is finished: it was committed/],
        [['commit-task', '--job', job, '--task', '0'], 2, /job \S+ is finished: it was committed/],
        [['stage', '--job', job, '--task', '0', file!], 2, /job \S+ is finished: it was committed/],
        [['commit-job', '--job', job], 0, /already committed/],
        [['recover', '--job', job], 0, /already committed/],
      ] as const) {
        const r = await cli(args, { env: sb.env });
        assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}`);
        assert.match(r.stderr, said, args.join(' '));
      }
      assert.deepEqual(await readTree(sb.store, target), before);
    });

    test('abort of a job past its commit point, not yet committed: exit 6, nothing changed', async () => {
      const target = posix.join(dir(), 't');
      const job = await prepare(sb, { target }, [{ task: '0', files: { 'a.csv': 'a' } }]);
      const killedRun = await libCommitJob(
        testEnv(sb.store, killed.atCommitPoint(), { pid: DEAD_PID }),
        sb.pathOf(job),
      ).then(
        () => 'finished',
        (e: unknown) => (e instanceof InjectedFault ? 'killed' : e),
      );
      assert.equal(killedRun, 'killed');
      const r = await cli(['abort', '--job', job], { env: sb.env });
      assert.equal(r.code, 6, r.stderr);
      assert.match(r.stderr, /cannot abort: job \S+ is committing; it is past its commit point/);
      assert.equal((await cli(['recover', '--job', job], { env: sb.env })).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'a.csv': 'a' });
    });

    // A commit-task stopped inside its create leaves one: HDFS shows the file before its bytes.
    test('an empty claim is exit 1 saying what to do; deleted, the task commits', async () => {
      const target = posix.join(dir(), 't');
      const job = await stage(sb, { target, tasks: 1 });
      await stageTask(sb, job, { task: '0', attempt: 1, files: { 'a.csv': 'a' } });
      const claim = new JobLayout(sb.pathOf(job)).claimFile(0, '0');
      await sb.store.writeFile(claim, '');
      const r = await commitTask(sb, job, '0', 1);
      assert.equal(r.code, 1, r.stderr);
      const hint = sb.store.caps.createsVisibleEarly
        ? /is empty: the step creating it was stopped .*delete the file and run the step again/
        : /is empty \(cut short before anything was written\)/;
      assert.match(r.stderr, hint);
      await sb.store.delete(claim, false);
      assert.equal((await commitTask(sb, job, '0', 1)).code, 0);
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'a.csv': 'a' });
    });

    test('status shows tasks, files and bytes (text and --json)', async () => {
      const target = posix.join(dir(), 't');
      const job = await prepare(sb, { target, tasks: 2, partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=1'], files: { 'a.csv': 'abc' } },
      ]);
      await stageTask(sb, job, { task: '1', attempt: 2, partition: ['dt=2'], files: { 'b.csv': 'b' } });
      const text = await ok(['status', '--job', job], { env: sb.env });
      assert.match(text, /state\s+staged/);
      assert.match(text, /committed 1 task\(s\), 1 file\(s\), 3 B of 2 declared/);
      assert.match(text, /missing\s+1/);
      const j = JSON.parse(await ok(['status', '--job', job, '--json'], { env: sb.env }));
      assert.equal(j.files, 1);
      assert.equal(j.bytes, 3);
      assert.deepEqual(
        j.tasks.map((t: { task: string; state: string }) => [t.task, t.state]),
        [
          ['0', 'committed'],
          ['1', 'attempted'],
        ],
      );
      assert.deepEqual(j.tasksToRun, ['1']);
    });

    test('stdin staging, and a writer that writes into --print-path itself', async () => {
      const target = posix.join(dir(), 't');
      const job = await stage(sb, { target, partitionBy: 'dt' });
      const s = await cli(
        ['stage', '--job', job, '--task', '0', '--partition', 'dt=1', '--name', 'from-stdin.csv', '-'],
        { env: sb.env, input: 'piped\n' },
      );
      assert.equal(s.code, 0, s.stderr);
      const printed = await ok(['stage', '--job', job, '--task', '1', '--print-path'], { env: sb.env });
      const rel = sb.pathOf(printed);
      await writeTree(sb.store, rel, { 'dt=2/part-00000.parquet': 'p', 'dt=2/.part-00000.parquet.crc': 'crc' });
      assert.equal((await commitTask(sb, job, '0')).code, 0);
      assert.equal((await commitTask(sb, job, '1')).code, 0);
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), {
        'dt=1/from-stdin.csv': 'piped\n',
        'dt=2/.part-00000.parquet.crc': 'crc',
        'dt=2/part-00000.parquet': 'p',
      });
    });

    test('bad input: one line naming the problem and the fix, exit 2, nothing changed', async () => {
      const root = dir();
      const target = posix.join(root, 't');
      const job = await stage(sb, { target, partitionBy: 'dt' });
      const [file] = await localFiles({ 'a.csv': 'a' });
      const before = await readTree(sb.store, root);
      const cases: [string[], RegExp][] = [
        [['stage', '--job', job, '--task', '0', '--partition', 'dt', file!], /expected COLUMN=VALUE/],
        [['stage', '--job', job, '--task', '../x', '--partition', 'dt=1', file!], /invalid task id/],
        [
          ['stage', '--job', job, '--task', '0', '--partition', 'dt=1', '--name', '../evil', '-'],
          /'\.\.' segments are not allowed/,
        ],
        [
          ['stage', '--job', job, '--task', '0', '--partition', 'dt=1', '--name', '/etc/passwd', '-'],
          /absolute paths are not allowed/,
        ],
        [['stage', '--job', job, '--task', '0', '--partition', 'dt=1', '/no/such/file.csv'], /no such file/],
        [['stage', '--job', job, '--task', '0', '--partition', 'region=eu', file!], /expected column 'dt'/],
        [['stage', '--job', job, '--task', '0', file!], /need a value for partition column\(s\) dt/],
        [['stage', '--job', job, '--task', '0', '--attempt', 'x', file!], /--attempt must be a whole number/],
        [
          ['stage', '--target', sb.uri(posix.join(root, 'u')), '--partition', 'dt=1', '--partition-by', 'region,dt'],
          /static values must be the leading columns/,
        ],
        [['stage', '--target', sb.uri(posix.join(root, 'u')), '--mode', 'replace'], /--mode/],
        [
          ['stage', '--target', sb.uri(posix.join(root, 'u')), '--staging-dir', sb.uri(posix.join(root, 'u', 'stage'))],
          /inside the target/,
        ],
        [['stage', '--target', sb.uri(posix.join(root, 'u')), '--job-id', 'a/b'], /invalid --job-id/],
        [['commit-task', '--job', job, '--task', '0', '--bogus'], /unknown option/],
        [['commit-job'], /no job given/],
        [['status', '--job', sb.uri(posix.join(root, 'nope'))], /never existed/],
        [['clean-orphans', sb.uri(root), '--older-than', 'soon'], /invalid --older-than/],
      ];
      // Usage errors through main() in this process: the same parsing, message and exit code.
      for (const [args, pattern] of cases) {
        const r = await inProcess(args, { env: { ...sb.env, STAGECOMMIT_JOB: undefined } });
        assert.equal(r.code, 2, `${args.join(' ')} → ${r.code}: ${r.stderr}`);
        assert.match(r.stderr, pattern, args.join(' '));
        assert.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
      }
      assert.deepEqual(await readTree(sb.store, root), before);
      const jobId = await okInProcess(['stage', '--target', sb.uri(posix.join(root, 'v')), '--job-id', 'fixed-id'], {
        env: sb.env,
      });
      // The same id with other parameters names the difference; with the same ones it is a rerun.
      const dup = await inProcess(
        ['stage', '--target', sb.uri(posix.join(root, 'v')), '--job-id', 'fixed-id', '--mode', 'append'],
        { env: sb.env },
      );
      assert.equal(dup.code, 2);
      assert.match(dup.stderr, /with other parameters: --mode append \(the job's is create\)/);
      assert.ok(jobId.endsWith('fixed-id'));
      const rerun = await okInProcess(['stage', '--target', sb.uri(posix.join(root, 'v')), '--job-id', 'fixed-id'], {
        env: sb.env,
      });
      assert.equal(rerun, jobId);
    });

    test('a writer that puts files outside the partition layout is refused at commit-task (exit 2)', async () => {
      const target = posix.join(dir(), 't');
      const job = await stage(sb, { target, partitionBy: 'dt' });
      const printed = await ok(['stage', '--job', job, '--task', '0', '--print-path'], { env: sb.env });
      await writeTree(sb.store, sb.pathOf(printed), { 'stray.csv': 's' });
      const r = await commitTask(sb, job, '0');
      assert.equal(r.code, 2);
      assert.match(r.stderr, /not inside a partition/);
    });

    test('STAGECOMMIT_JOB names the job; --json prints one document', async () => {
      const target = posix.join(dir(), 't');
      const staged = JSON.parse(await ok(['stage', '--target', sb.uri(target), '--json'], { env: sb.env }));
      assert.ok(staged.handle && staged.jobId);
      const env = { ...sb.env, STAGECOMMIT_JOB: staged.handle };
      const [f] = await localFiles({ 'a.csv': 'a' });
      await ok(['stage', '--task', '0', f!], { env });
      await ok(['commit-task', '--task', '0'], { env });
      const r = JSON.parse(await ok(['commit-job', '--json'], { env }));
      assert.equal(r.outcome, 'committed');
      assert.equal(r.files, 1);
      assert.ok(r.metrics && typeof r.metrics === 'object');
      const rerun = await cli(['commit-job', '--json'], { env });
      assert.equal(rerun.code, 0, rerun.stderr);
      assert.equal(JSON.parse(rerun.stdout).outcome, 'already-committed');
      const err = await cli(['commit-job', '--json'], { env: { ...env, STAGECOMMIT_JOB: `${staged.handle}-never` } });
      assert.equal(err.code, 2);
      assert.equal(JSON.parse(err.stdout).error.exitCode, 2);
    });
  });
}
