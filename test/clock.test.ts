// No decision compares two hosts' clocks, and a write that lands after its writer lost the job
// is harmless: leases judged by the observer's own elapsed time, the table log's taken numbers,
// late plans of a reset job, and clean-orphans' ages under a clock far off.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { ConflictError } from '../src/errors.js';
import { commitLogDir } from '../src/job/layout.js';
import { jobScenario, libCommitJob, readyJob, testEnv } from '../testing/lib.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree } from '../testing/tree.js';

const rejection = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => null,
    (e: unknown) => e,
  );

for (const fx of storeFixtures()) {
  describe(`clock and late writes on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'k');

    test('a done marker left without its log entry keeps its number: an older overwrite conflicts (exit 4)', async () => {
      const target = posix.join(dir(), 'sales');
      const older = await readyJob(sb.store, target, jobScenario('older', 'overwrite'), [
        { task: '0', partition: ['dt=1'], files: { a: 'older' } },
      ]);
      const newer = await readyJob(sb.store, target, jobScenario('newer', 'overwrite'), [
        { task: '0', partition: ['dt=1'], files: { b: 'newer' } },
      ]);
      await libCommitJob(testEnv(sb.store), newer);
      const log = commitLogDir(target);
      const names = (await sb.store.list(log)).map((e) => e.name).sort();
      assert.deepEqual(names, ['00000000000000000000.done', '00000000000000000000.yaml', 'log-id.yaml']);
      await sb.store.delete(posix.join(log, '00000000000000000000.yaml'), false);

      const err = await rejection(libCommitJob(testEnv(sb.store), older));
      assert.ok(err instanceof ConflictError, `exit 4, not: ${String(err)}`);
      assert.match((err as Error).message, /entries made since it was staged are missing/);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/b': 'newer' }, "the newer job's data stays");
      assert.ok(await sb.store.stat(posix.join(older, '_job.yaml')), 'the older job is still staged');
    });
  });
}
