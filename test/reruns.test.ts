// Safe reruns and no silent empties (issue 12 item 3), through the CLI on every store: a step
// whose work is done exits 0 and says so; a step that would do nothing by mistake is exit 2 and
// changes nothing.

import assert from 'node:assert/strict';
import { localHost } from '../src/steps/env.js';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { cli, errorOf, ok } from '../testing/cli.js';
import { inProcess, okInProcess } from '../testing/main.js';
import {
  commitJob,
  commitTask,
  localFiles,
  prepare,
  runJob,
  stage,
  stageArgs,
  stageTask,
  type JobSpec,
} from '../testing/jobs.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree, writeTree } from '../testing/tree.js';
import { encodeLease } from '../src/job/lease.js';
import { InjectedFault } from '../src/errors.js';
import { JobLayout } from '../src/job/layout.js';
import { commitJob as libCommitJob } from '../src/steps/commit-job.js';
import { commitTask as libCommitTask } from '../src/steps/commit-task.js';
import { driverDied, testEnv } from '../testing/lib.js';

/** A lease file's text; its holder known dead: a step of this host whose pid is gone (one on another host may live). */
function lease(expiresAtMs: number, dead = false): string {
  return encodeLease({
    op: 'commit-job',
    owner: 'someone',
    host: dead ? localHost() : 'other-host',
    pid: dead ? 2 ** 22 + 12345 : 1,
    acquiredAtMs: 0,
    expiresAtMs,
  });
}

