// The staged-commit protocol's steps through the CLI, on every store: declared tasks, claims,
// abort, status, stdin and --print-path writers, bad input, STAGECOMMIT_JOB (the modes:
// protocol-modes.test.ts). Outcomes: files under the target, exit codes and messages.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { assertFailed, cli, errorOf, ok, type Failure } from '../testing/cli.js';
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
      const r = await commitJob(sb, job, ['--json']);
      // A committed task cannot commit again; the advice is the job's.
      assertFailed(r, 6, {
        kind: 'ConflictError',
        reason: 'path-clash',
        clash: 'same-path',
        what: "tasks 0 and 1 both wrote 'dt=2/x.csv'",
        when: 'job',
        advice: 'abort the job and run it again with distinct file names',
      });
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
      assertFailed(await commitJob(sb, job, ['--json']), 2, { reason: 'no-job', stagingDir: job });
    });

    test('a committed job: stage, commit-task and abort exit 2, commit-job and recover 0, nothing changed', async () => {
      const target = posix.join(dir(), 't');
      const job = await prepare(sb, { target }, [{ task: '0', files: { 'a.csv': 'a' } }]);
      assert.equal((await commitJob(sb, job)).code, 0);
      const before = await readTree(sb.store, target);
      const [file] = await localFiles({ 'b.csv': 'b' });
      const jobId = posix.basename(job);
      for (const [args, code, want] of [
        [['abort', '--job', job], 2, { reason: 'job-finished-abort', jobId }],
        [['abort', '--job', job, '--task', '0'], 2, { reason: 'job-finished-abort', jobId }],
        [['commit-task', '--job', job, '--task', '0'], 2, { reason: 'job-finished-task', jobId, task: '0' }],
        [['stage', '--job', job, '--task', '0', file!], 2, { reason: 'job-finished', jobId }],
      ] as const) {
        assertFailed(await cli([...args, '--json'], { env: sb.env }), code, want);
      }
      for (const args of [
        ['commit-job', '--job', job],
        ['recover', '--job', job],
      ]) {
        const r = await cli(args, { env: sb.env });
        assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
        assert.match(r.stderr, /already committed/, args.join(' '));
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
      const r = await cli(['abort', '--job', job, '--json'], { env: sb.env });
      assertFailed(r, 6, { reason: 'wrong-state', doing: 'abort', jobId: posix.basename(job), state: 'committing' });
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
      const r = await cli(['commit-task', '--job', job, '--task', '0', '--attempt', '1', '--json'], { env: sb.env });
      const reason = sb.store.caps.createsVisibleEarly ? 'stopped-before-written' : 'empty';
      assertFailed(r, 1, { kind: 'CorruptManifestError', reason, file: sb.uri(claim) });
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
      const cases = badInputs(sb, root, job, file!);
      // Usage errors through main() in this process: the same parsing, message and exit code.
      for (const [args, want] of cases) {
        const r = await inProcess([...args, '--json'], { env: { ...sb.env, STAGECOMMIT_JOB: undefined } });
        assertFailed(r, 2, { kind: 'UsageError', ...want });
        assert.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
      }
      assert.deepEqual(await readTree(sb.store, root), before);
      const jobId = await okInProcess(['stage', '--target', sb.uri(posix.join(root, 'v')), '--job-id', 'fixed-id'], {
        env: sb.env,
      });
      // The same id with other parameters names the difference; with the same ones it is a rerun.
      const dup = await inProcess(
        ['stage', '--target', sb.uri(posix.join(root, 'v')), '--job-id', 'fixed-id', '--mode', 'append', '--json'],
        { env: sb.env },
      );
      assertFailed(dup, 2, { reason: 'rerun-other-parameters', diff: "--mode append (the job's is create)" });
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
      const r = await cli(['commit-task', '--job', job, '--task', '0', '--json'], { env: sb.env });
      assertFailed(r, 2, { reason: 'file-outside-partitions', path: 'stray.csv', columns: ['dt'] });
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

/** Bad input to stage, commit-task, commit-job, status and clean-orphans, and the usage error each is. */
function badInputs(sb: StoreSandbox, root: string, job: string, file: string): [string[], Failure][] {
  const u = sb.uri(posix.join(root, 'u'));
  const stageIt = ['stage', '--job', job, '--task', '0'];
  return [
    [[...stageIt, '--partition', 'dt', file], { reason: 'partition-invalid', partition: 'dt' }],
    [['stage', '--job', job, '--task', '../x', '--partition', 'dt=1', file], { reason: 'task-id-invalid' }],
    [
      [...stageIt, '--partition', 'dt=1', '--name', '../evil', '-'],
      { reason: 'relative-path-invalid', path: '../evil', problem: 'segment' },
    ],
    [
      [...stageIt, '--partition', 'dt=1', '--name', '/etc/passwd', '-'],
      { reason: 'relative-path-invalid', path: '/etc/passwd', problem: 'absolute' },
    ],
    [[...stageIt, '--partition', 'dt=1', '/no/such/file.csv'], { reason: 'source-missing' }],
    [
      [...stageIt, '--partition', 'region=eu', file],
      { reason: 'partition-column-order', column: 'region', expected: 'dt' },
    ],
    [[...stageIt, file], { reason: 'partition-values-missing', columns: ['dt'] }],
    [[...stageIt, '--attempt', 'x', file], { reason: 'number-invalid', option: '--attempt', value: 'x' }],
    [
      ['stage', '--target', u, '--partition', 'dt=1', '--partition-by', 'region,dt'],
      { reason: 'partition-not-leading', column: 'dt' },
    ],
    [['stage', '--target', u, '--mode', 'replace'], { reason: 'command-line' }],
    [
      ['stage', '--target', u, '--staging-dir', sb.uri(posix.join(root, 'u', 'stage'))],
      { reason: 'staging-dir-in-target' },
    ],
    [['stage', '--target', u, '--job-id', 'a/b'], { reason: 'job-id-invalid', jobId: 'a/b' }],
    [['commit-task', '--job', job, '--task', '0', '--bogus'], { reason: 'command-line' }],
    [['commit-job'], { reason: 'no-job-given' }],
    [['status', '--job', sb.uri(posix.join(root, 'nope'))], { reason: 'no-job' }],
    [['clean-orphans', sb.uri(root), '--older-than', 'soon'], { reason: 'duration-invalid', duration: 'soon' }],
  ];
}
