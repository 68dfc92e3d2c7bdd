// adopt on every store where it must refuse or survive: live-looking leftovers, garbage, a
// --target that is the leftover or inside it, a SIGKILL before each of its mutations, two adopts
// at once; whatever is refused changes nothing (the whole tree, with times, compared).

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { mkdtemp, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { BlockedError } from '../src/errors.js';
import { adopt } from '../src/steps/adopt.js';
import { assertFailed, cli, type Failure } from '../testing/cli.js';
import { adoptRunners, assertFinished, leftoverFiles, snapshot, table } from '../testing/adopt.js';
import { hadoopV1, sparkOverwrite } from '../testing/engines.js';
import { testEnv } from '../testing/lib.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { readTree, writeTree } from '../testing/tree.js';

for (const fx of storeFixtures()) {
  describe(`adopt refusals and kills on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'a');
    const { run, here, inproc, realOrDry } = adoptRunners(() => sb);

    // A Spark driver in its job commit moves partition dirs out.
    test('a leftover whose directories changed recently is live-looking (exit 4)', async (t) => {
      if (!sb.backdate) return t.skip('S3 dates only objects');
      const hourAgo = Date.now() - 3600_000;
      const changes: [string, (c: { target: string; leftover: string }) => Promise<unknown>][] = [
        // The driver moves dt=29 from the staging dir into the table: only the staging dir's own time changes.
        [
          'a partition dir moved out',
          (c) => sb.store.rename(posix.join(c.leftover, 'dt=2026-11-29'), posix.join(c.target, 'dt=2026-11-29')),
        ],
        // A file goes from a partition dir inside: only that directory's time changes.
        [
          'a file deleted inside',
          (c) =>
            sb.store.delete(
              posix.join(
                c.leftover,
                'dt=2026-11-30',
                '.part-00001-c0ffee00-1234-4abc-8def-001122334455.c000.snappy.parquet.crc',
              ),
              false,
            ),
        ],
      ];
      for (const [what, change] of changes) {
        const c = await table(sb, dir(), sparkOverwrite('replacing'));
        await sb.backdate(c.root, hourAgo);
        const old = await inproc(['adopt', '--dry-run', '--json', sb.uri(c.leftover)]);
        assert.equal(old.code, 0, `untouched for an hour, it is adoptable: ${old.stderr}`);
        assert.ok(JSON.parse(old.stdout).leftover.ageSeconds >= 3500);
        await change(c);
        const before = await snapshot(sb.store, c.root);
        for (const dry of [[], ['--dry-run']]) {
          const r = await realOrDry(dry)(['adopt', ...dry, '--json', sb.uri(c.leftover)]);
          const e = assertFailed(r, 4, {
            kind: 'ConflictError',
            reason: 'leftover-recent',
            leftover: sb.uri(c.leftover),
          });
          assert.ok(e.detail.reason === 'leftover-recent' && e.detail.ageSeconds !== null, what);
        }
        assert.deepEqual(await snapshot(sb.store, c.root), before, 'nothing changed');
      }
    });

    test('adopt of a live-looking leftover, of garbage or of a non-leftover dir: non-zero, nothing changed', async () => {
      const c = hadoopV1();
      const { root, target, leftover } = await table(sb, dir(), c);
      await writeTree(sb.store, target, {
        '_temporary/1/junk.txt': 'not Hadoop',
        'dt=x/.hive-staging_hive_q/_tmp.-ext-10000/000000_0': 'half',
      });
      const spark = sparkOverwrite('merging');
      await writeTree(sb.store, posix.join(root, 'other'), spark.before);
      const before = await snapshot(sb.store, root);
      const hive = sb.uri(posix.join(target, 'dt=x/.hive-staging_hive_q'));
      const live = sb.uri(posix.join(root, 'other', spark.leftover));
      const nothing = sb.uri(posix.join(target, 'nothing-here'));
      const attempts: [string[], number, Failure][] = [
        [[hive, '--older-than', '0s'], 2, { reason: 'leftover-hive-unfinished', leftover: hive, writing: true }],
        [[live], 4, { reason: 'leftover-recent', leftover: live }],
        [[sb.uri(leftover), '--older-than', '0s'], 2, { reason: 'leftover-layout', leftover: sb.uri(leftover) }],
        [[sb.uri(target), '--older-than', '0s'], 2, { reason: 'not-a-leftover', leftover: sb.uri(target) }],
        [[nothing, '--older-than', '0s'], 2, { reason: 'leftover-missing', leftover: nothing }],
      ];
      for (const [args, code, want] of attempts) {
        for (const dry of [[], ['--dry-run']])
          assertFailed(await realOrDry(dry)(['adopt', ...args, ...dry, '--json']), code, want);
      }
      assert.deepEqual(await snapshot(sb.store, root), before);
    });

    // The way back each time: abort the half-made job, adopt again, commit.
    test('adopt SIGKILLed before each store mutation never loses the leftover', async (t) => {
      // Only the killed adopt is a process of its own; what shows and heals its leftovers runs
      // through main() in this process (here, inproc: the same commands, no start-up each).
      for (let k = 1; ; k++) {
        const c = sparkOverwrite('replacing');
        const { root, target, leftover } = await table(sb, dir(), c);
        const intact = async (why: string) =>
          assert.deepEqual(await readTree(sb.store, leftover), leftoverFiles(c), `killed at ${k}: ${why}`);
        const r = await cli(['adopt', '--older-than', '0s', sb.uri(leftover)], {
          env: { ...sb.env, STAGECOMMIT_TEST_KILL_AT: String(k) },
        });
        if (r.code === 0) {
          assert.ok(k > 3, 'adopt makes several mutations');
          await here(['commit-job', '--job', r.stdout.trim()]);
          await assertFinished(sb, c, root, target);
          t.diagnostic(`adopt killed at each of its ${k - 1} mutations on ${fx.name}`);
          break;
        }
        assert.equal(r.signal, 'SIGKILL', r.stderr);
        const moved = (await readTree(sb.store, leftover)).hasOwnProperty('_SUCCESS') === false;
        const jobs = JSON.parse(await here(['jobs', '--json', sb.uri(target)])).jobs as {
          handle: string;
          halfMade?: string;
        }[];
        if (moved) {
          // Killed after its last step, the rename: the job is whole.
          assert.equal(jobs.length, 1);
          await here(['commit-job', '--job', jobs[0]!.handle]);
        } else {
          await intact('the leftover is untouched');
          // A half-made job is shown as one, and commit-job refuses it (it would publish nothing and write a _SUCCESS).
          const tree = await readTree(sb.store, root);
          for (const j of jobs) {
            assert.ok(j.halfMade, `killed at ${k}: jobs shows the job as half-made`);
            assert.match(await here(['status', '--job', j.handle]), /half-made adoption/);
            for (const dry of [['--dry-run'], []]) {
              const r = await inproc(['commit-job', '--job', j.handle, ...dry, '--json']);
              assertFailed(r, 6, {
                reason: 'half-made-adoption',
                advice: `abort it ('stagecommit abort --job ${j.handle}', which leaves the leftover where it is) and adopt ${sb.uri(leftover)} again`,
              });
            }
          }
          assert.deepEqual(
            await readTree(sb.store, root),
            tree,
            `killed at ${k}: commit-job changed nothing (its lease came and went)`,
          );
          for (const j of jobs) await here(['abort', '--job', j.handle]);
          await intact('aborting the half-made job left the leftover');
          await here(['commit-job', '--job', await here(['adopt', '--older-than', '0s', sb.uri(leftover)])]);
        }
        await assertFinished(sb, c, root, target);
      }
    });

    test('a --target that is the leftover, inside it or (local) on another filesystem: exit 2, nothing changed', async () => {
      const c = sparkOverwrite('replacing');
      const { root, leftover } = await table(sb, dir(), c);
      const before = await snapshot(sb.store, root);
      for (const [target, itself] of [
        [leftover, true],
        [posix.join(leftover, 'dt=2026-11-30'), false],
      ] as const) {
        for (const dry of [[], ['--dry-run']]) {
          const args = ['adopt', '--older-than', '0s', '--target', sb.uri(target), ...dry, '--json', sb.uri(leftover)];
          assertFailed(await realOrDry(dry)(args), 2, {
            reason: 'adopt-target-in-leftover',
            target: sb.uri(target),
            itself,
          });
        }
      }
      assert.deepEqual(await snapshot(sb.store, root), before, 'nothing changed');
      if (fx.name !== 'local' || (await stat('/dev/shm').catch(() => null))?.dev === (await stat(root)).dev) return;
      const other = await mkdtemp('/dev/shm/sc-adopt-');
      try {
        const r = await run(['adopt', '--older-than', '0s', '--target', other, '--json', sb.uri(leftover)]);
        assertFailed(r, 2, { reason: 'leftover-other-filesystem', leftover: sb.uri(leftover) });
        assert.deepEqual(await readdir(other), [], 'nothing left behind on the other filesystem');
        assert.deepEqual(await snapshot(sb.store, root), before, 'nothing changed');
      } finally {
        await rm(other, { recursive: true, force: true });
      }
    });

    test('small messages: adopt of / or a link, jobs of a file, an adopted job in conflict says adopt again', async () => {
      const c = sparkOverwrite('replacing');
      const { root, target, leftover } = await table(sb, dir(), c);
      const file = sb.uri(posix.join(target, 'dt=2026-11-27/part-00000-old.c000.snappy.parquet'));
      const jobsOfFile = await run(['jobs', file, '--json']);
      assertFailed(jobsOfFile, 2, { reason: 'jobs-root-invalid', problem: 'not-dir' });
      if (fx.name === 'local') {
        const slash = await inproc(['adopt', '/']);
        assert.equal(slash.code, 2, slash.stderr);
        assert.match(slash.stderr, /error: \/ is not an engine's leftover/);
        const link = posix.join(root, '.spark-staging-link');
        await symlink(leftover, link);
        assertFailed(await inproc(['adopt', '--older-than', '0s', '--json', link]), 2, { reason: 'leftover-symlink' });
        await rm(link);
      }
      // An overwrite of dt=2026-11-30 commits after the adoption: the adopted job conflicts.
      const handle = await here(['adopt', '--older-than', '0s', sb.uri(leftover)]);
      const other = await here(['stage', '--target', sb.uri(target), '--mode', 'overwrite', '--partition-by', 'dt']);
      const part = posix.join(await mkdtemp(posix.join(tmpdir(), 'sc-task-')), 'part-00000-other.parquet');
      await writeFile(part, 'other');
      await here(['stage', '--job', other, '--task', '0', '--partition', 'dt=2026-11-30', part]);
      await here(['commit-task', '--job', other, '--task', '0']);
      await here(['commit-job', '--job', other]);
      for (const dry of [['--dry-run'], []]) {
        const r = await realOrDry(dry)(['commit-job', '--job', handle, ...dry]);
        assert.equal(r.code, 6, r.stderr);
        // The words a user reads (a golden line).
        assert.match(
          r.stderr,
          new RegExp(
            `conflicts with job .*: nothing was changed; abort it \\('stagecommit abort --job ${handle}' gives the leftover back to ${sb.uri(leftover)}\\) and adopt the leftover again once the conflicting job is done`,
          ),
        );
        assert.doesNotMatch(r.stderr, /stage the job again/);
      }
    });

    // The other of two adopts moved it away.
    test("a leftover taken between adopt's look and its listing is said to be taken (exit 6)", async (t) => {
      if (!sb.store.caps.directoryRename) return t.skip('on S3 adopt moves nothing');
      const { leftover } = await table(sb, dir(), sparkOverwrite('replacing'));
      // The interleaving the race below hits now and then, made certain: the rename lands just before the listing.
      let taken = false;
      const takeIt = async (op: string, p: string) => {
        if (op === 'list' && p === leftover && !taken) {
          taken = true;
          await sb.store.rename(leftover, `${leftover}-taken`);
        }
      };
      const err = await adopt(testEnv(sb.store, { beforeRead: takeIt }), {
        leftoverPath: leftover,
        olderThanMs: 0,
      }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(taken, 'adopt listed the leftover');
      assert.ok(err instanceof BlockedError && err.detail.reason === 'leftover-taken', `not exit 6: ${String(err)}`);
      assert.equal(err.detail.leftover, sb.uri(leftover));
    });

    test('two adopts of one leftover at once: one job; the loser says the leftover was taken, leaves no job', async (t) => {
      if (!sb.store.caps.directoryRename)
        return t.skip(
          'on S3 adopt moves nothing: the second adopt makes a second job, which the table log refuses at its commit',
        );
      const c = sparkOverwrite('replacing');
      const { root, target, leftover } = await table(sb, dir(), c);
      const rs = await Promise.all([0, 1].map(() => run(['adopt', '--older-than', '0s', '--json', sb.uri(leftover)])));
      const won = rs.filter((r) => r.code === 0);
      assert.equal(won.length, 1, rs.map((r) => r.stderr).join('\n'));
      const lost = rs.find((r) => r.code !== 0)!;
      if (lost.code === 6) assertFailed(lost, 6, { reason: 'leftover-taken', leftover: sb.uri(leftover) });
      else assertFailed(lost, 2, { reason: 'leftover-missing', leftover: sb.uri(leftover) });
      const jobs = JSON.parse(await here(['jobs', '--json', sb.uri(target)])).jobs as {
        handle: string;
        halfMade?: string;
      }[];
      assert.deepEqual(
        jobs.map((j) => [j.handle, j.halfMade]),
        [[JSON.parse(won[0]!.stdout).handle, undefined]],
      );
      await here(['commit-job', '--job', jobs[0]!.handle]);
      await assertFinished(sb, c, root, target);
    });
  });
}
