// A finished job's staging dir after the CLI's commit-job (protocol.md §5.12): its handle is gone
// when the step exits, a rerun answers already-committed, and nothing of it is left for long.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { defaultStagingRoot } from '../src/job/layout.js';
import { cli, ok, until } from '../testing/cli.js';
import { jobScenario, readyJob } from '../testing/lib.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree } from '../testing/tree.js';

for (const fx of storeFixtures()) {
  describe(`finished job's staging dir on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'f');

    test('commit-job exits with the handle gone; the remains go and no step takes them for a job', async () => {
      const root = dir();
      const target = posix.join(root, 'sales');
      const staging = await readyJob(sb.store, target, jobScenario('done', 'append'), [
        { task: '0', partition: ['dt=1'], files: { a: 'a', b: 'b' } },
        { task: '1', partition: ['dt=1'], files: { c: 'c' } },
      ]);
      await ok(['commit-job', '--job', sb.uri(staging)], { env: sb.env });
      assert.equal(await sb.store.stat(posix.join(staging, '_job.yaml')), null, 'the handle leads to no job');
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a': 'a', 'dt=1/b': 'b', 'dt=1/c': 'c' });

      const again = await cli(['commit-job', '--job', sb.uri(staging), '--json'], { env: sb.env });
      assert.equal(again.code, 0, again.stderr);
      assert.equal(JSON.parse(again.stdout).outcome, 'already-committed');
      const jobs = await cli(['jobs', sb.uri(target), '--json'], { env: sb.env });
      assert.equal(jobs.code, 0, jobs.stderr);
      assert.deepEqual(JSON.parse(jobs.stdout).jobs, [], 'no job listed');
      const orphans = await cli(['clean-orphans', sb.uri(root), '--older-than', '0s', '--json'], { env: sb.env });
      assert.equal(orphans.code, 0, orphans.stderr);
      assert.deepEqual(JSON.parse(orphans.stdout).leftovers, [], 'no leftover found');

      const removing = posix.join(defaultStagingRoot(target), '_removing');
      await until('the set-aside staging dir is removed', async () => (await sb.store.list(removing)).length === 0);
      const beside = (await sb.store.list(defaultStagingRoot(target)))
        .map((e) => e.name)
        .filter((n) => n !== '_removing');
      assert.deepEqual(beside, ['_log'], 'only the table log stays beside the table');
    });
  });
}
