// adopt on every store: leftovers laid out as Hadoop, Spark and Hive write them, killed at each
// stage of their own commit, taken to a finished table with adopt + commit-job; what cannot be
// adopted changes nothing; dry runs change nothing (the whole tree, with times, compared).

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { mkdtemp, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { cli, ok } from './helpers/cli.js';
import { hadoopV1, hiveInsert, SPARK_STAGES, sparkOverwrite, taskDir, type EngineCase } from './helpers/engines.js';
import { storeFixtures, useSandbox, type StoreSandbox } from './helpers/stores.js';
import { readTree, writeTree, type Tree } from './helpers/tree.js';
import type { Store } from '../src/store/types.js';

/** Every file and directory under `base` with its size and modification time. */
async function snapshot(store: Store, base: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const visit = async (dir: string, rel: string): Promise<void> => {
    for (const e of await store.list(dir, { details: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      out[r] = `${e.kind} ${e.size} ${e.mtimeMs}`;
      if (e.kind === 'dir') await visit(e.path, r);
    }
  };
  await visit(base, '');
  return out;
}

const isData = (k: string) => k.split('/').every((s) => !s.startsWith('_') && !s.startsWith('.'));
const dataOf = (t: Tree) => Object.fromEntries(Object.entries(t).filter(([k]) => isData(k)));

for (const fx of storeFixtures()) {
  describe(`adopt on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'a');
    const run = (args: string[]) => cli(args, { env: sb.env });

    async function table(c: EngineCase): Promise<{ root: string; target: string; leftover: string }> {
      const root = dir();
      const target = posix.join(root, 'sales');
      await writeTree(sb.store, target, c.before);
      return { root, target, leftover: posix.join(target, c.leftover) };
    }

    /** The table holds what the uninterrupted engine job left: its data exactly, every checksum file it wrote. */
    async function assertFinished(c: EngineCase, root: string, target: string): Promise<void> {
      const tree = await readTree(sb.store, target);
      assert.deepEqual(dataOf(tree), dataOf(c.after));
      for (const [k, v] of Object.entries(c.after)) assert.equal(tree[k], v, `${k} is in the table`);
      const leftovers = Object.keys(tree).filter((k) => /^(_temporary|\.spark-staging|\.hive-staging)/.test(k));
      assert.deepEqual(leftovers, [], 'the leftover is gone from the table');
      const staging = Object.keys(await readTree(sb.store, posix.join(root, '.stagecommit'))).filter((k) => !k.startsWith('sales/_log/'));
      assert.deepEqual(staging, [], 'no staging dir is left');
    }

    const cases: [string, () => EngineCase][] = [
      ...SPARK_STAGES.filter((s) => s !== 'tasks-running').map((s): [string, () => EngineCase] => [`spark overwrite killed at ${s}`, () => sparkOverwrite(s)]),
      ['hadoop v1 across app attempts 0 and 1', hadoopV1],
      ['hive insert with a finished -ext-10000', hiveInsert],
    ];
    for (const [name, make] of cases) {
      test(`${name}: adopt, commit-job --dry-run, commit-job leave what the engine would have`, async () => {
        const c = make();
        const { root, target, leftover } = await table(c);
        const handle = await ok(['adopt', '--older-than', '0s', sb.uri(leftover)], { env: sb.env });
        const before = await snapshot(sb.store, root);
        const dry = await run(['commit-job', '--job', handle, '--dry-run', '--json']);
        assert.equal(dry.code, 0, dry.stderr);
        const plan = JSON.parse(dry.stdout);
        assert.equal(plan.dryRun, true);
        assert.ok(plan.operations.length > 0);
        assert.deepEqual(await snapshot(sb.store, root), before, 'the dry run changed nothing');
        const commit = await run(['commit-job', '--job', handle, '--json']);
        assert.equal(commit.code, 0, commit.stderr);
        const done = JSON.parse(commit.stdout);
        assert.deepEqual([done.files, done.partitionsWritten], [plan.files, plan.partitionsWritten], 'the dry run planned what the commit did');
        await assertFinished(c, root, target);
      });
    }

    test('a Spark job killed while tasks ran, adopted with --tasks 3: commit-job refuses with exit 5 and changes nothing', async () => {
      const c = sparkOverwrite('tasks-running');
      const { root, leftover } = await table(c);
      const r = await run(['adopt', '--older-than', '0s', '--tasks', '3', '--json', sb.uri(leftover)]);
      assert.equal(r.code, 0, r.stderr);
      const adopted = JSON.parse(r.stdout);
      assert.deepEqual([adopted.tasks, adopted.gaps, adopted.missingTasks, adopted.discarded.length, adopted.mode], [['0', '1'], [], ['2'], 1, 'overwrite']);
      const before = await snapshot(sb.store, root);
      const dry = await run(['commit-job', '--job', adopted.handle, '--dry-run']);
      assert.equal(dry.code, 5);
      assert.match(dry.stderr, /1 of 3 declared task\(s\) are not committed: 2/);
      const real = await run(['commit-job', '--job', adopted.handle]);
      assert.equal(real.code, 5);
      assert.deepEqual(Object.keys(await snapshot(sb.store, root)), Object.keys(before), 'commit-job changed nothing');
      const jobs = await run(['jobs', sb.uri(posix.join(root, 'sales')), '--json']);
      assert.equal(jobs.code, 0, jobs.stderr);
      const [row] = JSON.parse(jobs.stdout).jobs;
      assert.deepEqual([row.handle, row.state, row.tasksCommitted, row.tasksDeclared, row.lease], [adopted.handle, 'staged', 2, 3, null]);
      assert.equal((await run(['abort', '--job', adopted.handle])).code, 0);
    });

    test('a Spark staging dir holding absolute-path partition files is refused (exit 2), never adopted as a whole-table overwrite', async () => {
      const c = sparkOverwrite('replacing');
      const { root, target, leftover } = await table(c);
      const flat = '3d9a7e10-2b4c-4f6e-8a1d-5c7b9e0f1a2b-part-00000-c0ffee00.c000.snappy.parquet';
      await writeTree(sb.store, leftover, { [flat]: 'custom-location' });
      const before = await snapshot(sb.store, root);
      for (const extra of [[], ['--mode', 'append'], ['--mode', 'overwrite'], ['--dry-run']]) {
        const r = await run(['adopt', '--older-than', '0s', ...extra, sb.uri(leftover)]);
        assert.equal(r.code, 2, `${extra.join(' ')}: ${r.stderr}`);
        assert.match(r.stderr, new RegExp(`1 file\\(s\\) at its top \\('${flat.replace(/\./g, '\\.')}'\\).*cannot be adopted: its destinations are recorded only in the dead driver's memory`));
        assert.equal(r.stderr.trim().split('\n').length, 1, 'one line');
      }
      assert.deepEqual(await snapshot(sb.store, root), before, 'nothing changed');
      assert.equal((await readTree(sb.store, target))['dt=2026-11-27/part-00000-old.c000.snappy.parquet'], 'keep-27');
    });

    test('a leftover whose directories changed recently is live-looking (exit 4): a Spark driver in its job commit moves partition dirs out', async (t) => {
      if (!sb.backdate) return t.skip('S3 dates only objects');
      const hourAgo = Date.now() - 3600_000;
      const changes: [string, (c: { target: string; leftover: string }) => Promise<unknown>][] = [
        // The driver moves dt=29 from the staging dir into the table: only the staging dir's own time changes.
        ['a partition dir moved out', (c) => sb.store.rename(posix.join(c.leftover, 'dt=2026-11-29'), posix.join(c.target, 'dt=2026-11-29'))],
        // A file goes from a partition dir inside: only that directory's time changes.
        ['a file deleted inside', (c) => sb.store.delete(posix.join(c.leftover, 'dt=2026-11-30', '.part-00001-c0ffee00-1234-4abc-8def-001122334455.c000.snappy.parquet.crc'), false)],
      ];
      for (const [what, change] of changes) {
        const c = await table(sparkOverwrite('replacing'));
        await sb.backdate(c.root, hourAgo);
        const old = await run(['adopt', '--dry-run', '--json', sb.uri(c.leftover)]);
        assert.equal(old.code, 0, `untouched for an hour, it is adoptable: ${old.stderr}`);
        assert.ok(JSON.parse(old.stdout).leftover.ageSeconds >= 3500);
        await change(c);
        const before = await snapshot(sb.store, c.root);
        for (const dry of [[], ['--dry-run']]) {
          const r = await run(['adopt', ...dry, sb.uri(c.leftover)]);
          assert.equal(r.code, 4, `${what}: ${r.stderr}`);
          assert.match(r.stderr, /was changed \d+s ago, more recently than --older-than allows: its engine may still be writing it; nothing was changed/);
        }
        assert.deepEqual(await snapshot(sb.store, c.root), before, 'nothing changed');
      }
    });

    test('adopt of a live-looking leftover, of garbage and of a non-leftover dir exits non-zero and changes nothing', async () => {
      const c = hadoopV1();
      const { root, target, leftover } = await table(c);
      await writeTree(sb.store, target, { '_temporary/1/junk.txt': 'not Hadoop', 'dt=x/.hive-staging_hive_q/_tmp.-ext-10000/000000_0': 'half' });
      const spark = sparkOverwrite('merging');
      await writeTree(sb.store, posix.join(root, 'other'), spark.before);
      const before = await snapshot(sb.store, root);
      const attempts: [string[], number, RegExp][] = [
        [[sb.uri(posix.join(target, 'dt=x/.hive-staging_hive_q')), '--older-than', '0s'], 2, /no finished Hive output.*still writing/],
        [[sb.uri(posix.join(root, 'other', spark.leftover))], 4, /more recently than --older-than/],
        [[sb.uri(leftover), '--older-than', '0s'], 2, /'1\/junk.txt' is neither a committed task dir/],
        [[sb.uri(target), '--older-than', '0s'], 2, /not an engine's leftover/],
        [[sb.uri(posix.join(target, 'nothing-here')), '--older-than', '0s'], 2, /does not exist/],
      ];
      for (const [args, code, re] of attempts) {
        for (const dry of [[], ['--dry-run']]) {
          const r = await run(['adopt', ...args, ...dry]);
          assert.equal(r.code, code, `adopt ${args.join(' ')} ${dry.join('')}: ${r.stderr}`);
          assert.match(r.stderr, re);
          assert.equal(r.stderr.trim().split('\n').length, 1, 'one line');
        }
      }
      assert.deepEqual(await snapshot(sb.store, root), before);
    });

    test('adopt SIGKILLed before each store mutation never loses the leftover: abort the half-made job, adopt again, commit', async () => {
      for (let k = 1; ; k++) {
        const c = sparkOverwrite('replacing');
        const { root, target, leftover } = await table(c);
        const r = await cli(['adopt', '--older-than', '0s', sb.uri(leftover)], { env: { ...sb.env, STAGECOMMIT_TEST_KILL_AT: String(k) } });
        if (r.code === 0) {
          assert.ok(k > 3, 'adopt makes several mutations');
          await ok(['commit-job', '--job', r.stdout.trim()], { env: sb.env });
          await assertFinished(c, root, target);
          break;
        }
        assert.equal(r.signal, 'SIGKILL', r.stderr);
        const moved = (await readTree(sb.store, leftover)).hasOwnProperty('_SUCCESS') === false;
        const jobs = JSON.parse(await ok(['jobs', '--json', sb.uri(target)], { env: sb.env })).jobs as { handle: string; halfMade?: string }[];
        if (moved) {
          // Killed after its last step, the rename: the job is whole.
          assert.equal(jobs.length, 1);
          await ok(['commit-job', '--job', jobs[0]!.handle], { env: sb.env });
        } else {
          assert.deepEqual(await readTree(sb.store, leftover), Object.fromEntries(Object.entries(c.before).filter(([p]) => p.startsWith(c.leftover + '/')).map(([p, v]) => [p.slice(c.leftover.length + 1), v])), `killed at ${k}: the leftover is untouched`);
          // A half-made job is shown as one, and commit-job refuses it (it would publish nothing and write a _SUCCESS).
          const tree = await readTree(sb.store, root);
          for (const j of jobs) {
            assert.ok(j.halfMade, `killed at ${k}: jobs shows the job as half-made`);
            assert.match(await ok(['status', '--job', j.handle], { env: sb.env }), /half-made adoption/);
            for (const dry of [['--dry-run'], []]) {
              const r = await run(['commit-job', '--job', j.handle, ...dry]);
              assert.equal(r.code, 4, `killed at ${k}: commit-job ${dry.join('')} ${r.stderr}`);
              assert.match(r.stderr, new RegExp(`is a half-made adoption \\(.*\\): nothing was changed; abort it \\('stagecommit abort --job ${j.handle}', which leaves the leftover where it is\\) and adopt ${sb.uri(leftover)} again`));
            }
          }
          assert.deepEqual(await readTree(sb.store, root), tree, `killed at ${k}: commit-job changed nothing (its lease came and went)`);
          for (const j of jobs) await ok(['abort', '--job', j.handle], { env: sb.env });
          assert.deepEqual(await readTree(sb.store, leftover), Object.fromEntries(Object.entries(c.before).filter(([p]) => p.startsWith(c.leftover + '/')).map(([p, v]) => [p.slice(c.leftover.length + 1), v])), `killed at ${k}: aborting the half-made job left the leftover`);
          await ok(['commit-job', '--job', await ok(['adopt', '--older-than', '0s', sb.uri(leftover)], { env: sb.env })], { env: sb.env });
        }
        await assertFinished(c, root, target);
      }
    });

    test('gaps in the task numbering without --tasks declare the highest task + 1: commit-job refuses with exit 5 naming the missing task, which can be run after recover', async () => {
      const c = hadoopV1();
      const { root, target, leftover } = await table(c);
      // Task 1 never committed in either app attempt.
      for (const p of [`_temporary/0/${taskDir(1)}`, `_temporary/1/${taskDir(1)}`]) await sb.store.delete(posix.join(target, p), true);
      const text = await ok(['adopt', '--older-than', '0s', '--dry-run', sb.uri(leftover)], { env: sb.env });
      const r = await run(['adopt', '--older-than', '0s', '--json', sb.uri(leftover)]);
      assert.equal(r.code, 0, r.stderr);
      const adopted = JSON.parse(r.stdout);
      assert.deepEqual([adopted.tasks, adopted.gaps, adopted.tasksDeclared, adopted.tasksDeclaredBy, adopted.missingTasks], [['0', '2'], [1], 3, 'gaps', ['1']]);
      assert.match(text, /2 committed task dir\(s\) \(0, 2\) of 3 declared \(the highest task \+ 1, for the gaps\); gaps: 1/);
      assert.match(text, /missing {4}1 of the 3 declared: commit-job will refuse \(exit 5\)/);
      const before = await readTree(sb.store, root);
      for (const dry of [['--dry-run'], []]) {
        const cj = await run(['commit-job', '--job', adopted.handle, ...dry]);
        assert.equal(cj.code, 5, cj.stderr);
        assert.match(cj.stderr, /1 of 3 declared task\(s\) are not committed: 1;/);
      }
      assert.deepEqual(await readTree(sb.store, root), before, 'commit-job changed nothing: no partial append');
      assert.equal((await ok(['recover', '--job', adopted.handle], { env: sb.env })).trim(), '1');
      const file = posix.join(await mkdtemp(posix.join(tmpdir(), 'sc-task-')), 'part-m-00001');
      await writeFile(file, 'rerun-1');
      await ok(['stage', '--job', adopted.handle, '--task', '1', file], { env: sb.env });
      await ok(['commit-task', '--job', adopted.handle, '--task', '1'], { env: sb.env });
      await ok(['commit-job', '--job', adopted.handle], { env: sb.env });
      const tree = await readTree(sb.store, target);
      assert.deepEqual(Object.keys(dataOf(tree)).sort(), ['part-m-00000', 'part-m-00000-earlier', 'part-m-00001', 'part-m-00002']);
      assert.equal(tree['part-m-00001'], 'rerun-1');
    });

    test('a --target that is the leftover or inside it, or (local) on another filesystem, is exit 2 before anything changes', async () => {
      const c = sparkOverwrite('replacing');
      const { root, leftover } = await table(c);
      const before = await snapshot(sb.store, root);
      for (const [target, re] of [
        [leftover, /the target .* is the leftover itself: give the table the leftover belongs to with --target; nothing was changed/],
        [posix.join(leftover, 'dt=2026-11-30'), /the target .* is inside the leftover/],
      ] as const) {
        for (const dry of [[], ['--dry-run']]) {
          const r = await run(['adopt', '--older-than', '0s', '--target', sb.uri(target), ...dry, sb.uri(leftover)]);
          assert.equal(r.code, 2, r.stderr);
          assert.match(r.stderr, re);
        }
      }
      assert.deepEqual(await snapshot(sb.store, root), before, 'nothing changed');
      if (fx.name !== 'local' || (await stat('/dev/shm').catch(() => null))?.dev === (await stat(root)).dev) return;
      const other = await mkdtemp('/dev/shm/sc-adopt-');
      try {
        const r = await run(['adopt', '--older-than', '0s', '--target', other, sb.uri(leftover)]);
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, /is on another filesystem than .*adopting moves the leftover with one rename.*nothing was changed/);
        assert.deepEqual(await readdir(other), [], 'nothing left behind on the other filesystem');
        assert.deepEqual(await snapshot(sb.store, root), before, 'nothing changed');
      } finally {
        await rm(other, { recursive: true, force: true });
      }
    });

    test('small messages: adopt of / or of a link, jobs of a file, a conflict of an adopted job says to adopt again', async () => {
      const c = sparkOverwrite('replacing');
      const { root, target, leftover } = await table(c);
      const jobsOfFile = await run(['jobs', sb.uri(posix.join(target, 'dt=2026-11-27/part-00000-old.c000.snappy.parquet'))]);
      assert.equal(jobsOfFile.code, 2, jobsOfFile.stderr);
      assert.match(jobsOfFile.stderr, /is not a directory: give a table or a staging root/);
      if (fx.name === 'local') {
        const slash = await run(['adopt', '/']);
        assert.equal(slash.code, 2, slash.stderr);
        assert.match(slash.stderr, /error: \/ is not an engine's leftover/);
        const link = posix.join(root, '.spark-staging-link');
        await symlink(leftover, link);
        const r = await run(['adopt', '--older-than', '0s', link]);
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, /is a symbolic link: give the leftover dir itself/);
        await rm(link);
      }
      // An overwrite of dt=2026-11-30 commits after the adoption: the adopted job conflicts.
      const handle = await ok(['adopt', '--older-than', '0s', sb.uri(leftover)], { env: sb.env });
      const other = await ok(['stage', '--target', sb.uri(target), '--mode', 'overwrite', '--partition-by', 'dt'], { env: sb.env });
      const file = posix.join(await mkdtemp(posix.join(tmpdir(), 'sc-task-')), 'part-00000-other.parquet');
      await writeFile(file, 'other');
      await ok(['stage', '--job', other, '--task', '0', '--partition', 'dt=2026-11-30', file], { env: sb.env });
      await ok(['commit-task', '--job', other, '--task', '0'], { env: sb.env });
      await ok(['commit-job', '--job', other], { env: sb.env });
      for (const dry of [['--dry-run'], []]) {
        const r = await run(['commit-job', '--job', handle, ...dry]);
        assert.equal(r.code, 4, r.stderr);
        assert.match(r.stderr, new RegExp(`conflicts with job .*: nothing was changed; abort it \\('stagecommit abort --job ${handle}' gives the leftover back to ${sb.uri(leftover)}\\) and adopt the leftover again once the conflicting job is done`));
        assert.doesNotMatch(r.stderr, /stage the job again/);
      }
    });

    test('two adopts of one leftover at once: one job, and the loser says the leftover was taken and leaves no job', async (t) => {
      if (!sb.store.caps.directoryRename) return t.skip('on S3 adopt moves nothing: the second adopt makes a second job, which the table log refuses at its commit');
      const c = sparkOverwrite('replacing');
      const { root, target, leftover } = await table(c);
      const rs = await Promise.all([0, 1].map(() => run(['adopt', '--older-than', '0s', sb.uri(leftover)])));
      const won = rs.filter((r) => r.code === 0);
      assert.equal(won.length, 1, rs.map((r) => r.stderr).join('\n'));
      const lost = rs.find((r) => r.code !== 0)!;
      assert.ok([2, 4].includes(lost.code!), lost.stderr);
      assert.match(lost.stderr, /was taken while adopting it .*made no job and changed nothing|does not exist/);
      assert.doesNotMatch(lost.stderr, /ENOENT|at .*\.js:/);
      const jobs = JSON.parse(await ok(['jobs', '--json', sb.uri(target)], { env: sb.env })).jobs as { handle: string; halfMade?: string }[];
      assert.deepEqual(jobs.map((j) => [j.handle, j.halfMade]), [[won[0]!.stdout.trim(), undefined]]);
      await ok(['commit-job', '--job', jobs[0]!.handle], { env: sb.env });
      await assertFinished(c, root, target);
    });

    test('dry runs of adopt, recover and abort change nothing, and say what the real step would do', async () => {
      const c = hadoopV1();
      const { root, leftover } = await table(c);
      let before = await snapshot(sb.store, root);
      const dry = await run(['adopt', '--older-than', '0s', '--dry-run', '--json', sb.uri(leftover)]);
      assert.equal(dry.code, 0, dry.stderr);
      const planned = JSON.parse(dry.stdout);
      assert.equal(planned.dryRun, true);
      assert.deepEqual(planned.tasks, ['0', '1', '2']);
      assert.ok(planned.discarded.some((d: { path: string }) => d.path === `0/${taskDir(1)}`));
      assert.deepEqual(await snapshot(sb.store, root), before);
      const handle = await ok(['adopt', '--older-than', '0s', sb.uri(leftover)], { env: sb.env });
      before = await snapshot(sb.store, root);
      for (const step of [['recover'], ['abort'], ['commit-job'], ['abort', '--task', '0']]) {
        const r = await run([...step, '--job', handle, '--dry-run', '--json']);
        assert.equal(r.code, step.includes('--task') ? 4 : 0, `${step.join(' ')}: ${r.stderr}`);
        if (r.code === 0) assert.equal(JSON.parse(r.stdout).dryRun, true);
        assert.deepEqual(await snapshot(sb.store, root), before, `${step.join(' ')} --dry-run changed nothing`);
      }
      const text = await ok(['abort', '--job', handle, '--dry-run'], { env: sb.env });
      // Where directories rename, the leftover is in the staging dir and abort gives it back; on S3
      // it stayed where the engine left it, and aborting the job leaves it there.
      const moved = sb.store.caps.directoryRename;
      assert.match(text, moved ? new RegExp(`abort would throw away job .*: 0 file\\(s\\), 0 B; it gives the adopted leftover back \\(10 file\\(s\\), .*\\) to ${sb.uri(leftover)}; the target is not touched`) : /abort would throw away job .*: 0 file\(s\), 0 B; the target is not touched/);
      const aborted = await run(['abort', '--job', handle]);
      assert.equal(aborted.code, 0, aborted.stderr);
      if (moved) assert.match(aborted.stderr, new RegExp(`the adopted leftover is back at ${sb.uri(leftover)}`));
      const left = Object.keys(await readTree(sb.store, root)).filter((k) => k.startsWith('sales/_temporary/'));
      assert.equal(left.length, 10);
    });

    test('abort of an adopted Spark leftover killed in its job commit gives the leftover back (the only copy of dt=29); where its place is taken, it keeps it', async () => {
      const c = sparkOverwrite('replacing');
      const { root, target, leftover } = await table(c);
      const original = await readTree(sb.store, leftover);
      assert.equal(original['dt=2026-11-29/part-00000-c0ffee00-1234-4abc-8def-001122334455.c000.snappy.parquet'], 'new-0-2026-11-29');
      const aborts: ((handle: string) => string[])[] = [(h) => ['abort', '--job', h]];
      // clean-orphans --delete aborts a stale job; on S3 it would remove the leftover itself, which it lists too.
      if (sb.store.caps.directoryRename) aborts.push(() => ['clean-orphans', sb.uri(posix.join(root, '.stagecommit')), '--older-than', '0s', '--delete']);
      for (const abort of aborts) {
        const handle = await ok(['adopt', '--older-than', '0s', sb.uri(leftover)], { env: sb.env });
        const r = await run(abort(handle));
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(await readTree(sb.store, leftover), original, `${abort(handle)[0]}: the leftover is back, byte for byte`);
        assert.equal(await sb.store.stat(posix.join(sb.pathOf(handle), '_job.yaml')), null, 'the job is gone');
      }
      if (!sb.store.caps.directoryRename) return;
      // The place is taken (the engine ran again and made a new staging dir of the same name): the leftover stays in the staging dir.
      const handle = await ok(['adopt', '--older-than', '0s', sb.uri(leftover)], { env: sb.env });
      await writeTree(sb.store, leftover, { 'dt=2026-11-30/other': 'rerun' });
      for (const dry of [['--dry-run'], []]) {
        const r = await run(['abort', '--job', handle, ...dry]);
        assert.equal(r.code, 4, r.stderr);
        assert.match(r.stderr, new RegExp(`the adopted leftover cannot go back: ${sb.uri(leftover)} exists again, so it stays in ${handle}/_adopted and nothing is deleted; move one of them aside and run abort again`));
      }
      assert.deepEqual(await readTree(sb.store, posix.join(sb.pathOf(handle), '_adopted')), original, 'the leftover is kept in the staging dir');
      assert.equal((await run(['commit-job', '--job', handle])).code, 4, 'the job is aborted');
      await sb.store.delete(leftover, true);
      const again = await run(['abort', '--job', handle]);
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual(await readTree(sb.store, leftover), original);
      await ok(['commit-job', '--job', await ok(['adopt', '--older-than', '0s', sb.uri(leftover)], { env: sb.env })], { env: sb.env });
      await assertFinished(c, root, target);
    });
  });
}
