// No decision compares two hosts' clocks, and a write that lands after its writer lost the job
// is harmless: leases judged by the observer's own elapsed time, the table log's taken numbers,
// late plans of a reset job, and clean-orphans' ages under a clock far off.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { ConflictError, InjectedFault } from '../src/errors.js';
import { commitLogDir } from '../src/job/layout.js';
import type { MutatingOp } from '../src/store/types.js';
import { recover } from '../src/steps/recover.js';
import { status } from '../src/steps/status.js';
import { until } from '../testing/cli.js';
import { jobScenario, libCommitJob, readyJob, testEnv } from '../testing/lib.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree } from '../testing/tree.js';

/** A pid no process has: the holder of a lease with it on this host is known dead. */
const DEAD_PID = 2 ** 22 + 12345;

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

    test("a reset job's commit plan and log entry that land late leave it staged: commit-job commits it afresh", async () => {
      const target = posix.join(dir(), 'sales');
      const staging = await readyJob(sb.store, target, jobScenario('late', 'overwrite'), [
        { task: '0', partition: ['dt=1'], files: { a: 'a' } },
      ]);
      // The first driver's two creates at the commit point are sent, then held (a stopped process, a
      // slow store); its renewals never land. It is known dead, so recover takes over at once.
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      let held = 0;
      let landed = false;
      const late = (path: string) => path.includes('_commit.yaml') || /\/_log\/\d{20}\.yaml$/.test(path);
      const first = testEnv(
        sb.store,
        async (n, op: MutatingOp, path) => {
          if (op === 'writeFile' && path.includes('_lease.')) return new Promise<void>(() => {});
          if (!late(path)) {
            // Past its writes in flight, the stopped driver changes nothing more (its lease is lost).
            if (landed) throw new InjectedFault(n, op, path);
            return;
          }
          if (landed) return;
          held++;
          await gate;
        },
        { pid: DEAD_PID },
      );
      const driving = rejection(libCommitJob(first, staging));
      await until('both creates are held', async () => held === 2);
      const reset = await recover(testEnv(sb.store), { stagingPath: staging });
      assert.equal(reset.state, 'staged');
      assert.equal(reset.appAttempt, 1);

      landed = true;
      open();
      await until(
        'the held plan landed',
        async () => (await sb.store.stat(posix.join(staging, '_commit.yaml'))) !== null,
      );
      assert.ok((await driving) instanceof InjectedFault, 'the stopped driver published nothing');
      const st = await status(testEnv(sb.store), { stagingPath: staging });
      assert.equal(st.state, 'staged', 'a plan of an app attempt recover reset is not a commit point');
      assert.deepEqual(await readTree(sb.store, target), {}, 'nothing published');

      const warnings: string[] = [];
      await libCommitJob(
        testEnv(sb.store, undefined, { emit: (e) => void (e.type === 'warn' && warnings.push(e.message)) }),
        staging,
      );
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a': 'a' });
      assert.ok(
        warnings.some((w) =>
          /was made in app attempt 0: recover reset the job to app attempt 1 before the plan landed/.test(w),
        ),
        warnings.join('\n'),
      );
      assert.equal(await sb.store.stat(staging), null, 'the staging dir went');
    });
  });
}
