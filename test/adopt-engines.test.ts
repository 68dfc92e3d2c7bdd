// adopt on every store: leftovers laid out as Hadoop, Spark and Hive write them, killed at each
// stage of their own commit, taken to a finished table with adopt + commit-job; what adopt
// declares (tasks, gaps), dry runs that change nothing (the whole tree, with times, compared),
// and abort giving a leftover back. Refusals, kills and races: adopt-safety.test.ts.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { errorOf, ok } from '../testing/cli.js';
import { adoptRunners, assertFinished, dataOf, snapshot, table } from '../testing/adopt.js';
import { hadoopV1, hiveInsert, SPARK_STAGES, sparkOverwrite, taskDir, type EngineCase } from '../testing/engines.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { readTree, writeTree } from '../testing/tree.js';

for (const fx of storeFixtures()) {
  describe(`adopt engines' leftovers on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'a');
    const { run, here, inproc, realOrDry } = adoptRunners(() => sb);

    const cases: [string, () => EngineCase][] = [
      ...SPARK_STAGES.filter((s) => s !== 'tasks-running').map((s): [string, () => EngineCase] => [
        `spark overwrite killed at ${s}`,
        () => sparkOverwrite(s),
      ]),
      ['hadoop v1 across app attempts 0 and 1', hadoopV1],
      ['hive insert with a finished -ext-10000', hiveInsert],
    ];
    for (const [name, make] of cases) {
      test(`${name}: adopt, dry run, commit: the engine's outcome`, async () => {
        const c = make();
        const { root, target, leftover } = await table(sb, dir(), c);
        const handle = await ok(['adopt', '--older-than', '0s', sb.uri(leftover)], { env: sb.env });
        const before = await snapshot(sb.store, root);
        const dry = await inproc(['commit-job', '--job', handle, '--dry-run', '--json']);
        assert.equal(dry.code, 0, dry.stderr);
        const plan = JSON.parse(dry.stdout);
        assert.equal(plan.dryRun, true);
        assert.ok(plan.operations.length > 0);
        assert.deepEqual(await snapshot(sb.store, root), before, 'the dry run changed nothing');
        const commit = await run(['commit-job', '--job', handle, '--json']);
        assert.equal(commit.code, 0, commit.stderr);
        const done = JSON.parse(commit.stdout);
        assert.deepEqual(
          [done.files, done.partitionsWritten],
          [plan.files, plan.partitionsWritten],
          'the dry run planned what the commit did',
        );
        await assertFinished(sb, c, root, target);
      });
    }

    test('a Spark job killed while tasks ran, adopted with --tasks 3: commit-job exits 5, nothing changed', async () => {
      const c = sparkOverwrite('tasks-running');
      const { root, leftover } = await table(sb, dir(), c);
      const r = await run(['adopt', '--older-than', '0s', '--tasks', '3', '--json', sb.uri(leftover)]);
      assert.equal(r.code, 0, r.stderr);
      const adopted = JSON.parse(r.stdout);
      assert.deepEqual(
        [adopted.committedTasks, adopted.gaps, adopted.tasksToRun, adopted.discarded.length, adopted.mode],
        [['0', '1'], [], ['2'], 1, 'overwrite'],
      );
      const before = await snapshot(sb.store, root);
      const dry = await inproc(['commit-job', '--job', adopted.handle, '--dry-run', '--json']);
      assert.equal(dry.code, 5);
      assert.deepEqual(errorOf(dry).detail, { reason: 'tasks-missing', missing: ['2'], declared: 3 });
      const real = await run(['commit-job', '--job', adopted.handle]);
      assert.equal(real.code, 5);
      assert.deepEqual(Object.keys(await snapshot(sb.store, root)), Object.keys(before), 'commit-job changed nothing');
      const jobs = await inproc(['jobs', sb.uri(posix.join(root, 'sales')), '--json']);
      assert.equal(jobs.code, 0, jobs.stderr);
      const [row] = JSON.parse(jobs.stdout).jobs;
      assert.deepEqual(
        [row.handle, row.state, row.tasksCommitted, row.tasksDeclared, row.lease],
        [adopted.handle, 'staged', 2, 3, null],
      );
      assert.equal((await inproc(['abort', '--job', adopted.handle])).code, 0);
    });

    // Never adopted as a whole-table overwrite.
    test('a Spark staging dir with absolute-path partition files is refused (exit 2), not adopted', async () => {
      const c = sparkOverwrite('replacing');
      const { root, target, leftover } = await table(sb, dir(), c);
      const flat = '3d9a7e10-2b4c-4f6e-8a1d-5c7b9e0f1a2b-part-00000-c0ffee00.c000.snappy.parquet';
      await writeTree(sb.store, leftover, { [flat]: 'custom-location' });
      const before = await snapshot(sb.store, root);
      for (const extra of [[], ['--mode', 'append'], ['--mode', 'overwrite'], ['--dry-run']]) {
        const r = await (extra.length ? inproc : run)(['adopt', '--older-than', '0s', ...extra, sb.uri(leftover)]);
        assert.equal(r.code, 2, `${extra.join(' ')}: ${r.stderr}`);
        assert.match(
          r.stderr,
          new RegExp(
            `1 file\\(s\\) at its top \\('${flat.replace(/\./g, '\\.')}'\\).*cannot be adopted: its destinations are recorded only in the dead driver's memory`,
          ),
        );
        assert.equal(r.stderr.trim().split('\n').length, 1, 'one line');
      }
      assert.deepEqual(await snapshot(sb.store, root), before, 'nothing changed');
      assert.equal((await readTree(sb.store, target))['dt=2026-11-27/part-00000-old.c000.snappy.parquet'], 'keep-27');
    });

    // Without --tasks, the highest task + 1 is declared; the missing task can be run after recover.
    test('gaps in the task numbering: commit-job exits 5 naming the missing task', async () => {
      const c = hadoopV1();
      const { root, target, leftover } = await table(sb, dir(), c);
      // Task 1 never committed in either app attempt.
      for (const p of [`_temporary/0/${taskDir(1)}`, `_temporary/1/${taskDir(1)}`])
        await sb.store.delete(posix.join(target, p), true);
      const text = await here(['adopt', '--older-than', '0s', '--dry-run', sb.uri(leftover)]);
      const r = await run(['adopt', '--older-than', '0s', '--json', sb.uri(leftover)]);
      assert.equal(r.code, 0, r.stderr);
      const adopted = JSON.parse(r.stdout);
      assert.deepEqual(
        [adopted.committedTasks, adopted.gaps, adopted.tasksDeclared, adopted.tasksDeclaredBy, adopted.tasksToRun],
        [['0', '2'], ['1'], 3, 'gaps', ['1']],
      );
      assert.match(
        text,
        /2 committed task dir\(s\) \(0, 2\) of 3 declared \(the highest task \+ 1, for the gaps\); gaps: 1/,
      );
      assert.match(text, /missing {4}1 of the 3 declared: commit-job will refuse \(exit 5\)/);
      const before = await readTree(sb.store, root);
      for (const dry of [['--dry-run'], []]) {
        const cj = await realOrDry(dry)(['commit-job', '--job', adopted.handle, ...dry, '--json']);
        assert.equal(cj.code, 5, cj.stderr);
        assert.deepEqual(errorOf(cj).detail, { reason: 'tasks-missing', missing: ['1'], declared: 3 });
      }
      assert.deepEqual(await readTree(sb.store, root), before, 'commit-job changed nothing: no partial append');
      assert.equal((await ok(['recover', '--job', adopted.handle], { env: sb.env })).trim(), '1');
      const file = posix.join(await mkdtemp(posix.join(tmpdir(), 'sc-task-')), 'part-m-00001');
      await writeFile(file, 'rerun-1');
      await here(['stage', '--job', adopted.handle, '--task', '1', file]);
      await here(['commit-task', '--job', adopted.handle, '--task', '1']);
      await here(['commit-job', '--job', adopted.handle]);
      const tree = await readTree(sb.store, target);
      assert.deepEqual(Object.keys(dataOf(tree)).sort(), [
        'part-m-00000',
        'part-m-00000-earlier',
        'part-m-00001',
        'part-m-00002',
      ]);
      assert.equal(tree['part-m-00001'], 'rerun-1');
    });

    test('dry runs of adopt, recover and abort change nothing, and say what the real step would do', async () => {
      const c = hadoopV1();
      const { root, leftover } = await table(sb, dir(), c);
      let before = await snapshot(sb.store, root);
      const dry = await inproc(['adopt', '--older-than', '0s', '--dry-run', '--json', sb.uri(leftover)]);
      assert.equal(dry.code, 0, dry.stderr);
      const planned = JSON.parse(dry.stdout);
      assert.equal(planned.dryRun, true);
      assert.deepEqual(planned.committedTasks, ['0', '1', '2']);
      assert.ok(planned.discarded.some((d: { path: string }) => d.path === `0/${taskDir(1)}`));
      assert.deepEqual(await snapshot(sb.store, root), before);
      const handle = await here(['adopt', '--older-than', '0s', sb.uri(leftover)]);
      before = await snapshot(sb.store, root);
      for (const step of [['recover'], ['abort'], ['commit-job'], ['abort', '--task', '0']]) {
        const r = await inproc([...step, '--job', handle, '--dry-run', '--json']);
        assert.equal(r.code, step.includes('--task') ? 6 : 0, `${step.join(' ')}: ${r.stderr}`);
        if (r.code === 0) assert.equal(JSON.parse(r.stdout).dryRun, true);
        assert.deepEqual(await snapshot(sb.store, root), before, `${step.join(' ')} --dry-run changed nothing`);
      }
      const text = await here(['abort', '--job', handle, '--dry-run']);
      // Where directories rename, the leftover is in the staging dir and abort gives it back; on S3
      // it stayed where the engine left it, and aborting the job leaves it there.
      const moved = sb.store.caps.directoryRename;
      assert.match(
        text,
        moved
          ? new RegExp(
              `abort would throw away job .*: 0 file\\(s\\), 0 B; it gives the adopted leftover back \\(10 file\\(s\\), .*\\) to ${sb.uri(leftover)}; the target is not touched`,
            )
          : /abort would throw away job .*: 0 file\(s\), 0 B; the target is not touched/,
      );
      const aborted = await run(['abort', '--job', handle]);
      assert.equal(aborted.code, 0, aborted.stderr);
      if (moved) assert.match(aborted.stderr, new RegExp(`the adopted leftover is back at ${sb.uri(leftover)}`));
      const left = Object.keys(await readTree(sb.store, root)).filter((k) => k.startsWith('sales/_temporary/'));
      assert.equal(left.length, 10);
    });

    // It is the only copy of dt=29; where its place is taken, the job keeps it.
    test('abort of an adopted Spark leftover killed in its job commit gives the leftover back', async () => {
      const c = sparkOverwrite('replacing');
      const { root, target, leftover } = await table(sb, dir(), c);
      const original = await readTree(sb.store, leftover);
      assert.equal(
        original['dt=2026-11-29/part-00000-c0ffee00-1234-4abc-8def-001122334455.c000.snappy.parquet'],
        'new-0-2026-11-29',
      );
      const aborts: ((handle: string) => string[])[] = [(h) => ['abort', '--job', h]];
      // clean-orphans --delete aborts a stale job; on S3 it would remove the leftover itself, which it lists too.
      if (sb.store.caps.directoryRename)
        aborts.push(() => [
          'clean-orphans',
          sb.uri(posix.join(root, '.stagecommit')),
          '--older-than',
          '0s',
          '--delete',
        ]);
      for (const abort of aborts) {
        const handle = await here(['adopt', '--older-than', '0s', sb.uri(leftover)]);
        const r = await run(abort(handle));
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(
          await readTree(sb.store, leftover),
          original,
          `${abort(handle)[0]}: the leftover is back, byte for byte`,
        );
        assert.equal(await sb.store.stat(posix.join(sb.pathOf(handle), '_job.yaml')), null, 'the job is gone');
      }
      if (!sb.store.caps.directoryRename) return;
      // The place is taken (the engine ran again and made a new staging dir of the same name): the leftover stays in
      // the staging dir.
      const handle = await here(['adopt', '--older-than', '0s', sb.uri(leftover)]);
      await writeTree(sb.store, leftover, { 'dt=2026-11-30/other': 'rerun' });
      for (const dry of [['--dry-run'], []]) {
        const r = await realOrDry(dry)(['abort', '--job', handle, ...dry]);
        assert.equal(r.code, 6, r.stderr);
        assert.match(
          r.stderr,
          new RegExp(
            `the adopted leftover cannot go back: ${sb.uri(leftover)} exists again, so it stays in ${handle}/_adopted and nothing is deleted; move one of them aside and run abort again`,
          ),
        );
      }
      assert.deepEqual(
        await readTree(sb.store, posix.join(sb.pathOf(handle), '_adopted')),
        original,
        'the leftover is kept in the staging dir',
      );
      assert.equal((await inproc(['commit-job', '--job', handle])).code, 6, 'the job is aborted');
      await sb.store.delete(leftover, true);
      const again = await run(['abort', '--job', handle]);
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual(await readTree(sb.store, leftover), original);
      await here(['commit-job', '--job', await here(['adopt', '--older-than', '0s', sb.uri(leftover)])]);
      await assertFinished(sb, c, root, target);
    });
  });
}
