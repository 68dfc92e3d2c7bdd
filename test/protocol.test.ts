// The staged-commit protocol end to end through the CLI, on every store: modes × partitioning ×
// algorithm, claims, abort, status and bad input. Outcomes: files and bytes under the target,
// what is left in staging, exit codes and messages.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { cli, ok } from './helpers/cli.js';
import { commitJob, commitTask, localFiles, prepare, runJob, stage, stageTask } from './helpers/jobs.js';
import { storeFixtures, useSandbox, type StoreSandbox } from './helpers/stores.js';
import { data, readTree, writeTree } from './helpers/tree.js';

for (const fx of storeFixtures()) {
  describe(`protocol on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 't');

    test('create: several tasks appear whole, the staging dir is gone, _SUCCESS is Hadoop JSON', async () => {
      const root = dir();
      const target = posix.join(root, 'sales');
      const job = await runJob(sb, { target }, [
        { task: '0', files: { 'part-0.csv': 'a\n' } },
        { task: '1', files: { 'part-1.csv': 'b\n' } },
        { task: '2', files: { 'part-2.csv': 'c\n' } },
      ]);
      const tree = await readTree(sb.store, target);
      assert.deepEqual(data(tree), { 'part-0.csv': 'a\n', 'part-1.csv': 'b\n', 'part-2.csv': 'c\n' });
      const success = JSON.parse(tree._SUCCESS!);
      assert.equal(success.name, 'org.apache.hadoop.fs.s3a.commit.files.SuccessData/1');
      assert.equal(success.success, true);
      assert.equal(success.committer, 'stagecommit');
      assert.equal(success.filenames.length, 3);
      assert.ok(success.jobId && typeof success.timestamp === 'number' && success.hostname && success.date);
      assert.ok(success.metrics.op_rename > 0 || success.metrics.op_copy > 0);
      const beside = Object.keys(await readTree(sb.store, root, { dirs: true }));
      assert.deepEqual(beside.filter((k) => !k.startsWith('.stagecommit/sales/_log/')), Object.keys(tree).map((k) => `sales/${k}`), 'nothing but the table (and its log) is left beside it');
      assert.deepEqual(beside.filter((k) => k.startsWith('.stagecommit/')), ['.stagecommit/sales/_log/00000000000000000000.done', '.stagecommit/sales/_log/00000000000000000000.yaml'], 'the table log holds one finished entry');
      const again = await cli(['status', '--job', job], { env: sb.env });
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /committed \(finished: no staging dir left\)/);
    });

    test('create refuses an existing target at stage (exit 2) and one that appeared by commit-job (exit 4)', async () => {
      const target = posix.join(dir(), 't');
      await writeTree(sb.store, target, { 'old.csv': 'old' });
      const r = await cli(['stage', '--target', sb.uri(target)], { env: sb.env });
      assert.equal(r.code, 2);
      assert.match(r.stderr, /already exists.*--mode append or --mode overwrite/);
      assert.equal(r.stderr.trim().split('\n').length, 1);

      const target2 = posix.join(dir(), 't');
      const job = await prepare(sb, { target: target2 }, [{ task: '0', files: { 'a.csv': 'new' } }]);
      await writeTree(sb.store, target2, { 'intruder.csv': 'x' });
      const c = await commitJob(sb, job);
      assert.equal(c.code, 4);
      assert.match(c.stderr, /appeared after job/);
      assert.deepEqual(await readTree(sb.store, target2), { 'intruder.csv': 'x' });
      assert.equal((await cli(['status', '--job', job], { env: sb.env })).code, 0, 'the job is still there to abort');
    });

    test('append: new files join; a clash with different bytes is exit 4 and changes nothing; identical bytes are fine', async () => {
      const target = posix.join(dir(), 'events');
      await writeTree(sb.store, target, { 'dt=1/a.csv': 'a', 'dt=1/same.csv': 'same' });
      await runJob(sb, { target, mode: 'append', partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=1'], files: { 'b.csv': 'b', 'same.csv': 'same' } },
        { task: '1', partition: ['dt=2'], files: { 'c.csv': 'c' } },
      ]);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a.csv': 'a', 'dt=1/b.csv': 'b', 'dt=1/same.csv': 'same', 'dt=2/c.csv': 'c' });

      const before = await readTree(sb.store, target);
      const job = await prepare(sb, { target, mode: 'append', partitionBy: 'dt' }, [{ task: '0', partition: ['dt=1'], files: { 'a.csv': 'different', 'd.csv': 'd' } }]);
      const r = await commitJob(sb, job);
      assert.equal(r.code, 4);
      assert.match(r.stderr, /append would overwrite 1 existing file.*dt=1\/a.csv/);
      assert.deepEqual(await readTree(sb.store, target), before);
    });

    test('overwrite (no partitions): data replaced, other writers\' _temporary and .spark-staging left alone', async () => {
      const target = posix.join(dir(), 'tbl');
      await writeTree(sb.store, target, {
        'part-0.csv': 'old0',
        'part-9.csv': 'old9',
        'sub/x.csv': 'oldx',
        '_temporary/0/other.csv': 'theirs',
        '.spark-staging-0a1b2c3d-0000-4000-8000-000000000000/dt=1/p.parquet': 'spark',
        '_SUCCESS': '{}',
      });
      await runJob(sb, { target, mode: 'overwrite' }, [
        { task: '0', files: { 'part-0.csv': 'new0' } },
        { task: '1', files: { 'part-1.csv': 'new1' } },
      ]);
      const tree = await readTree(sb.store, target);
      assert.deepEqual(data(tree), {
        '.spark-staging-0a1b2c3d-0000-4000-8000-000000000000/dt=1/p.parquet': 'spark',
        '_temporary/0/other.csv': 'theirs',
        'part-0.csv': 'new0',
        'part-1.csv': 'new1',
      });
      assert.deepEqual(JSON.parse(tree._SUCCESS!).partitionsReplaced, ['']);
    });

    test('overwrite of a static partition replaces only that partition', async () => {
      const target = posix.join(dir(), 'sales');
      await writeTree(sb.store, target, { 'dt=1/a.csv': 'old-a', 'dt=1/b.csv': 'old-b', 'dt=2/a.csv': 'keep' });
      await runJob(sb, { target, mode: 'overwrite', partition: ['dt=1'] }, [
        { task: '0', files: { 'a.csv': 'new-a' } },
        { task: '1', files: { 'c.csv': 'new-c' } },
      ]);
      const tree = await readTree(sb.store, target);
      assert.deepEqual(data(tree), { 'dt=1/a.csv': 'new-a', 'dt=1/c.csv': 'new-c', 'dt=2/a.csv': 'keep' });
      const s = JSON.parse(tree._SUCCESS!);
      assert.deepEqual(s.partitionsReplaced, ['dt=1']);
      assert.deepEqual(s.partitionsWritten, ['dt=1']);
    });

    test('dynamic overwrite replaces only the partitions the job wrote, with static and dynamic columns mixed', async () => {
      const target = posix.join(dir(), 'sales');
      await writeTree(sb.store, target, {
        'dt=1/region=eu/a.csv': 'old',
        'dt=1/region=us/a.csv': 'keep-us',
        'dt=1/region=eu/_temporary/x': 'other-writer',
        'dt=2/region=eu/a.csv': 'keep-dt2',
      });
      await runJob(sb, { target, mode: 'overwrite', partition: ['dt=1'], partitionBy: 'dt,region' }, [
        { task: '0', partition: ['region=eu'], files: { 'b.csv': 'new-eu' } },
        { task: '1', partition: ['region=apac'], files: { 'c.csv': 'new-apac' } },
      ]);
      const tree = await readTree(sb.store, target);
      assert.deepEqual(data(tree), {
        'dt=1/region=apac/c.csv': 'new-apac',
        'dt=1/region=eu/_temporary/x': 'other-writer',
        'dt=1/region=eu/b.csv': 'new-eu',
        'dt=1/region=us/a.csv': 'keep-us',
        'dt=2/region=eu/a.csv': 'keep-dt2',
      });
      assert.deepEqual(JSON.parse(tree._SUCCESS!).partitionsReplaced, ['dt=1/region=eu']);
    });

    test('dynamic overwrite swaps a partition whole and merges several tasks into one partition', async () => {
      const target = posix.join(dir(), 'sales');
      await writeTree(sb.store, target, { 'dt=1/old-1.csv': 'o1', 'dt=1/old-2.csv': 'o2', 'dt=3/keep.csv': 'k' });
      await runJob(sb, { target, mode: 'overwrite', partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=1'], files: { 'p0.csv': '0' } },
        { task: '1', partition: ['dt=1'], files: { 'p1.csv': '1' } },
        { task: '2', partition: ['dt=2'], files: { 'p2.csv': '2' } },
        { task: '3', partition: ['dt=2'], files: { 'p3.csv': '3' } },
      ]);
      assert.deepEqual(data(await readTree(sb.store, target)), {
        'dt=1/p0.csv': '0',
        'dt=1/p1.csv': '1',
        'dt=2/p2.csv': '2',
        'dt=2/p3.csv': '3',
        'dt=3/keep.csv': 'k',
      });
    });

    test('v2 publishes at commit-task; v2 with overwrite is refused at stage', async () => {
      const target = posix.join(dir(), 'v2');
      const job = await stage(sb, { target, algorithm: 'v2', partitionBy: 'dt' });
      await stageTask(sb, job, { task: '0', partition: ['dt=1'], files: { 'a.csv': 'a' } });
      await stageTask(sb, job, { task: '1', partition: ['dt=1'], files: { 'b.csv': 'b' } });
      assert.equal((await commitTask(sb, job, '0')).code, 0);
      assert.deepEqual(await readTree(sb.store, target), { 'dt=1/a.csv': 'a' }, 'visible before commit-job');
      assert.equal((await commitTask(sb, job, '1')).code, 0);
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a.csv': 'a', 'dt=1/b.csv': 'b' });

      await runJob(sb, { target, mode: 'append', algorithm: 'v2', partitionBy: 'dt' }, [{ task: '0', partition: ['dt=2'], files: { 'c.csv': 'c' } }]);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a.csv': 'a', 'dt=1/b.csv': 'b', 'dt=2/c.csv': 'c' });

      const r = await cli(['stage', '--target', sb.uri(target), '--mode', 'overwrite', '--algorithm', 'v2'], { env: sb.env });
      assert.equal(r.code, 2);
      assert.match(r.stderr, /v2 cannot be used with --mode overwrite/);
    });

    test('declared tasks: commit-job exits 5 naming the missing ones, and changes nothing', async () => {
      const target = posix.join(dir(), 't');
      const job = await prepare(sb, { target, tasks: 3 }, [{ task: '0', files: { 'a': 'a' } }, { task: '2', files: { 'c': 'c' } }]);
      const r = await commitJob(sb, job);
      assert.equal(r.code, 5);
      assert.match(r.stderr, /1 of 3 declared task\(s\) are not committed: 1/);
      assert.equal(await sb.store.stat(target), null);
      await stageTask(sb, job, { task: '1', files: { 'b': 'b' } });
      assert.equal((await commitTask(sb, job, '1')).code, 0);
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { a: 'a', b: 'b', c: 'c' });
    });

    test('two tasks writing one destination: exit 4 before the commit point', async () => {
      const target = posix.join(dir(), 't');
      await writeTree(sb.store, target, { 'dt=1/keep': 'k' });
      const job = await prepare(sb, { target, mode: 'append', partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=2'], files: { 'x.csv': 'from-0' } },
        { task: '1', partition: ['dt=2'], files: { 'x.csv': 'from-1' } },
      ]);
      const r = await commitJob(sb, job);
      assert.equal(r.code, 4);
      assert.match(r.stderr, /tasks 0 and 1 both wrote 'dt=2\/x.csv'/);
      assert.deepEqual(await readTree(sb.store, target), { 'dt=1/keep': 'k' });
    });

    test('commit claims: the first attempt wins, others exit 3, the same attempt again is fine', async () => {
      const target = posix.join(dir(), 't');
      const job = await stage(sb, { target });
      await stageTask(sb, job, { task: '7', attempt: 0, files: { 'winner.csv': 'w' } });
      await stageTask(sb, job, { task: '7', attempt: 1, files: { 'loser.csv': 'l' } });
      assert.equal((await commitTask(sb, job, '7', 0)).code, 0);
      const denied = await commitTask(sb, job, '7', 1);
      assert.equal(denied.code, 3);
      assert.match(denied.stderr, /commit denied.*claimed by attempt_.*_7_0/);
      const again = await commitTask(sb, job, '7', 0);
      assert.equal(again.code, 0);
      assert.match(again.stderr, /already committed/);
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'winner.csv': 'w' });
    });

    test('abort: an aborted attempt can never commit; a job abort leaves the target untouched and is idempotent', async () => {
      const target = posix.join(dir(), 't');
      await writeTree(sb.store, target, { 'old.csv': 'old' });
      const job = await stage(sb, { target, mode: 'overwrite' });
      await stageTask(sb, job, { task: '0', files: { 'a.csv': 'a0' } });
      assert.equal((await cli(['abort', '--job', job, '--task', '0'], { env: sb.env })).code, 0);
      const d = await commitTask(sb, job, '0', 0);
      assert.equal(d.code, 3);
      assert.match(d.stderr, /aborted/);
      await stageTask(sb, job, { task: '0', attempt: 1, files: { 'a.csv': 'a1' } });
      assert.equal((await commitTask(sb, job, '0', 1)).code, 0);
      const st = JSON.parse(await ok(['status', '--job', job, '--json'], { env: sb.env }));
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

    test('status shows tasks, files and bytes (text and --json)', async () => {
      const target = posix.join(dir(), 't');
      const job = await prepare(sb, { target, tasks: 2, partitionBy: 'dt' }, [{ task: '0', partition: ['dt=1'], files: { 'a.csv': 'abc' } }]);
      await stageTask(sb, job, { task: '1', attempt: 2, partition: ['dt=2'], files: { 'b.csv': 'b' } });
      const text = await ok(['status', '--job', job], { env: sb.env });
      assert.match(text, /state\s+staged/);
      assert.match(text, /committed 1 task\(s\), 1 file\(s\), 3 B of 2 declared/);
      assert.match(text, /missing\s+1/);
      const j = JSON.parse(await ok(['status', '--job', job, '--json'], { env: sb.env }));
      assert.equal(j.files, 1);
      assert.equal(j.bytes, 3);
      assert.deepEqual(j.tasks.map((t: { task: string; state: string }) => [t.task, t.state]), [['0', 'committed'], ['1', 'attempted']]);
      assert.deepEqual(j.declaredMissing, ['1']);
    });

    test('unicode and spaces in names and partition values; Hive escaping keeps a / inside its value', async () => {
      const target = posix.join(dir(), 'städte tabelle');
      await runJob(sb, { target, partitionBy: 'city,note' }, [
        { task: '0', partition: ['city=São Paulo/Zona #1', 'note=50% = half?'], files: { 'résumé 1.csv': 'olá' } },
        { task: '1', partition: ['city=東京', 'note='], files: { 'données.csv': 'x' } },
      ]);
      assert.deepEqual(data(await readTree(sb.store, target)), {
        'city=São Paulo%2FZona %231/note=50%25 %3D half%3F/résumé 1.csv': 'olá',
        'city=東京/note=__HIVE_DEFAULT_PARTITION__/données.csv': 'x',
      });
    });

    test('stdin staging, and a writer that writes into --print-path itself', async () => {
      const target = posix.join(dir(), 't');
      const job = await stage(sb, { target, partitionBy: 'dt' });
      const s = await cli(['stage', '--job', job, '--task', '0', '--partition', 'dt=1', '--name', 'from-stdin.csv', '-'], { env: sb.env, input: 'piped\n' });
      assert.equal(s.code, 0, s.stderr);
      const printed = await ok(['stage', '--job', job, '--task', '1', '--print-path'], { env: sb.env });
      const rel = sb.pathOf(printed);
      await writeTree(sb.store, rel, { 'dt=2/part-00000.parquet': 'p', 'dt=2/.part-00000.parquet.crc': 'crc' });
      assert.equal((await commitTask(sb, job, '0')).code, 0);
      assert.equal((await commitTask(sb, job, '1')).code, 0);
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/from-stdin.csv': 'piped\n', 'dt=2/.part-00000.parquet.crc': 'crc', 'dt=2/part-00000.parquet': 'p' });
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
        [['stage', '--job', job, '--task', '0', '--partition', 'dt=1', '--name', '../evil', '-'], /'\.\.' segments are not allowed/],
        [['stage', '--job', job, '--task', '0', '--partition', 'dt=1', '--name', '/etc/passwd', '-'], /absolute paths are not allowed/],
        [['stage', '--job', job, '--task', '0', '--partition', 'dt=1', '/no/such/file.csv'], /no such file/],
        [['stage', '--job', job, '--task', '0', '--partition', 'region=eu', file!], /expected column 'dt'/],
        [['stage', '--job', job, '--task', '0', file!], /need a value for partition column\(s\) dt/],
        [['stage', '--job', job, '--task', '0', '--attempt', 'x', file!], /--attempt must be a whole number/],
        [['stage', '--target', sb.uri(posix.join(root, 'u')), '--partition', 'dt=1', '--partition-by', 'region,dt'], /static values must be the leading columns/],
        [['stage', '--target', sb.uri(posix.join(root, 'u')), '--mode', 'replace'], /--mode/],
        [['stage', '--target', sb.uri(posix.join(root, 'u')), '--staging-dir', sb.uri(posix.join(root, 'u', 'stage'))], /inside the target/],
        [['stage', '--target', sb.uri(posix.join(root, 'u')), '--job-id', 'a/b'], /invalid --job-id/],
        [['commit-task', '--job', job, '--task', '0', '--bogus'], /unknown option/],
        [['commit-job'], /no job given/],
        [['status', '--job', sb.uri(posix.join(root, 'nope'))], /never existed/],
        [['clean-orphans', sb.uri(root), '--older-than', 'soon'], /invalid --older-than/],
      ];
      for (const [args, pattern] of cases) {
        const r = await cli(args, { env: { ...sb.env, STAGECOMMIT_JOB: undefined } });
        assert.equal(r.code, 2, `${args.join(' ')} → ${r.code}: ${r.stderr}`);
        assert.match(r.stderr, pattern, args.join(' '));
        assert.equal(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
      }
      assert.deepEqual(await readTree(sb.store, root), before);
      const jobId = await ok(['stage', '--target', sb.uri(posix.join(root, 'v')), '--job-id', 'fixed-id'], { env: sb.env });
      const dup = await cli(['stage', '--target', sb.uri(posix.join(root, 'v')), '--job-id', 'fixed-id'], { env: sb.env });
      assert.equal(dup.code, 2);
      assert.match(dup.stderr, /already in use/);
      assert.ok(jobId.endsWith('fixed-id'));
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

    test('a 7 MiB file (above the S3 sandbox\'s multipart-copy threshold) arrives byte for byte', async () => {
      const target = posix.join(dir(), 'big');
      const big = Array.from({ length: 7 * 1024 }, (_, i) => `${String(i).padStart(1023, '.')}\n`).join('');
      await runJob(sb, { target }, [{ task: '0', files: { 'big.csv': big } }]);
      const got = await sb.store.readFile(posix.join(target, 'big.csv'));
      assert.equal(got?.length, big.length);
      assert.ok(got?.equals(Buffer.from(big)));
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
