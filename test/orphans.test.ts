// clean-orphans on realistic leftovers of killed Spark, Hadoop, Hive, S3A and stagecommit jobs,
// with look-alikes that must survive.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { posix } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cli } from '../testing/cli.js';
import { libCommitJob, libCommitTask, libStage, libStageTask, testEnv } from '../testing/lib.js';
import { storeFixtures, type StoreSandbox } from '../testing/stores.js';
import { readTree, writeTree, type Tree } from '../testing/tree.js';
import { cleanOrphans, kindByName } from '../src/steps/clean-orphans.js';
import { parseDuration } from '../src/api/clean-orphans.js';
import { encodeLease, Lease } from '../src/job/lease.js';
import { JobLayout } from '../src/job/layout.js';
import { unreliable } from '../src/store/instrumented.js';
import { InjectedFault, StoreError } from '../src/errors.js';
import { killed } from '../testing/crash-points.js';
import { LocalStore } from '../src/store/local.js';

const U1 = '1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed';
const U2 = '7c9e6679-7425-40de-944b-e07fc1f90ae7';

/** What killed jobs leave, and data that only looks like it. */
const OLD: Tree = {
  // Spark dynamic partition overwrite killed mid-job
  [`sales/.spark-staging-${U1}/dt=2026-11-29/part-00000-${U1}.c000.snappy.parquet`]: 'spark',
  // Hadoop FileOutputCommitter v1: an attempt dir and a committed task dir
  'sales/_temporary/0/_temporary/attempt_202611291000_0001_m_000000_0/dt=2026-11-28/part-00000': 'hadoop-attempt',
  'sales/_temporary/0/task_202611291000_0001_m_000001/dt=2026-11-28/part-00001': 'hadoop-task',
  // Hive staging nested in a partition
  'sales/dt=2026-11-27/.hive-staging_hive_2026-11-29_10-00-00_123_4567890123-1/-ext-10000/000000_0': 'hive',
  // S3A magic committer
  'sales/__magic_job-42/tasks/attempt_1/part-0.pending': 'magic-job',
  'logs/__magic/abc.tmp': 'magic',
  // data
  'sales/dt=2026-11-27/part-0.parquet': 'data-27',
  // look-alikes that are data
  'sales/dt=2026-11-27/_temporary.csv': 'a data file named like a leftover',
  'sales/note=.spark-staging/part-0': 'a partition whose value looks like a leftover',
  'sales/.spark-staging-notes/readme.txt': 'not a Spark id',
};

const FRESH: Tree = {
  [`sales/.spark-staging-${U2}/dt=2026-11-30/part-00000.parquet`]: 'running spark job',
};

/** A lease whose holder's clock says it runs an hour more: never renewed, it is dead after its 1 s TTL. */
function staleLease(): string {
  return encodeLease({
    op: 'commit-job',
    owner: 'someone',
    host: 'other-host',
    pid: 1,
    acquiredAtMs: 0,
    expiresAtMs: Date.now() + 3_600_000,
    ttlMs: 1000,
  });
}

/** clean-orphans --json's leftovers under `base`: path below it, kind, job state, action, reason. */
function listedUnder(base: string): (r: { stdout: string }) => unknown[][] {
  type Doc = { path: string; kind: string; jobState?: string; action: string; reason?: string };
  return (r) =>
    JSON.parse(r.stdout).leftovers.map((l: Doc) => [
      l.path.slice(base.length + 1),
      l.kind,
      l.jobState,
      l.action,
      l.reason,
    ]);
}

