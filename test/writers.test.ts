// Engines that write into the attempt dir themselves (Spark, Hadoop, Databricks through
// --print-path) leave their own markers there; on every store commit-task leaves them out,
// says so under --verbose, and the table gets the data and stagecommit's own _SUCCESS.

import assert from 'node:assert/strict';
import { symlink } from 'node:fs/promises';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { isWriterMarker } from '../src/steps/attempt-output.js';
import { assertFailed, cli } from '../testing/cli.js';
import { okInProcess } from '../testing/main.js';
import { stage } from '../testing/jobs.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree, writeTree } from '../testing/tree.js';
import { stageTask } from '../testing/jobs.js';

test('writer markers by name: _SUCCESS, _started_*, _committed_* and their .crc files, nothing else', () => {
  for (const m of [
    '_SUCCESS',
    '._SUCCESS.crc',
    '_started_4711',
    '_committed_4711',
    '._committed_4711.crc',
    '._started_1.crc',
  ])
    assert.ok(isWriterMarker(m), m);
  for (const d of [
    'part-0',
    '.part-0.crc',
    '_SUCCESS.crc',
    '._SUCCESS',
    '_SUCCESSOR',
    'x_SUCCESS',
    '_started_',
    '_temporary',
  ])
    assert.ok(!isWriterMarker(d), d);
});

