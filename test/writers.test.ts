// Engines that write into the attempt dir themselves (Spark, Hadoop, Databricks through
// --print-path) leave their own markers there; on every store commit-task leaves them out,
// says so under --verbose, and the table gets the data and stagecommit's own _SUCCESS.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { isWriterMarker } from '../src/steps/commit-task.js';
import { cli, ok } from './helpers/cli.js';
import { stage } from './helpers/jobs.js';
import { storeFixtures, useSandbox, type StoreSandbox } from './helpers/stores.js';
import { data, readTree, writeTree } from './helpers/tree.js';

test('writer markers by name: _SUCCESS, _started_*, _committed_* and their .crc files, nothing else', () => {
  for (const m of ['_SUCCESS', '._SUCCESS.crc', '_started_4711', '_committed_4711', '._committed_4711.crc', '._started_1.crc']) assert.ok(isWriterMarker(m), m);
  for (const d of ['part-0', '.part-0.crc', '_SUCCESS.crc', '._SUCCESS', '_SUCCESSOR', 'x_SUCCESS', '_started_', '_temporary']) assert.ok(!isWriterMarker(d), d);
});

for (const fx of storeFixtures()) {
  describe(`engine writers on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'w');

    test("a writer's _SUCCESS, _committed_*/_started_* and .crc markers are not data", async () => {
      const target = posix.join(dir(), 'sales');
      const job = await stage(sb, { target, partitionBy: 'dt', tasks: 1 });
      const attempt = sb.pathOf(await ok(['stage', '--job', job, '--task', '0', '--print-path'], { env: sb.env }));
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
      assert.deepEqual(Object.keys(tree).filter((k) => !k.startsWith('dt=1/')), ['_SUCCESS']);
      assert.equal(JSON.parse(tree._SUCCESS!).committer, 'stagecommit');
    });
  });
}