for (const fx of storeFixtures()) {
  describe(`clean-orphans on ${fx.name}`, () => {
    let sb: StoreSandbox;
    let root: string;
    let dead: string;
    let committing: string;
    let live: string;
    let freshAt = 0;
    /**
     * The fresh leftovers are younger than this and the old ones older, however slowly a loaded
     * machine starts the CLI. Stores that can date a tree date the old leftovers an hour back. On
     * S3 (no backdating, whole seconds) they are written 10 s before the fresh ones and the limit is
     * 7 s above the fresh ones' age: the step may take up to 6 s to start and look at them (2 s was
     * not enough at load 10).
     */
    const olderThan = () => (sb.backdate ? '30m' : `${Math.ceil((Date.now() - freshAt) / 1000) + 7}s`);
    before(async () => {
      sb = await fx.sandbox();
      root = posix.join(sb.base, 'wh');
      await writeTree(sb.store, root, OLD);
      const env = testEnv(sb.store);
      const sc = (mode: 'append' | 'create') => ({
        name: 'j',
        initial: null,
        job: { mode, algorithm: 'v1' as const, partitionBy: ['dt'] },
        tasks: [],
      });
      // a stagecommit job killed before its commit point
      dead = await libStage(env, posix.join(root, 'sales'), {
        ...sc('append'),
        job: { ...sc('append').job, jobId: 'dead-job' },
      });
      await libStageTask(env, dead, { task: '0', partition: ['dt=x'], files: { f: 'dead' } });
      // one killed after its commit point: must be rolled forward, never deleted
      committing = await libStage(env, posix.join(root, 'events'), {
        ...sc('create'),
        job: { ...sc('create').job, jobId: 'committing-job' },
      });
      await libStageTask(env, committing, { task: '0', partition: ['dt=1'], files: { e: 'event' } });
      await libCommitTask(env, committing, { task: '0', files: {} });
      await assert.rejects(libCommitJob(testEnv(sb.store, killed.atCommitPoint()), committing), InjectedFault);
      // The "killed" driver was this process: remove its lease as its death would have made it stale.
      for (const e of await sb.store.list(committing))
        if (e.name.startsWith('_lease.')) await sb.store.delete(e.path, false);
      if (sb.backdate) await sb.backdate(root, Date.now() - 3_600_000);
      else await sleep(10_000);
      // Taken before the write: a slow write must not make the fresh leftovers look older than the margin.
      freshAt = Date.now();
      await writeTree(sb.store, root, FRESH);
      // a job whose driver is alive (this process holds its lease)
      live = await libStage(env, posix.join(root, 'live'), {
        ...sc('append'),
        job: { ...sc('append').job, jobId: 'live-job' },
      });
      await sb.store.writeFile(
        posix.join(live, '_lease.0.yaml'),
        encodeLease({
          op: 'commit-job',
          owner: 'me',
          host: testEnv(sb.store).host,
          pid: process.pid,
          acquiredAtMs: 0,
          expiresAtMs: Date.now() + 3_600_000,
        }),
      );
    });
    after(async () => {
      await sb.close();
    });

    /** The table clean-orphans prints without --json, and its summary when everything is too young. */
    const expectDryRunText = async () => {
      const text = await cli(['clean-orphans', sb.uri(root), '--older-than', olderThan()], { env: sb.env });
      assert.match(text.stdout, /^KIND\s+PATH\s+AGE\s+FILES\s+BYTES\s+JOB\s+ACTION/m);
      assert.match(
        text.stdout,
        /\n\d+ leftover\(s\) to remove, .* reclaimable; 3 kept: output to adopt \(see ACTION\), 4 skipped \(see ACTION\); dry run: nothing was changed, add --delete to remove them\n$/,
      );
      // All of them too young: the summary says what was left, not "0 to remove" alone.
      const young = await cli(['clean-orphans', sb.uri(root), '--older-than', '30d'], { env: sb.env });
      assert.match(young.stdout, /\nnothing to remove; \d+ skipped \(see ACTION\); dry run: nothing was changed\n$/);
    };

    /** Roots that repeat or nest list each leftover once, its bytes counted once. */
    const expectEachLeftoverOnce = async (doc: { leftovers: { path: string }[]; reclaimableBytes: number }) => {
      const args = [
        sb.uri(root),
        `${sb.uri(root)}/`,
        sb.uri(posix.join(root, 'sales')),
        '--older-than',
        olderThan(),
        '--json',
      ];
      const again = JSON.parse((await cli(['clean-orphans', ...args], { env: sb.env })).stdout);
      assert.deepEqual(
        again.leftovers.map((l: { path: string }) => l.path).sort(),
        doc.leftovers.map((l: { path: string }) => l.path).sort(),
      );
      assert.equal(again.reclaimableBytes, doc.reclaimableBytes);
    };

    test('dry run: lists every kind with age, files and bytes, and changes nothing', async () => {
      const before = await readTree(sb.store, root);
      const r = await cli(['clean-orphans', sb.uri(root), '--older-than', olderThan(), '--json'], { env: sb.env });
      assert.equal(r.code, 0, r.stderr);
      const doc = JSON.parse(r.stdout);
      const by = new Map<
        string,
        { kind: string; action: string; files: number; bytes: number; ageSeconds: number; reason?: string }
      >(doc.leftovers.map((l: { path: string }) => [l.path.slice(sb.uri(root).length + 1), l]));
      assert.deepEqual([...by.keys()].sort(), [
        '.stagecommit/events/committing-job',
        '.stagecommit/live/live-job',
        '.stagecommit/sales/dead-job',
        'logs/__magic',
        `sales/.spark-staging-${U1}`,
        `sales/.spark-staging-${U2}`,
        'sales/__magic_job-42',
        'sales/_temporary',
        'sales/dt=2026-11-27/.hive-staging_hive_2026-11-29_10-00-00_123_4567890123-1',
      ]);
      assert.equal(by.get(`sales/.spark-staging-${U1}`)!.kind, 'spark-staging');
      // Spark killed in its job commit, a committed Hadoop task, a finished Hive query: only copies.
      assert.equal(by.get(`sales/.spark-staging-${U1}`)!.action, 'adopt');
      assert.match(
        by.get(`sales/.spark-staging-${U1}`)!.reason!,
        /killed in its job commit, while replacing partitions/,
      );
      assert.equal(by.get('sales/_temporary')!.action, 'adopt');
      assert.equal(
        by.get('sales/dt=2026-11-27/.hive-staging_hive_2026-11-29_10-00-00_123_4567890123-1')!.action,
        'adopt',
      );
      assert.equal(by.get(`sales/.spark-staging-${U1}`)!.files, 1);
      assert.equal(by.get(`sales/.spark-staging-${U1}`)!.bytes, 5);
      assert.ok(by.get(`sales/.spark-staging-${U1}`)!.ageSeconds >= 4);
      assert.equal(by.get(`sales/.spark-staging-${U2}`)!.action, 'skipped', 'fresh: protected by --older-than');
      assert.equal(by.get('sales/_temporary')!.kind, 'hadoop-temporary');
      assert.equal(by.get('sales/_temporary')!.files, 2);
      assert.equal(
        by.get('sales/dt=2026-11-27/.hive-staging_hive_2026-11-29_10-00-00_123_4567890123-1')!.kind,
        'hive-staging',
      );
      assert.equal(by.get('logs/__magic')!.kind, 's3a-magic');
      assert.equal(by.get('logs/__magic')!.action, 'would-delete', 'no commit records: nothing to keep');
      // An S3A magic commit's records name uploads not yet completed: the only copy of that output.
      assert.equal(by.get('sales/__magic_job-42')!.action, 'skipped');
      assert.match(by.get('sales/__magic_job-42')!.reason!, /^holds 1 S3A magic commit record\(s\)/);
      assert.equal(by.get('.stagecommit/sales/dead-job')!.action, 'would-delete');
      assert.equal(by.get('.stagecommit/events/committing-job')!.action, 'skipped');
      assert.match(by.get('.stagecommit/events/committing-job')!.reason!, /past its commit point/);
      assert.equal(by.get('.stagecommit/live/live-job')!.action, 'skipped');
      assert.match(by.get('.stagecommit/live/live-job')!.reason!, /lease/);
      assert.deepEqual(await readTree(sb.store, root), before);

      await expectDryRunText();
      await expectEachLeftoverOnce(doc);
    });

    test(
      'a whole bucket as the root: scanned like any directory (a bucket has no staging root beside it)',
      { skip: fx.name !== 's3' && 'the store has no buckets' },
      async () => {
        const bucket = sb.uri(`/${root.split('/').filter(Boolean)[0]}`);
        const before = await readTree(sb.store, root);
        const r = await cli(['clean-orphans', bucket, '--older-than', olderThan(), '--json'], { env: sb.env });
        assert.equal(r.code, 0, r.stderr);
        const paths = JSON.parse(r.stdout).leftovers.map((l: { path: string }) => l.path);
        assert.ok(paths.includes(`${sb.uri(root)}/sales/.spark-staging-${U1}`), paths.join('\n'));
        const jobs = await cli(['jobs', bucket], { env: sb.env });
        assert.equal(jobs.code, 0, jobs.stderr);
        const missing = await cli(['clean-orphans', `${bucket}-missing`], { env: sb.env });
        assert.equal(missing.code, 2, 'a bucket that is not there is a wrong URI');
        assert.match(
          missing.stderr,
          /^stagecommit: error: bucket '[^']+-missing' does not exist: create it, or check the URI\n$/,
        );
        assert.deepEqual(await readTree(sb.store, root), before);
      },
    );

    test('--delete removes exactly the listed leftovers, rolls the committed job forward, spares look-alikes', async () => {
      const r = await cli(['clean-orphans', sb.uri(root), '--older-than', olderThan(), '--delete', '--json'], {
        env: sb.env,
      });
      assert.equal(r.code, 0, r.stderr);
      const actions = Object.fromEntries(
        JSON.parse(r.stdout).leftovers.map((l: { path: string; action: string }) => [
          l.path.slice(sb.uri(root).length + 1),
          l.action,
        ]),
      );
      assert.equal(actions['.stagecommit/events/committing-job'], 'rolled-forward');
      assert.equal(actions['.stagecommit/sales/dead-job'], 'deleted');
      assert.equal(actions[`sales/.spark-staging-${U2}`], 'skipped');
      assert.equal(actions[`sales/.spark-staging-${U1}`], 'adopt');
      const tree = await readTree(sb.store, root);
      const keys = Object.keys(tree).filter((k) => !k.startsWith('.stagecommit/live/') && !k.endsWith('_SUCCESS'));
      assert.deepEqual(
        keys.sort(),
        [
          '.stagecommit/events/_log/00000000000000000000.done',
          '.stagecommit/events/_log/00000000000000000000.yaml',
          '.stagecommit/events/_log/log-id.yaml',
          'events/dt=1/e',
          'sales/.spark-staging-notes/readme.txt',
          `sales/.spark-staging-${U1}/dt=2026-11-29/part-00000-${U1}.c000.snappy.parquet`,
          `sales/.spark-staging-${U2}/dt=2026-11-30/part-00000.parquet`,
          'sales/_temporary/0/_temporary/attempt_202611291000_0001_m_000000_0/dt=2026-11-28/part-00000',
          'sales/_temporary/0/task_202611291000_0001_m_000001/dt=2026-11-28/part-00001',
          'sales/dt=2026-11-27/.hive-staging_hive_2026-11-29_10-00-00_123_4567890123-1/-ext-10000/000000_0',
          'sales/__magic_job-42/tasks/attempt_1/part-0.pending',
          'sales/dt=2026-11-27/_temporary.csv',
          'sales/dt=2026-11-27/part-0.parquet',
          'sales/note=.spark-staging/part-0',
        ].sort(),
      );
      assert.ok(tree['events/_SUCCESS']);
      assert.ok(
        Object.keys(tree).some((k) => k.startsWith('.stagecommit/live/live-job/')),
        'live job untouched',
      );
      // S3: the jobs' own pending uploads went with them (completed by the roll-forward, aborted with the dead job).
      if (sb.store.listUploads) assert.deepEqual(await sb.store.listUploads(root), []);
    });

    // Listed as a stagecommit leftover; one --delete removes it once unchanged past the holders' TTL.
    test('a handle of only lease files that killed steps left: a leftover with no job, removed once stale', async () => {
      const strayRoot = posix.join(sb.base, 'stray');
      const lease = staleLease;
      const dead = posix.join(strayRoot, '.stagecommit', 'sales', 'gone-job');
      const held = posix.join(strayRoot, '.stagecommit', 'sales', 'held-job');
      await sb.store.writeFile(posix.join(dead, '_lease.0.yaml'), lease());
      // An older generation beside it (one run was refused two removals apart).
      await sb.store.writeFile(posix.join(dead, '_lease.1.yaml'), lease());
      // Look-alikes that are anyone's data: a partition holding only a file of a lease's name.
      await writeTree(sb.store, strayRoot, { 'sales/dt=1/part-0': 'data' });
      await sb.store.writeFile(posix.join(strayRoot, 'sales', 'dt=2', '_lease.1.yaml'), lease());
      await sleep(2100); // S3 dates in whole seconds
      const holder = await Lease.acquire(
        sb.store,
        new JobLayout(held),
        // Renewed every 20 s: no renewal's temp file beside it while the scans look.
        testEnv(sb.store, undefined, { user: 'someone', host: 'other-host', pid: 1, leaseTtlMs: 60_000 }),
        'commit-job',
      );
      const listed = listedUnder(sb.uri(strayRoot));
      const dry = await cli(['clean-orphans', sb.uri(strayRoot), '--older-than', '0s', '--json'], { env: sb.env });
      assert.equal(dry.code, 0, dry.stderr);
      assert.deepEqual(listed(dry), [
        ['.stagecommit/sales/gone-job', 'stagecommit', 'no job: a lease file left behind', 'would-delete', undefined],
        [
          '.stagecommit/sales/held-job',
          'stagecommit',
          'no job: a lease file left behind',
          'skipped',
          'a live process may hold its lease (renewed within its TTL)',
        ],
      ]);
      const del = await cli(['clean-orphans', sb.uri(strayRoot), '--older-than', '0s', '--delete', '--json'], {
        env: sb.env,
      });
      assert.equal(del.code, 0, del.stderr);
      assert.deepEqual(
        listed(del).map((l: unknown[]) => l[3]),
        ['deleted', 'skipped'],
      );
      assert.deepEqual(Object.keys(await readTree(sb.store, strayRoot)).sort(), [
        '.stagecommit/sales/held-job/_lease.0.yaml',
        'sales/dt=1/part-0',
        'sales/dt=2/_lease.1.yaml',
      ]);
      await holder.release();
    });

    test('uploads never completed: listed as multipart-upload, aborted with --delete, and by a job abort', async (t) => {
      if (!sb.startUpload || !sb.store.listUploads) return t.skip('the store has no multipart uploads');
      const upRoot = posix.join(sb.base, 'uploads');
      await sb.startUpload(posix.join(upRoot, 'sales', 'dt=1', 'big.parquet'));
      const dry = JSON.parse(
        (await cli(['clean-orphans', sb.uri(upRoot), '--older-than', '0s', '--json'], { env: sb.env })).stdout,
      );
      assert.deepEqual(
        dry.leftovers.map((l: { kind: string; path: string; action: string }) => [l.kind, l.path, l.action]),
        [['multipart-upload', sb.uri(posix.join(upRoot, 'sales', 'dt=1', 'big.parquet')), 'would-delete']],
      );
      const del = await cli(['clean-orphans', sb.uri(upRoot), '--older-than', '0s', '--delete'], { env: sb.env });
      assert.equal(del.code, 0, del.stderr);
      assert.deepEqual(await sb.store.listUploads(upRoot), []);

      const env = testEnv(sb.store);
      const job = await libStage(env, posix.join(upRoot, 'events'), {
        name: 'u',
        initial: null,
        job: { mode: 'create', algorithm: 'v1' },
        tasks: [],
      });
      await sb.startUpload(posix.join(job, '_temporary', '0', '_temporary', 'attempt_x_0_0', 'killed-upload'));
      assert.equal((await sb.store.listUploads(job)).length, 1);
      assert.equal((await cli(['abort', '--job', sb.uri(job)], { env: sb.env })).code, 0);
      assert.deepEqual(await sb.store.listUploads(job), []);
    });

    test('a directory that cannot be listed is reported and the scan goes on', async () => {
      const scanRoot = posix.join(sb.base, 'broken');
      await writeTree(sb.store, scanRoot, { 'a/_temporary/0/x': 'x', 'b/bad/y': 'y' });
      const badPath = posix.join(scanRoot, 'b', 'bad');
      const faults = unreliable({
        op: 'list',
        path: (p) => p === badPath,
        error: (op, p) => new StoreError('io', op, [p], 'permission denied'),
      });
      const r = await cleanOrphans(testEnv(sb.store, faults), { roots: [scanRoot], olderThanMs: 0, delete: false });
      assert.equal(faults.failures(), 1, 'the listing failed once');
      assert.deepEqual(
        r.leftovers.map((l) => [l.kind, l.path]),
        [['hadoop-temporary', posix.join(scanRoot, 'a', '_temporary')]],
      );
      assert.equal(r.problems.length, 1);
      assert.match(r.problems[0]!.message, /permission denied/);
    });

    test(
      'symbolic links are never followed',
      { skip: !sb0IsLocal(fx.name) && 'the store has no symbolic links' },
      async () => {
        const { symlink, mkdir } = await import('node:fs/promises');
        const scanRoot = posix.join(sb.base, 'links');
        await writeTree(sb.store, scanRoot, { 'elsewhere/_temporary/0/x': 'x' });
        await mkdir(posix.join(scanRoot, 'table'), { recursive: true });
        await symlink(posix.join(scanRoot, 'elsewhere'), posix.join(scanRoot, 'table', 'link'));
        const r = await cleanOrphans(testEnv(new LocalStore()), {
          roots: [posix.join(scanRoot, 'table')],
          olderThanMs: 0,
          delete: true,
        });
        assert.deepEqual(r.leftovers, []);
        assert.ok(await sb.store.stat(posix.join(scanRoot, 'elsewhere', '_temporary', '0', 'x')));
      },
    );
  });
}