for (const fx of storeFixtures()) {
  describe(`engine writers on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'w');

    test("a writer's _SUCCESS, _committed_*/_started_* and .crc markers are not data", async () => {
      const target = posix.join(dir(), 'sales');
      const job = await stage(sb, { target, partitionBy: 'dt', tasks: 1 });
      const attempt = sb.pathOf(
        await okInProcess(['stage', '--job', job, '--task', '0', '--print-path'], { env: sb.env }),
      );
      await writeTree(sb.store, attempt, {
        'dt=1/part-00000.parquet': 'rows',
        'dt=1/.part-00000.parquet.crc': 'crc',
        'dt=1/_started_4711': '',
        'dt=1/_committed_4711': '{"added":["part-00000.parquet"]}',
        'dt=1/._committed_4711.crc': 'crc',
        _SUCCESS: '',
        '._SUCCESS.crc': 'crc',
      });
      const r = await cli(['commit-task', '--job', job, '--task', '0', '--verbose', '--json'], { env: sb.env });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(JSON.parse(r.stdout).files, 2);
      assert.match(r.stderr, /left out 5 marker file\(s\) the writer made, not data: .*_SUCCESS/);
      const cj = await cli(['commit-job', '--job', job], { env: sb.env });
      assert.equal(cj.code, 0, cj.stderr);
      const tree = await readTree(sb.store, target);
      assert.deepEqual(data(tree), { 'dt=1/.part-00000.parquet.crc': 'crc', 'dt=1/part-00000.parquet': 'rows' });
      assert.deepEqual(
        Object.keys(tree).filter((k) => !k.startsWith('dt=1/')),
        ['_SUCCESS'],
      );
      assert.equal(JSON.parse(tree._SUCCESS!).committer, 'stagecommit');
    });

    test("a partition dir that held only a writer's markers is not published as an empty dir", async () => {
      const target = posix.join(dir(), 'sales');
      const job = await stage(sb, { target, partitionBy: 'dt', tasks: 1 });
      const attempt = sb.pathOf(
        await okInProcess(['stage', '--job', job, '--task', '0', '--print-path'], { env: sb.env }),
      );
      await writeTree(sb.store, attempt, {
        'dt=1/part-0': 'rows',
        'dt=2/_SUCCESS': '',
        'dt=3/_committed_1': '{}',
        'dt=3/._committed_1.crc': 'crc',
      });
      const r = await cli(['commit-task', '--job', job, '--task', '0', '--json'], { env: sb.env });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(JSON.parse(r.stdout).files, 1);
      const cj = await cli(['commit-job', '--job', job], { env: sb.env });
      assert.equal(cj.code, 0, cj.stderr);
      assert.deepEqual(Object.keys(await readTree(sb.store, target, { dirs: true })), ['_SUCCESS', 'dt=1/part-0']);
    });

    test('a _SUCCESS dir or a link a writer left is refused at commit-task (exit 2); the attempt can abort', async (t) => {
      const target = posix.join(dir(), 'links');
      const job = await stage(sb, { target, tasks: 1 });
      const attempt = sb.pathOf(
        await okInProcess(['stage', '--job', job, '--task', '0', '--print-path'], { env: sb.env }),
      );
      await writeTree(sb.store, attempt, { 'part-0': 'rows', '_SUCCESS/inner': 'x' });
      const r = await cli(['commit-task', '--job', job, '--task', '0', '--json'], { env: sb.env });
      const success = r.stdout.includes('task-file-success-name')
        ? { reason: 'task-file-success-name', path: '_SUCCESS/inner' }
        : { reason: 'attempt-success-dir' };
      assertFailed(r, 2, { ...success, successFile: '_SUCCESS' });
      assert.equal(
        (await cli(['abort', '--job', job, '--task', '0'], { env: sb.env })).code,
        0,
        'no decision was taken: the attempt aborts',
      );
      if (fx.name === 's3') {
        // A zero-byte key ending in '/' is a directory marker (S3A's mkdirs): not a file, left out.
        // One that holds bytes is refused: no step may drop its bytes unseen.
        const a2 = sb.pathOf(
          await okInProcess(['stage', '--job', job, '--task', '0', '--attempt', '2', '--print-path'], { env: sb.env }),
        );
        await writeTree(sb.store, a2, { 'part-0': 'rows' });
        await sb.store.writeFile(`${a2}/empty/`, '');
        await sb.store.writeFile(`${a2}/marker/`, 'bytes');
        const m = await cli(['commit-task', '--job', job, '--task', '0', '--attempt', '2', '--json'], { env: sb.env });
        assertFailed(m, 2, { reason: 'attempt-not-regular-file', name: 'marker/', symlink: false });
        assert.equal((await cli(['abort', '--job', job, '--task', '0', '--attempt', '2'], { env: sb.env })).code, 0);
      }
      if (fx.name !== 'local') return t.diagnostic('links: local only');
      const attempt1 = sb.pathOf(
        await okInProcess(['stage', '--job', job, '--task', '0', '--attempt', '1', '--print-path'], { env: sb.env }),
      );
      await writeTree(sb.store, attempt1, { 'part-0': 'rows' });
      await symlink('/etc/passwd', posix.join(attempt1, 'link.txt'));
      const l = await cli(['commit-task', '--job', job, '--task', '0', '--attempt', '1', '--json'], { env: sb.env });
      assertFailed(l, 2, { reason: 'attempt-not-regular-file', name: 'link.txt', symlink: true });
      assert.equal((await cli(['abort', '--job', job, '--task', '0', '--attempt', '1'], { env: sb.env })).code, 0);
    });

    // Or one holding only markers: moved into the target, it would stop the job past its commit point.
    test('an empty _SUCCESS dir in the attempt dir is refused at commit-task (exit 2), never moved', async () => {
      const target = posix.join(dir(), 'empty-success');
      const job = await stage(sb, { target, tasks: 1 });
      const attempt = sb.pathOf(
        await okInProcess(['stage', '--job', job, '--task', '0', '--print-path'], { env: sb.env }),
      );
      // Only a writer's marker in it: the marker is left out, and the directory would move on empty.
      await writeTree(sb.store, attempt, { 'part-0': 'rows', '_SUCCESS/._SUCCESS.crc': 'c' });
      const r = await cli(['commit-task', '--job', job, '--task', '0', '--json'], { env: sb.env });
      assertFailed(r, 2, { reason: 'attempt-success-dir', successFile: '_SUCCESS' });
      await sb.store.delete(posix.join(attempt, '_SUCCESS'), true);
      assert.equal((await cli(['commit-task', '--job', job, '--task', '0'], { env: sb.env })).code, 0);
      const cj = await cli(['commit-job', '--job', job], { env: sb.env });
      assert.equal(cj.code, 0, cj.stderr);
      assert.deepEqual(Object.keys(await readTree(sb.store, target)).sort(), ['_SUCCESS', 'part-0']);
    });

    // Its output belongs under it, not at it.
    test('a writer that wrote its output at the --print-path itself: exit 2 naming the file, nothing committed', async () => {
      const target = posix.join(dir(), 'at-path');
      const job = await stage(sb, { target, tasks: 1 });
      const attempt = sb.pathOf(
        await okInProcess(['stage', '--job', job, '--task', '0', '--print-path'], { env: sb.env }),
      );
      if (fx.name !== 's3') await sb.store.delete(attempt, true);
      await sb.store.writeFile(attempt, 'rows\n');
      const r = await cli(['commit-task', '--job', job, '--task', '0'], { env: sb.env });
      assert.equal(r.code, 2, r.stderr);
      // The words a user reads (a golden line).
      assert.match(
        r.stderr,
        /attempt_\S+'s dir \S+ is a file: the writer wrote its output at the path --print-path gave, not under it; move it under that path \(e\.g\. \S+\/part-00000\) and run commit-task again \(nothing was committed\)\n$/,
      );
      assert.equal(
        (await sb.store.readFile(attempt))?.toString(),
        'rows\n',
        'the bytes are where the writer left them',
      );
      assert.equal(await sb.store.stat(target), null);
    });

    test('_SUCCESS as a directory in the target is exit 6 before the commit point; the target is unchanged', async () => {
      const target = posix.join(dir(), 'wedge');
      await writeTree(sb.store, target, { 'old.csv': 'old', '_SUCCESS/x': 'not a marker' });
      const job = await stage(sb, { target, mode: 'append', tasks: 1 });
      await stageTask(sb, job, { task: '0', files: { 'new.csv': 'new' } });
      await okInProcess(['commit-task', '--job', job, '--task', '0'], { env: sb.env });
      const r = await cli(['commit-job', '--job', job, '--json'], { env: sb.env });
      assertFailed(r, 6, {
        kind: 'ConflictError',
        reason: 'success-in-the-way',
        path: sb.uri(posix.join(target, '_SUCCESS')),
      });
      assert.deepEqual(data(await readTree(sb.store, target)), { 'old.csv': 'old', '_SUCCESS/x': 'not a marker' });
      assert.equal((await cli(['abort', '--job', job], { env: sb.env })).code, 0, 'still before its commit point');
    });

    test('a --job-id that already committed into the table: stage again says so (exit 0), nothing changes', async () => {
      const target = posix.join(dir(), 'reuse');
      const job = await stage(sb, { target, mode: 'append', tasks: 1, jobId: 'etl-sales' });
      await stageTask(sb, job, { task: '0', files: { 'a.csv': 'a' } });
      await okInProcess(['commit-task', '--job', job, '--task', '0'], { env: sb.env });
      await okInProcess(['commit-job', '--job', job], { env: sb.env });
      const before = await readTree(sb.store, target);
      // The job's own parameters (another --tasks is exit 2 naming the difference).
      const again = await cli(
        ['stage', '--target', sb.uri(target), '--mode', 'append', '--tasks', '1', '--job-id', 'etl-sales'],
        { env: sb.env },
      );
      assert.equal(again.code, 0, again.stderr);
      assert.equal(again.stdout.trim(), job);
      assert.match(again.stderr, /job etl-sales was already committed into .*: nothing to do/);
      assert.deepEqual(await readTree(sb.store, target), before);
      assert.equal(await sb.store.stat(sb.pathOf(job)), null, 'no staging dir made again');
    });
  });
}
