// The staged-commit protocol end to end through the CLI, on every store: modes × partitioning ×
// algorithm (claims, abort, status and bad input: protocol-steps.test.ts). Outcomes: files and
// bytes under the target, what is left in staging, exit codes and messages.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { assertFailed, cli } from '../testing/cli.js';
import { commitJob, commitTask, prepare, runJob, stage, stageTask } from '../testing/jobs.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree, writeTree } from '../testing/tree.js';
import { JobLayout } from '../src/job/layout.js';
import { libCommitTask, libStage, libStageTask, testEnv } from '../testing/lib.js';
import { killed as killedAt } from '../testing/crash-points.js';
import { InjectedFault } from '../src/errors.js';
import { commitJob as commitJobStep } from '../src/steps/commit-job.js';
import { recover as recoverStep } from '../src/steps/recover.js';

for (const fx of storeFixtures()) {
  describe(`protocol: modes on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 't');

    test('create: several tasks appear whole, the staging dir is gone, _SUCCESS is Hadoop JSON', async () => {
      const root = dir();
      const target = posix.join(root, 'sales');
      // Every step as its own process, as a script runs them (elsewhere setup runs main() in-process).
      const job = await runJob(
        sb,
        { target },
        [
          { task: '0', files: { 'part-0.csv': 'a\n' } },
          { task: '1', files: { 'part-1.csv': 'b\n' } },
          { task: '2', files: { 'part-2.csv': 'c\n' } },
        ],
        cli,
      );
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
      assert.deepEqual(
        beside.filter((k) => !k.startsWith('.stagecommit/sales/_log/')),
        Object.keys(tree).map((k) => `sales/${k}`),
        'nothing but the table (and its log) is left beside it',
      );
      assert.deepEqual(
        beside.filter((k) => k.startsWith('.stagecommit/')),
        [
          '.stagecommit/sales/_log/00000000000000000000.done',
          '.stagecommit/sales/_log/00000000000000000000.yaml',
          '.stagecommit/sales/_log/checkpoint.yaml',
          '.stagecommit/sales/_log/log-id.yaml',
        ],
        'the table log holds one finished entry, its checkpoint and its id',
      );
      const again = await cli(['status', '--job', job], { env: sb.env });
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, /committed \(finished: no staging dir left\)/);
    });

    test('create refuses an existing target at stage (exit 2) and one that appeared by commit-job (exit 6)', async () => {
      const target = posix.join(dir(), 't');
      await writeTree(sb.store, target, { 'old.csv': 'old' });
      const r = await cli(['stage', '--target', sb.uri(target)], { env: sb.env });
      assert.equal(r.code, 2);
      // The words a user reads (a golden line).
      assert.match(r.stderr, /already exists.*--mode append or --mode overwrite/);
      assert.equal(r.stderr.trim().split('\n').length, 1);

      const target2 = posix.join(dir(), 't');
      const job = await prepare(sb, { target: target2 }, [{ task: '0', files: { 'a.csv': 'new' } }]);
      await writeTree(sb.store, target2, { 'intruder.csv': 'x' });
      const c = await commitJob(sb, job, ['--json']);
      assertFailed(c, 6, { kind: 'ConflictError', reason: 'target-appeared', target: sb.uri(target2) });
      assert.deepEqual(await readTree(sb.store, target2), { 'intruder.csv': 'x' });
      assert.equal((await cli(['status', '--job', job], { env: sb.env })).code, 0, 'the job is still there to abort');
    });

    test('append: new files join; a clash with other bytes exits 6, nothing changed; identical bytes are fine', async () => {
      const target = posix.join(dir(), 'events');
      await writeTree(sb.store, target, { 'dt=1/a.csv': 'a', 'dt=1/same.csv': 'same' });
      await runJob(sb, { target, mode: 'append', partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=1'], files: { 'b.csv': 'b', 'same.csv': 'same' } },
        { task: '1', partition: ['dt=2'], files: { 'c.csv': 'c' } },
      ]);
      assert.deepEqual(data(await readTree(sb.store, target)), {
        'dt=1/a.csv': 'a',
        'dt=1/b.csv': 'b',
        'dt=1/same.csv': 'same',
        'dt=2/c.csv': 'c',
      });

      const before = await readTree(sb.store, target);
      const job = await prepare(sb, { target, mode: 'append', partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=1'], files: { 'a.csv': 'different', 'd.csv': 'd' } },
      ]);
      const r = await commitJob(sb, job, ['--json']);
      assertFailed(r, 6, { reason: 'append-clash', count: 1, first: 'dt=1/a.csv', v2: false });
      assert.deepEqual(await readTree(sb.store, target), before);
    });

    // A v2 task refused so is left free to commit other files.
    test('append: a file where the target has a directory exits 6 naming it, nothing changed', async () => {
      const target = posix.join(dir(), 'events');
      const before = { 'dt=1/x.csv/inner': 'old' };
      await writeTree(sb.store, target, before);
      const clash = { reason: 'kind-mismatch', path: 'dt=1/x.csv', output: 'file', target: 'dir' };
      const v1 = await prepare(sb, { target, mode: 'append', partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=1'], files: { 'x.csv': 'new' } },
      ]);
      assertFailed(await commitJob(sb, v1, ['--json']), 6, clash);
      assert.equal((await cli(['abort', '--job', v1], { env: sb.env })).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), before);

      const v2 = await stage(sb, { target, mode: 'append', algorithm: 'v2', partitionBy: 'dt' });
      await stageTask(sb, v2, { task: '0', partition: ['dt=1'], files: { 'x.csv': 'new' } });
      assertFailed(await cli(['commit-task', '--job', v2, '--task', '0', '--json'], { env: sb.env }), 6, clash);
      assert.deepEqual(data(await readTree(sb.store, target)), before);
      await stageTask(sb, v2, { task: '0', attempt: 1, partition: ['dt=1'], files: { 'y.csv': 'y' } });
      const again = await commitTask(sb, v2, '0', 1);
      assert.equal(again.code, 0, again.stderr);
      assert.equal((await commitJob(sb, v2)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { ...before, 'dt=1/y.csv': 'y' });
    });

    test("overwrite (no partitions): data replaced, other writers' _temporary and .spark-staging left alone", async () => {
      const target = posix.join(dir(), 'tbl');
      await writeTree(sb.store, target, {
        'part-0.csv': 'old0',
        'part-9.csv': 'old9',
        'sub/x.csv': 'oldx',
        '_temporary/0/other.csv': 'theirs',
        '.spark-staging-0a1b2c3d-0000-4000-8000-000000000000/dt=1/p.parquet': 'spark',
        _SUCCESS: '{}',
      });
      const job = await prepare(sb, { target, mode: 'overwrite' }, [
        { task: '0', files: { 'part-0.csv': 'new0' } },
        { task: '1', files: { 'part-1.csv': 'new1' } },
      ]);
      // The dry run names everything the target loses, an old file replaced in place too.
      const dry = JSON.parse(
        (await cli(['commit-job', '--job', job, '--dry-run', '--json'], { env: sb.env })).stdout,
      ) as { summary: { displaced: string[] }; operations: { to?: string; replace?: boolean }[] };
      const last = (u: string) => u.slice(u.lastIndexOf('/') + 1);
      if (sb.store.caps.directoryRename) {
        assert.deepEqual(dry.summary.displaced.map(last).sort(), ['part-0.csv', 'part-9.csv', 'sub']);
        assert.deepEqual(
          dry.operations.filter((o) => o.replace).map((o) => last(o.to!)),
          ['part-0.csv'],
        );
      }
      assert.equal((await commitJob(sb, job)).code, 0);
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

    // The file has mode 0644; it is replaced where paths are directories.
    test('overwrite of a partition whose place holds a file: replaced as old data; on S3 exit 6', async () => {
      const target = posix.join(dir(), 'sales');
      const before = { 'dt=1': 'a stray file', 'dt=2/a.csv': 'keep' };
      await writeTree(sb.store, target, before);
      const job = await prepare(sb, { target, mode: 'overwrite', partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=1'], files: { 'a.csv': 'new-a' } },
      ]);
      const r = await commitJob(sb, job, ['--json']);
      if (fx.name === 's3') {
        // The key 'dt=1' and the keys under 'dt=1/' could both stand: the stray object is not taken for the partition.
        assertFailed(r, 6, { reason: 'kind-mismatch', path: 'dt=1', output: 'dir', target: 'file' });
        return assert.deepEqual(data(await readTree(sb.store, target)), before);
      }
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a.csv': 'new-a', 'dt=2/a.csv': 'keep' });
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

    /** A v2 job partitioned by dt, tasks 0 and 1 staged into dt=1 (a.csv, b.csv), task 0 committed (published). */
    const v2TaskZeroPublished = async (target: string): Promise<string> => {
      const job = await stage(sb, { target, algorithm: 'v2', partitionBy: 'dt' });
      await stageTask(sb, job, { task: '0', partition: ['dt=1'], files: { 'a.csv': 'a' } });
      await stageTask(sb, job, { task: '1', partition: ['dt=1'], files: { 'b.csv': 'b' } });
      assert.equal((await commitTask(sb, job, '0')).code, 0);
      return job;
    };

    test('v2 publishes at commit-task; v2 with overwrite is refused at stage', async () => {
      const target = posix.join(dir(), 'v2');
      const job = await v2TaskZeroPublished(target);
      assert.deepEqual(await readTree(sb.store, target), { 'dt=1/a.csv': 'a' }, 'visible before commit-job');
      assert.equal((await commitTask(sb, job, '1')).code, 0);
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a.csv': 'a', 'dt=1/b.csv': 'b' });

      await runJob(sb, { target, mode: 'append', algorithm: 'v2', partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=2'], files: { 'c.csv': 'c' } },
      ]);
      assert.deepEqual(data(await readTree(sb.store, target)), {
        'dt=1/a.csv': 'a',
        'dt=1/b.csv': 'b',
        'dt=2/c.csv': 'c',
      });

      const r = await cli(['stage', '--target', sb.uri(target), '--mode', 'overwrite', '--algorithm', 'v2', '--json'], {
        env: sb.env,
      });
      assertFailed(r, 2, { reason: 'v2-with-overwrite' });
    });

    test("abort of a v2 job names the tasks whose files stay in the target (dry run too); v1's leaves it alone", async () => {
      const target = posix.join(dir(), 'v2abort');
      const job = await v2TaskZeroPublished(target);
      const dry = await cli(['abort', '--job', job, '--dry-run'], { env: sb.env });
      assert.equal(dry.code, 0, dry.stderr);
      assert.match(
        dry.stdout,
        /abort would throw away job .*; v2 task\(s\) 0 had claimed their output: any file they published at commit-task stays in the target/,
      );
      assert.deepEqual(
        JSON.parse((await cli(['abort', '--job', job, '--dry-run', '--json'], { env: sb.env })).stdout).publishedTasks,
        ['0'],
      );
      const r = await cli(['abort', '--job', job], { env: sb.env });
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stderr,
        /aborted job .*; v2 task\(s\) 0 had claimed their output: any file they published at commit-task stayed in the target/,
      );
      assert.deepEqual(
        data(await readTree(sb.store, target)),
        { 'dt=1/a.csv': 'a' },
        'what task 0 published stays; task 1 never appears',
      );

      const v1 = await stage(sb, { target: posix.join(dir(), 'v1abort'), partitionBy: 'dt' });
      await stageTask(sb, v1, { task: '0', partition: ['dt=1'], files: { 'a.csv': 'a' } });
      assert.equal((await commitTask(sb, v1, '0')).code, 0);
      const a = await cli(['abort', '--job', v1], { env: sb.env });
      assert.equal(a.code, 0, a.stderr);
      assert.match(a.stderr, /its staged data is gone; the target was not touched/);
    });
    // The step that finishes it is the abort again or recover.
    test('an abort of a v2 job killed at any point: the step that finishes it names the tasks whose files stay', async () => {
      const named =
        /v2 task\(s\) 0 had claimed their output: any file they published at commit-task stayed in the target/;
      for (let k = 1; k <= 12; k++) {
        const target = posix.join(dir(), `v2kill-${k}`);
        const job = await stage(sb, { target, algorithm: 'v2' });
        await stageTask(sb, job, { task: '0', files: { 'a.csv': 'a' } });
        await stageTask(sb, job, { task: '1', files: { 'b.csv': 'b' } });
        assert.equal((await commitTask(sb, job, '0')).code, 0);
        const first = await cli(['abort', '--job', job], { env: { ...sb.env, STAGECOMMIT_TEST_KILL_AT: String(k) } });
        if (first.code === 0) {
          assert.match(first.stderr, named, `not killed at ${k}`);
          break;
        }
        assert.equal(first.signal, 'SIGKILL', first.stderr);
        const heal = k % 2 ? ['recover', '--job', job] : ['abort', '--job', job];
        const r = await cli(heal, { env: sb.env });
        // Killed only while it tidied the staging dir's empty parents: the job was gone already.
        if (/no job at|nothing to abort/.test(r.stderr + r.stdout)) {
          assert.deepEqual(data(await readTree(sb.store, target)), { 'a.csv': 'a' }, `killed at ${k}`);
          break;
        }
        assert.equal(r.code, 0, `killed at ${k}, then ${heal[0]}: ${r.stderr}`);
        // A kill before the job was marked aborted leaves it staged: recover then keeps it (nothing to name yet).
        if (heal[0] === 'recover' && !/was aborted/.test(r.stderr))
          assert.equal((await cli(['abort', '--job', job], { env: sb.env })).code, 0);
        else assert.match(r.stderr, named, `killed at ${k}, then ${heal[0]}`);
        assert.deepEqual(data(await readTree(sb.store, target)), { 'a.csv': 'a' }, `killed at ${k}`);
      }
    });

    test('a damaged claim or a stray file among the claims does not stop a job abort', async () => {
      const target = posix.join(dir(), 'damaged');
      const job = await stage(sb, { target });
      await stageTask(sb, job, { task: '0', files: { 'a.csv': 'a' } });
      assert.equal((await commitTask(sb, job, '0')).code, 0);
      const staging = (await sb.store.list(posix.join(posix.dirname(target), '.stagecommit', 'damaged')))[0]!.path;
      const layout = new JobLayout(staging);
      await sb.store.writeFile(layout.claimFile(0, '0'), 'kind: junk\n');
      await sb.store.writeFile(posix.join(layout.claimsDir(0), 'notes.txt'), 'hi\n');
      const r = await cli(['abort', '--job', job], { env: sb.env });
      assert.equal(r.code, 0, r.stderr);
      if (sb.store.abortUpload)
        assert.match(
          r.stderr,
          /_claims\/(0\.yaml|notes\.txt) could not be read \(.*\): any pending upload it named is left for 'stagecommit clean-orphans'/,
        );
      assert.equal(await sb.store.stat(staging), null, 'the staging dir is gone');
      assert.equal(await sb.store.stat(target), null, 'the target never appeared');
    });

    // Both are raw in JSON. recover rolls the commit-job forward.
    test('names and partition values with U+2028 and U+2029: a job killed at its commit point rolls forward', async () => {
      const target = posix.join(dir(), 'seps');
      const env = testEnv(sb.store);
      const stagingPath = await libStage(env, target, {
        name: 'seps',
        initial: null,
        job: { mode: 'create', algorithm: 'v1', partitionBy: ['dt', 'r'], partition: ['dt=a\u2029b'] },
        tasks: [],
      });
      await libStageTask(env, stagingPath, { task: '0', partition: ['r=x\u2028y'], files: { 'a\u2028b.csv': 'one' } });
      await libCommitTask(env, stagingPath, { task: '0', files: {} });
      await assert.rejects(commitJobStep(testEnv(sb.store, killedAt.atCommitPoint()), { stagingPath }), InjectedFault);
      const r = await recoverStep(testEnv(sb.store), { stagingPath });
      assert.equal(r.state, 'committed');
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=a\u2029b/r=x\u2028y/a\u2028b.csv': 'one' });
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

    test("a 7 MiB file (above the S3 sandbox's multipart-copy threshold) arrives byte for byte", async () => {
      const target = posix.join(dir(), 'big');
      const big = Array.from({ length: 7 * 1024 }, (_, i) => `${String(i).padStart(1023, '.')}\n`).join('');
      await runJob(sb, { target }, [{ task: '0', files: { 'big.csv': big } }]);
      const got = await sb.store.readFile(posix.join(target, 'big.csv'));
      assert.equal(got?.length, big.length);
      assert.ok(got?.equals(Buffer.from(big)));
    });
  });
}