function sb0IsLocal(name: string): boolean {
  return name === 'local';
}

test("leftover names: ids must look like the engines' own", () => {
  assert.equal(kindByName(`.spark-staging-${U1}`), 'spark-staging');
  assert.equal(kindByName('.spark-staging-notes'), null);
  assert.equal(kindByName('_temporary'), 'hadoop-temporary');
  assert.equal(kindByName('_temporary.csv'), null);
  assert.equal(kindByName('.hive-staging_hive_2026-11-29_10-00-00_123_4567890123-1'), 'hive-staging');
  assert.equal(kindByName('__magic'), 's3a-magic');
  assert.equal(kindByName('__magic_job-abc'), 's3a-magic');
  assert.equal(kindByName('__magical'), null);
  assert.equal(kindByName('note=.spark-staging'), null);
});

test('--older-than takes a number and a unit', () => {
  assert.equal(parseDuration('90m'), 90 * 60_000);
  assert.equal(parseDuration('36h'), 36 * 3_600_000);
  assert.equal(parseDuration('7d'), 7 * 86_400_000);
  assert.equal(parseDuration('10s'), 10_000);
  for (const bad of ['', '7', 'd', '1w', '-1h', '1.5h'])
    assert.throws(() => parseDuration(bad), /invalid --older-than/);
});