for (const fx of storeFixtures()) {
  describe(`reruns on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'r');

    test('commit-job of a committed job exits 0 with already-committed; status reports it committed', async () => {
      const target = posix.join(dir(), 'sales');
      const job = await runJob(sb, { target, partitionBy: 'dt', tasks: 1 }, [
        { task: '0', partition: ['dt=1'], files: { a: 'a' } },
      ]);
      const before = await readTree(sb.store, target);

      const again = await commitJob(sb, job, ['--json']);
      assert.equal(again.code, 0, again.stderr);
      const doc = JSON.parse(again.stdout);
      assert.equal(doc.outcome, 'already-committed');
      assert.equal(doc.files, 1);
      assert.deepEqual(doc.partitionsWritten, ['dt=1']);
      assert.equal(doc.success, sb.uri(posix.join(target, '_SUCCESS')));
      const text = await commitJob(sb, job);
      assert.equal(text.code, 0, text.stderr);
      assert.equal(text.stdout.trim(), sb.uri(posix.join(target, '_SUCCESS')));
      assert.match(text.stderr, /already committed/);
      assert.deepEqual(await readTree(sb.store, target), before, 'a rerun changes nothing');

      const st = await cli(['status', '--job', job, '--json'], { env: sb.env });
      assert.equal(st.code, 0, st.stderr);
      assert.equal(JSON.parse(st.stdout).state, 'committed');
      const stText = await cli(['status', '--job', job], { env: sb.env });
      assert.equal(stText.code, 0, stText.stderr);
      assert.match(stText.stdout, /committed/);

      // recover after the fact (a script that recovers whatever a crash left) finds nothing to do: exit 0, no task to
      // run.
      const rec = await cli(['recover', '--job', job], { env: sb.env });
      assert.equal(rec.code, 0, rec.stderr);
      assert.equal(rec.stdout, '');
      assert.match(rec.stderr, /job .* was already committed \(.*_SUCCESS, .*\): nothing to do/);
      const recJson = await cli(['recover', '--job', job, '--json'], { env: sb.env });
      assert.equal(recJson.code, 0, recJson.stderr);
      const rdoc = JSON.parse(recJson.stdout);
      assert.equal(rdoc.state, 'committed');
      assert.equal(rdoc.appAttempt, null);
      assert.deepEqual(rdoc.tasksToRun, []);
      assert.equal(rdoc.alreadyCommitted.success, sb.uri(posix.join(target, '_SUCCESS')));
      assert.deepEqual(await readTree(sb.store, target), before, 'recover changes nothing');
    });

    test('once a later job rewrote _SUCCESS, the table log still proves the commit', async () => {
      const target = posix.join(dir(), 'sales');
      const first = await runJob(sb, { target, partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=1'], files: { a: 'a' } },
      ]);
      await runJob(sb, { target, mode: 'append', partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=2'], files: { b: 'b' } },
      ]);
      const r = await commitJob(sb, first, ['--json']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(JSON.parse(r.stdout).outcome, 'already-committed');
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a': 'a', 'dt=2/b': 'b' });
    });

    test('a handle that never named a job, or a custom staging dir that left no trace, is exit 2', async () => {
      const target = posix.join(dir(), 'sales');
      const noSuch = posix.join(posix.dirname(target), '.stagecommit', 'sales', 'no-such-job');
      for (const step of [['commit-job'], ['recover']]) {
        const never = await cli([...step, '--job', sb.uri(noSuch), '--json'], { env: sb.env });
        assert.equal(never.code, 2, never.stderr);
        assert.deepEqual(errorOf(never).detail, { reason: 'no-job', stagingDir: sb.uri(noSuch) });
        assert.equal(
          await sb.store.stat(noSuch),
          null,
          `${step[0]} made nothing where the handle points (no lease file)`,
        );
      }
      // A lease file a killed step left where no job is goes with the next step there; a live one stays.
      const stray = posix.join(noSuch, '_lease.0.yaml');
      await sb.store.writeFile(stray, lease(Date.now() - 1000, true));
      const swept = await cli(['commit-job', '--job', sb.uri(noSuch)], { env: sb.env });
      assert.equal(swept.code, 2, swept.stderr);
      assert.match(swept.stderr, /removed .*_lease\.0\.yaml, a lease file that a step ended before it left behind/);
      assert.equal(await sb.store.stat(stray), null);
      assert.equal(await sb.store.stat(noSuch), null, 'and the directory it alone kept');
      await sb.store.writeFile(stray, lease(Date.now() + 3_600_000));
      assert.equal((await cli(['abort', '--job', sb.uri(noSuch)], { env: sb.env })).code, 0);
      assert.ok(await sb.store.stat(stray), 'a live holder is left alone');
      await sb.store.delete(stray, false);
      const staging = posix.join(dir(), 'my-staging');
      const job = await runJob(sb, { target, stagingDir: staging }, [{ task: '0', files: { a: 'a' } }]);
      const r = await commitJob(sb, job, ['--json']);
      assert.equal(r.code, 2, r.stderr);
      assert.deepEqual(errorOf(r).detail, { reason: 'no-job', stagingDir: job });
    });

    // The rerun says only that, not "0 file(s)".
    test('a commit-job killed in its clean-up after saying committed: the rerun finishes the clean-up', async () => {
      const target = posix.join(dir(), 'cleanup');
      const handle = await prepare(sb, { target, partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=1'], files: { a: 'a' } },
      ]);
      const layout = new JobLayout(sb.pathOf(handle));
      // `_job.yaml` is written twice: committing (before publishing), then committed.
      let writes = 0;
      const env = testEnv(sb.store, (n, op, p) => {
        if (op === 'writeFile' && p === layout.jobFile) writes++;
        // Killed as the last of the staging dir goes: the plan is gone, `_job.yaml` says committed.
        else if (writes === 2 && op === 'delete' && (p === layout.jobFile || p === layout.root))
          throw new InjectedFault(n, op, p);
      });
      await assert.rejects(libCommitJob(env, { stagingPath: layout.root }), InjectedFault);
      await driverDied(sb.store, layout.root);
      // Its claims went first: `jobs` says what is left, not "0 task(s) committed".
      const listed = await cli(['jobs', sb.uri(target)], { env: sb.env });
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /committed .*published, clean-up left/);
      const again = await cli(['commit-job', '--job', handle], { env: sb.env });
      assert.equal(again.code, 0, again.stderr);
      // (HDFS removes the tree in one delete: killed before it, the plan is there to roll forward.)
      if (!sb.store.caps.atomicTreeDelete)
        assert.match(
          again.stderr + again.stdout,
          /finished the clean-up of job \S+: its files were already published into /,
        );
      assert.doesNotMatch(again.stderr + again.stdout, /0 file\(s\)/);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a': 'a' });
      assert.equal(await sb.store.stat(layout.root), null);
    });

    // The empty parents are the default layout's, left by a step killed in its clean-up.
    test('a step at a handle whose job is gone tidies the empty parents a killed clean-up left', async () => {
      const target = posix.join(dir(), 'tidy');
      const handle = await stage(sb, { target, partitionBy: 'dt' });
      const stagingPath = sb.pathOf(handle);
      await ok(['abort', '--job', handle], { env: sb.env });
      const table = posix.dirname(stagingPath);
      // What an abort killed between removing the staging dir and tidying its parents leaves.
      await sb.store.mkdirs(table);
      const again = await cli(['abort', '--job', handle], { env: sb.env });
      assert.equal(again.code, 0, again.stderr);
      if (sb.store.caps.realDirectories)
        assert.equal(await sb.store.stat(posix.dirname(table)), null, 'no empty .stagecommit/<table>/ left');
    });

    // stage warns that it removed them; anything else there is named.
    test('a --staging-dir of your own with only dead lease files: stage removes them and makes the job there', async () => {
      const target = posix.join(dir(), 'own');
      const staging = posix.join(dir(), 'own-staging');
      await sb.store.writeFile(posix.join(staging, '_lease.3.yaml'), lease(Date.now() + 3_600_000));
      const live = await cli(['stage', '--target', sb.uri(target), '--staging-dir', sb.uri(staging)], { env: sb.env });
      assert.equal(live.code, 2, live.stderr);
      // The words a user reads (a golden line).
      assert.match(
        live.stderr,
        /^stagecommit: error: the staging dir \S+ is not empty \(it holds '_lease\.3\.yaml'\): a job never adopts files it did not stage; choose an empty or new --staging-dir\n$/,
      );
      await sb.store.writeFile(posix.join(staging, '_lease.3.yaml'), lease(Date.now() - 1000, true));
      await sb.store.writeFile(posix.join(staging, '_lease.2.yaml'), lease(Date.now() - 2000, true));
      const made = await cli(['stage', '--target', sb.uri(target), '--staging-dir', sb.uri(staging)], { env: sb.env });
      assert.equal(made.code, 0, made.stderr);
      assert.match(made.stderr, /removed .*_lease\.3\.yaml, a lease file that a step ended before it left behind/);
      assert.match(made.stderr, /removed .*_lease\.2\.yaml, a lease file that a step ended before it left behind/);
      assert.equal(await sb.store.stat(posix.join(staging, '_lease.3.yaml')), null);
      await ok(['abort', '--job', made.stdout.trim()], { env: sb.env });
      for (const n of ['a', 'b', 'c', 'd']) await sb.store.writeFile(posix.join(staging, n), n);
      const stageThere = ['stage', '--target', sb.uri(target), '--staging-dir', sb.uri(staging), '--json'];
      const full = await cli(stageThere, { env: sb.env });
      assert.equal(full.code, 2, full.stderr);
      assert.deepEqual(errorOf(full).detail, {
        reason: 'staging-dir-not-empty',
        stagingDir: sb.uri(staging),
        names: "'a', 'b', 'c' and 1 more",
        stagedJobId: null,
      });
    });

    test('a task id outside --tasks N is exit 2 at stage and at commit-task; nothing is staged or committed', async () => {
      const target = posix.join(dir(), 'sales');
      const job = await stage(sb, { target, tasks: 2 });
      const staged = await cli(['stage', '--job', job, '--task', '7', '--print-path', '--json'], { env: sb.env });
      assert.equal(staged.code, 2, staged.stderr);
      assert.deepEqual(errorOf(staged).detail, { reason: 'task-not-declared', task: '7', tasks: 2, what: 'staged' });
      const r = await cli(['commit-task', '--job', job, '--task', '7', '--json'], { env: sb.env });
      assert.equal(r.code, 2, r.stderr);
      assert.deepEqual(errorOf(r).detail, { reason: 'task-not-declared', task: '7', tasks: 2, what: 'committed' });
      const st = JSON.parse(await ok(['status', '--job', job, '--json'], { env: sb.env }));
      assert.deepEqual(st.tasks, []);
    });

    test('commit-task of an attempt never staged in this app attempt is exit 2 naming where its files are', async () => {
      const target = posix.join(dir(), 'sales');
      const job = await stage(sb, { target, tasks: 1 });
      const oldDir = await okInProcess(['stage', '--job', job, '--task', '0', '--print-path'], { env: sb.env });
      const rec = await cli(['recover', '--job', job], { env: sb.env });
      assert.equal(rec.code, 0, rec.stderr);
      assert.equal(rec.stdout.trim(), '0');
      // A writer that missed the recover goes on writing into the old app attempt's dir.
      await sb.store.writeFile(posix.join(sb.pathOf(oldDir), 'part-0'), 'late writer');

      const r = await cli(['commit-task', '--job', job, '--task', '0', '--json'], { env: sb.env });
      assert.equal(r.code, 2, r.stderr);
      assert.deepEqual(errorOf(r).detail, {
        reason: 'attempt-not-staged',
        taskAttempt: `attempt_${posix.basename(job)}_0_0`,
        appAttempt: 1,
        olderOutput: oldDir,
      });
      const cj = await commitJob(sb, job);
      assert.equal(cj.code, 5, `commit-job must not publish an empty table: ${cj.stderr}`);
      assert.equal(await sb.store.stat(target), null);
      assert.equal(
        (await sb.store.readFile(posix.join(sb.pathOf(oldDir), 'part-0')))?.toString(),
        'late writer',
        "the writer's file is kept",
      );
    });

    test('an attempt staged and left empty commits empty output', async () => {
      const target = posix.join(dir(), 'sales');
      const job = await prepare(sb, { target, tasks: 2 }, [{ task: '0', files: { a: 'a' } }]);
      await okInProcess(['stage', '--job', job, '--task', '1', '--print-path'], { env: sb.env });
      const r = await cli(['commit-task', '--job', job, '--task', '1', '--json'], { env: sb.env });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(JSON.parse(r.stdout).files, 0);
      const cj = await commitJob(sb, job);
      assert.equal(cj.code, 0, cj.stderr);
      assert.deepEqual(data(await readTree(sb.store, target)), { a: 'a' });
    });

    test('commit-task of a committed attempt exits 0 and says so', async () => {
      const target = posix.join(dir(), 'sales');
      const job = await stage(sb, { target, tasks: 1 });
      await stageTask(sb, job, { task: '0', files: { a: 'a' } });
      assert.equal((await commitTask(sb, job, '0')).code, 0);
      const again = await commitTask(sb, job, '0');
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stderr, /already committed task 0/);
    });

    // A retry is a new attempt: the job's commit takes only the attempt that won the claim (protocol.md §5.9).
    test('a resumed job discards uncommitted attempts: the table gets one run per task', async () => {
      const target = posix.join(dir(), 't5');
      const spec = { target, mode: 'overwrite' as const, partitionBy: 'dt', tasks: 1, jobId: 'day1' };
      const job = await stage(sb, spec);
      const [aaa] = await localFiles({ 'part-aaa.csv': '1\n' });
      await okInProcess(['stage', '--job', job, '--task', '0', '--partition', 'dt=1', aaa!], { env: sb.env });
      // Killed; the rerun runs from the top with a writer that names its files otherwise.
      const again = await inProcess([...stageArgs(sb, spec), '--json'], { env: sb.env });
      assert.equal(again.code, 0, again.stderr);
      const doc = JSON.parse(again.stdout);
      assert.equal(doc.resumed, true);
      assert.deepEqual(doc.discarded, ['attempt_day1_0_0']);
      const toRun = await okInProcess(['status', '--job', job, '--tasks-to-run'], { env: sb.env });
      assert.equal(toRun, '0');
      const [bbb] = await localFiles({ 'part-bbb.csv': '2\n' });
      const st = await inProcess(['stage', '--job', job, '--task', '0', '--partition', 'dt=1', bbb!], { env: sb.env });
      assert.equal(st.code, 0, st.stderr);
      assert.match(st.stderr, /staged 1 file\(s\) for task 0 attempt 1/);
      const ct = await inProcess(['commit-task', '--job', job, '--task', '0', '--json'], { env: sb.env });
      assert.equal(ct.code, 0, ct.stderr);
      assert.equal(JSON.parse(ct.stdout).taskAttempt, 'attempt_day1_0_1');
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/part-bbb.csv': '2\n' });
      assert.equal(await sb.store.stat(sb.pathOf(job)), null, 'nothing left staged');
    });

    test('a rerun after a kill between decision and claim: status says committing, the loop goes on', async () => {
      const target = posix.join(dir(), 't1');
      const spec = { target, mode: 'overwrite' as const, partitionBy: 'dt', tasks: 2, jobId: 'C' };
      const job = await stage(sb, spec);
      for (const task of ['0', '1'])
        await stageTask(sb, job, { task, partition: ['dt=1'], files: { [`old-${task}`]: 'old' } });
      const layout = new JobLayout(sb.pathOf(job));
      // Task 0's commit-task dies once its decision exists, before its claim.
      const env = testEnv(sb.store, (n, op, p) => {
        if (op === 'createExclusive' && p === layout.claimFile(0, '0')) throw new InjectedFault(n, op, p);
      });
      await assert.rejects(libCommitTask(env, { stagingPath: layout.root, task: '0' }), InjectedFault);
      assert.ok(await sb.store.stat(layout.decisionFile(0, 'attempt_C_0_0')));
      const st = JSON.parse(await okInProcess(['status', '--job', job, '--json'], { env: sb.env }));
      assert.equal(st.tasks.find((t: { task: string }) => t.task === '0').state, 'committing');
      assert.deepEqual(st.tasksToRun, ['0', '1']);
      // The rerun from the top: the loop over tasks-to-run stages and commits each task.
      await okInProcess(stageArgs(sb, spec), { env: sb.env });
      const tasks = (await okInProcess(['status', '--job', job, '--tasks-to-run'], { env: sb.env })).split('\n');
      assert.deepEqual(tasks, ['0', '1']);
      for (const task of tasks) {
        const [f] = await localFiles({ [`new-${task}`]: 'new' });
        const s = await inProcess(['stage', '--job', job, '--task', task, '--partition', 'dt=1', f!], { env: sb.env });
        assert.equal(s.code, 0, s.stderr);
        const c = await inProcess(['commit-task', '--job', job, '--task', task], { env: sb.env });
        assert.equal(c.code, 0, c.stderr);
      }
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/new-0': 'new', 'dt=1/new-1': 'new' });
    });

    test('a rerun after a kill between claim and promotion: commit-task finishes the claimed attempt', async () => {
      const target = posix.join(dir(), 't2');
      const spec = { target, mode: 'overwrite' as const, partitionBy: 'dt', tasks: 1, jobId: 'D' };
      const job = await stage(sb, spec);
      await stageTask(sb, job, { task: '0', partition: ['dt=1'], files: { old: 'old' } });
      const layout = new JobLayout(sb.pathOf(job));
      let created = false;
      // Killed at its first change after the claim's create.
      const env = testEnv(sb.store, (n, op, p) => {
        if (created) throw new InjectedFault(n, op, p);
        if (op === 'createExclusive' && p === layout.claimFile(0, '0')) created = true;
      });
      await assert.rejects(libCommitTask(env, { stagingPath: layout.root, task: '0' }), InjectedFault);
      await okInProcess(stageArgs(sb, spec), { env: sb.env });
      assert.equal(await okInProcess(['status', '--job', job, '--tasks-to-run'], { env: sb.env }), '0');
      const [f] = await localFiles({ new: 'new' });
      const s = await inProcess(['stage', '--job', job, '--task', '0', '--partition', 'dt=1', f!], { env: sb.env });
      assert.equal(s.code, 0, s.stderr);
      const c = await inProcess(['commit-task', '--job', job, '--task', '0', '--json'], { env: sb.env });
      assert.equal(c.code, 0, c.stderr);
      assert.equal(JSON.parse(c.stdout).taskAttempt, 'attempt_D_0_0', 'the claimed attempt, finished');
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/old': 'old' }, 'one run: the killed one');
    });

    // A scheduler that fires one run twice: the exclusive create of `_job.yaml` decides, the other resumes.
    test('two stage --job-id of one job at once: both exit 0 with the one handle, one job made', async () => {
      for (let round = 0; round < 4; round++) {
        const target = posix.join(dir(), `twice-${round}`);
        const spec = { target, mode: 'overwrite' as const, partitionBy: 'dt', tasks: 1, jobId: 'R' };
        const runs = await Promise.all([0, 1].map(() => cli([...stageArgs(sb, spec), '--json'], { env: sb.env })));
        for (const r of runs) assert.equal(r.code, 0, r.stderr);
        const docs = runs.map((r) => JSON.parse(r.stdout));
        assert.equal(docs[0].handle, docs[1].handle);
        assert.equal(docs[0].stagedAtMs, docs[1].stagedAtMs, 'one job');
        assert.equal(docs.filter((d) => d.resumed).length, 1);
      }
    });

    test('a rerun of a committed job with other parameters is exit 2 naming the difference', async () => {
      const target = posix.join(dir(), 'done');
      const spec = { target, mode: 'overwrite' as const, partitionBy: 'dt', tasks: 1, jobId: 'day9' };
      const job = await stage(sb, spec);
      await stageTask(sb, job, { task: '0', partition: ['dt=1'], files: { a: 'a' } });
      await ok(['commit-task', '--job', job, '--task', '0'], { env: sb.env });
      assert.equal((await commitJob(sb, job)).code, 0);
      const before = await readTree(sb.store, target);
      const others: [Partial<JobSpec>, string][] = [
        [{ mode: 'append' }, "--mode append (the job's was overwrite)"],
        [{ partitionBy: 'region' }, "--partition-by region (the job's was dt)"],
        [{ tasks: 2 }, "--tasks 2 (the job's was 1)"],
      ];
      for (const [other, diff] of others) {
        const r = await inProcess([...stageArgs(sb, { ...spec, ...other }), '--json'], { env: sb.env });
        assert.equal(r.code, 2, r.stderr);
        assert.deepEqual(errorOf(r).detail, { reason: 'rerun-other-parameters', jobId: 'day9', stagingDir: job, diff });
      }
      const same = await inProcess([...stageArgs(sb, spec), '--json'], { env: sb.env });
      assert.equal(same.code, 0, same.stderr);
      assert.equal(JSON.parse(same.stdout).state, 'committed');
      assert.deepEqual(await readTree(sb.store, target), before, 'nothing changed');
    });

    test('a resumed job is young again: clean-orphans --delete keeps it', async () => {
      const target = posix.join(dir(), 'aged');
      const spec = { target, mode: 'overwrite' as const, partitionBy: 'dt', tasks: 1, jobId: 'old' };
      const job = await stage(sb, spec);
      await new Promise((r) => setTimeout(r, 3_000));
      await okInProcess(stageArgs(sb, spec), { env: sb.env });
      const root = sb.uri(posix.dirname(target));
      const co = await inProcess(['clean-orphans', root, '--older-than', '2s', '--delete', '--json'], { env: sb.env });
      assert.equal(co.code, 0, co.stderr);
      const mine = JSON.parse(co.stdout).leftovers.find((l: { uri: string }) => l.uri === job);
      assert.notEqual(mine?.action, 'deleted', co.stdout);
      assert.ok(await sb.store.stat(posix.join(sb.pathOf(job), '_job.yaml')), 'the job is still there');
      await new Promise((r) => setTimeout(r, 3_000));
      const later = await inProcess(['clean-orphans', root, '--older-than', '2s', '--delete'], { env: sb.env });
      assert.equal(later.code, 0, later.stderr);
      assert.equal(await sb.store.stat(sb.pathOf(job)), null, 'left alone long enough, it goes');
    });

    test('without --tasks, --tasks-to-run is exit 2; an overwrite with no task committed is exit 5', async () => {
      const target = posix.join(dir(), 'undeclared');
      await writeTree(sb.store, target, { old: 'old' });
      const job = await stage(sb, { target, mode: 'overwrite' });
      const toRun = await inProcess(['status', '--job', job, '--tasks-to-run', '--json'], { env: sb.env });
      assert.equal(toRun.code, 2, toRun.stderr);
      const jobId = posix.basename(job);
      assert.deepEqual(errorOf(toRun).detail, { reason: 'tasks-not-declared', jobId });
      const empty = await commitJob(sb, job, ['--json']);
      assert.equal(empty.code, 5, empty.stderr);
      assert.deepEqual(errorOf(empty).detail, { reason: 'no-task-committed', jobId });
      assert.deepEqual(data(await readTree(sb.store, target)), { old: 'old' }, 'nothing changed');
      // One task committed with no files replaces it with nothing on purpose.
      await okInProcess(['stage', '--job', job, '--task', '0', '--print-path'], { env: sb.env });
      await okInProcess(['commit-task', '--job', job, '--task', '0'], { env: sb.env });
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), {});
    });

    test('two FILE arguments of one name: exit 2 naming it', async () => {
      const job = await stage(sb, { target: posix.join(dir(), 'same'), tasks: 1 });
      const [a] = await localFiles({ 'x.csv': 'a' });
      const [b] = await localFiles({ 'x.csv': 'b' });
      const r = await inProcess(['stage', '--job', job, '--task', '0', a!, b!, '--json'], { env: sb.env });
      assert.equal(r.code, 2, r.stderr);
      assert.deepEqual(errorOf(r).detail, { reason: 'file-name-twice', name: 'x.csv' });
    });
  });
}
