// stage DIR through the CLI on every store: a local tree staged as the attempt's layout, its
// k=v dirs checked against the job's partition columns, links refused, a file written to while
// copied refused.

import assert from 'node:assert/strict';
import { appendFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path, { posix } from 'node:path';
import { describe, test } from 'node:test';
import { ConflictError } from '../src/errors.js';
import { stageFiles } from '../src/steps/stage-files.js';
import { inProcess, okInProcess } from '../testing/main.js';
import { assertFailed, type Failure } from '../testing/cli.js';
import { testEnv } from '../testing/lib.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree } from '../testing/tree.js';

/** A local tree from paths → contents. */
async function localTree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'stage-dir-'));
  for (const [rel, body] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), body);
  }
  return root;
}

for (const fx of storeFixtures()) {
  describe(`stage DIR on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'sd');

    const run = (args: string[]) => inProcess(args, { env: sb.env });
    const newJob = async (name: string, ...opts: string[]) => {
      const target = posix.join(dir(), name);
      const handle = await okInProcess(['stage', '--target', sb.uri(target), ...opts], { env: sb.env });
      return { target, handle };
    };
    const commit = async (handle: string, ...tasks: string[]) => {
      for (const t of tasks) await okInProcess(['commit-task', '--job', handle, '--task', t], { env: sb.env });
      await okInProcess(['commit-job', '--job', handle], { env: sb.env });
    };

    test('a tree of k=v dirs is published as laid out; a writer _SUCCESS in it is left out', async () => {
      const { target, handle } = await newJob('tree', '--mode', 'overwrite', '--partition-by', 'dt,region');
      const tree = await localTree({
        'dt=2026-11-30/region=eu/part-0.csv': 'a,1\n',
        'dt=2026-11-30/region=us/part-0.csv': 'b,22\n',
        'dt=2026-12-01/region=eu/sub/part-1.csv': 'c,333\n',
        _SUCCESS: '',
        'dt=2026-11-30/region=eu/._SUCCESS.crc': 'x',
      });
      const r = await run(['--json', 'stage', '--job', handle, '--task', '0', tree + '/']);
      assert.equal(r.code, 0, r.stderr);
      const doc = JSON.parse(r.stdout) as { files: number; bytes: number; fileList: string[] };
      assert.equal(doc.files, 3);
      assert.equal(doc.bytes, 4 + 5 + 6);
      assert.deepEqual(doc.fileList, [
        'dt=2026-11-30/region=eu/part-0.csv',
        'dt=2026-11-30/region=us/part-0.csv',
        'dt=2026-12-01/region=eu/sub/part-1.csv',
      ]);
      await commit(handle, '0');
      const published = data(await readTree(sb.store, target));
      delete published['_SUCCESS'];
      assert.deepEqual(published, {
        'dt=2026-11-30/region=eu/part-0.csv': 'a,1\n',
        'dt=2026-11-30/region=us/part-0.csv': 'b,22\n',
        'dt=2026-12-01/region=eu/sub/part-1.csv': 'c,333\n',
      });
    });

    test("names starting with '_' or '.' (engine leftovers among them) are left out with a warning", async () => {
      const { target, handle } = await newJob('hidden', '--mode', 'overwrite', '--partition-by', 'dt');
      const tree = await localTree({
        'dt=1/part-0.csv': 'a\n',
        'dt=1/.part-0.csv.crc': 'crc',
        'dt=1/_temporary/0/_temporary/attempt_1/part-9.csv': 'half\n',
        '.spark-staging-7f3c/dt=2/part-1.csv': 'lost\n',
        '_temporary/0/task_1/dt=3/part-2.csv': 'old\n',
      });
      const j = await run(['--json', 'stage', '--job', handle, '--task', '0', tree]);
      assert.equal(j.code, 0, j.stderr);
      assert.deepEqual((JSON.parse(j.stdout) as { fileList: string[] }).fileList, ['dt=1/part-0.csv']);
      const r = await run(['stage', '--job', handle, '--task', '0', tree]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stderr,
        /left out of \S+ 4 name\(s\) starting with '_' or '\.'.*: \.spark-staging-7f3c\/, _temporary\/, dt=1\/\.part-0\.csv\.crc, dt=1\/_temporary\//,
      );
      await commit(handle, '0');
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/part-0.csv': 'a\n' });
      const only = await localTree({ '_temporary/0/part-0.csv': 'x\n', '.hidden.csv': 'y\n' });
      const { handle: other } = await newJob('only-hidden');
      const e = await run(['stage', '--job', other, '--task', '0', only, '--json']);
      assertFailed(e, 2, { reason: 'source-dir-empty', dir: only });
    });

    test('with --partition the tree goes under that partition and gives the remaining columns', async () => {
      const { target, handle } = await newJob('under', '--partition-by', 'dt,region', '--tasks', '2');
      const tree = await localTree({ 'region=eu/a.csv': 'eu\n', 'region=us/b.csv': 'us\n' });
      await okInProcess(['stage', '--job', handle, '--task', '0', '--partition', 'dt=1', tree], { env: sb.env });
      // An unpartitioned tree below a full --partition path: the files sit in that partition.
      const flat = await localTree({ 'c.csv': 'c\n' });
      const args = ['stage', '--job', handle, '--task', '1', '--partition', 'dt=2', '--partition', 'region=ap', flat];
      await okInProcess(args, { env: sb.env });
      await commit(handle, '0', '1');
      const published = data(await readTree(sb.store, target));
      delete published['_SUCCESS'];
      assert.deepEqual(published, {
        'dt=1/region=eu/a.csv': 'eu\n',
        'dt=1/region=us/b.csv': 'us\n',
        'dt=2/region=ap/c.csv': 'c\n',
      });
    });

    test('a dir that is not the next partition column, or a column the job lacks: exit 2 naming it', async () => {
      const { handle } = await newJob('bad', '--partition-by', 'dt');
      const cases: [Record<string, string>, Failure][] = [
        [{ 'region=eu/a.csv': 'a' }, { reason: 'file-partition-segment', segment: 'region=eu', column: 'dt' }],
        [{ 'a.csv': 'a' }, { reason: 'file-outside-partitions', path: 'a.csv', columns: ['dt'] }],
        [
          { 'dt=1/hour=3/a.csv': 'a' },
          { reason: 'tree-partition-extra', dir: 'dt=1/hour=3', column: 'hour', depth: 2 },
        ],
      ];
      for (const [files, want] of cases) {
        const r = await run(['stage', '--job', handle, '--task', '0', await localTree(files), '--json']);
        assertFailed(r, 2, want);
        assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      }
      const st = JSON.parse(await okInProcess(['--json', 'status', '--job', handle], { env: sb.env })) as {
        tasks: unknown[];
        files: number;
      };
      assert.deepEqual([st.tasks, st.files], [[], 0], 'nothing was staged');
    });

    test('a symbolic link in the tree, a dir beside files, an empty tree: exit 2, nothing staged', async () => {
      const { handle } = await newJob('links', '--partition-by', 'dt');
      const tree = await localTree({ 'dt=1/a.csv': 'a' });
      await symlink('/etc/hostname', path.join(tree, 'dt=1', 'link.csv'));
      let r = await run(['stage', '--job', handle, '--task', '0', tree, '--json']);
      assertFailed(r, 2, { reason: 'source-symlink', file: path.join(tree, 'dt=1', 'link.csv') });
      const other = await localTree({ 'dt=1/b.csv': 'b' });
      r = await run([
        'stage',
        '--job',
        handle,
        '--task',
        '0',
        '--partition',
        'dt=1',
        path.join(other, 'dt=1/b.csv'),
        other,
        '--json',
      ]);
      assertFailed(r, 2, { reason: 'source-dir-with-others', dir: other });
      const empty = await localTree({});
      r = await run(['stage', '--job', handle, '--task', '0', empty, '--json']);
      assertFailed(r, 2, { reason: 'source-dir-empty', dir: empty });
      const st = JSON.parse(await okInProcess(['--json', 'status', '--job', handle], { env: sb.env })) as {
        tasks: unknown[];
      };
      assert.deepEqual(st.tasks, []);
    });

    /** Stages the tree's dt=1/a.csv and b.csv, changing b.csv once, before the first store mutation. */
    const stageWhileChanging = async (handle: string, tree: string, change: (b: string) => Promise<void>) => {
      let ran = false;
      const env = testEnv(sb.store, async () => {
        if (ran) return;
        ran = true;
        await change(path.join(tree, 'dt=1/b.csv'));
      });
      const files = ['dt=1/a.csv', 'dt=1/b.csv'].map((name) => ({ localPath: path.join(tree, name), name }));
      const staged = stageFiles(env, { stagingPath: sb.pathOf(handle), task: '0', partition: [], files, tree: true });
      const error = await staged.then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(ran, 'the file was changed while staged');
      return error;
    };

    test('a file of the tree deleted while it is copied: exit 4 naming it, not the store error', async () => {
      const { handle } = await newJob('deleted', '--partition-by', 'dt');
      const tree = await localTree({ 'dt=1/a.csv': 'a,1\n', 'dt=1/b.csv': 'b,22\n' });
      const error = await stageWhileChanging(handle, tree, (b) => rm(b));
      assert.ok(error instanceof ConflictError && error.exitCode === 4, String(error));
      assert.deepEqual(error.detail, { reason: 'file-changed', path: path.join(tree, 'dt=1/b.csv'), others: 0 });
    });

    test('a file of the tree written to while it is copied: exit 4 naming it; staged again, it is published', async () => {
      const { target, handle } = await newJob('changed', '--partition-by', 'dt');
      // Both sizes on one side of S3's pending-upload threshold (4 bytes in these tests).
      const tree = await localTree({ 'dt=1/a.csv': 'a,1\n', 'dt=1/b.csv': 'b,22\n' });
      const error = await stageWhileChanging(handle, tree, (b) => appendFile(b, 'more\n'));
      assert.ok(error instanceof ConflictError, String(error));
      assert.deepEqual(error.detail, { reason: 'file-changed', path: path.join(tree, 'dt=1/b.csv'), others: 0 });
      await okInProcess(['stage', '--job', handle, '--task', '0', tree], { env: sb.env });
      await commit(handle, '0');
      const published = data(await readTree(sb.store, target));
      delete published['_SUCCESS'];
      assert.deepEqual(published, { 'dt=1/a.csv': 'a,1\n', 'dt=1/b.csv': 'b,22\nmore\n' });
    });
  });
}
