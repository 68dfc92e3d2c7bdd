// Races between separate processes: attempts racing one claim, two jobs on one table,
// two drivers of one job.

import assert from 'node:assert/strict';
import { localHost } from '../src/steps/env.js';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import os from 'node:os';
import { BIN, cli, cliEnv, ok, spawnCli, until } from '../testing/cli.js';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  driverDied,
  planFileOf,
  jobScenario,
  libCommitJob,
  libCommitTask,
  libStage,
  libStageTask,
  readyJob,
  testEnv,
} from '../testing/lib.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { commitJob as libCommitJobStep } from '../src/steps/commit-job.js';
import { killed as killedAt } from '../testing/crash-points.js';
import { ConflictError, InjectedFault, StoreError } from '../src/errors.js';
import { commitJob, commitTask, prepare, stage, stageTask } from '../testing/jobs.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree, writeTree } from '../testing/tree.js';
import { JobLayout, taskAttemptName } from '../src/job/layout.js';
import { recover } from '../src/steps/recover.js';
import { commitTask as commitTaskStep } from '../src/steps/commit-task.js';
import { cleanOrphans } from '../src/steps/clean-orphans.js';
import { abort } from '../src/steps/abort.js';
import { JobGoneError } from '../src/job/open.js';
import { encodeLease, Lease, readCurrentLease } from '../src/job/lease.js';
import { tempPathFor } from '../src/store/temp-names.js';
import { TableLog, type LogEntry } from '../src/job/table-log.js';
import { createHash } from 'node:crypto';
import { crashAt } from '../src/store/instrumented.js';
import { once } from 'node:events';

// Races of real processes are smoke tests (the simulation searches the interleavings): 4 rounds
// locally, each of 8 processes claiming at once (28 pairs of claimants a round); on remote stores
// each racer pays ~0.4 s of start-up, so 2 rounds there (STAGECOMMIT_RACE_ROUNDS, or npm run
// stress, runs more on any store).
const roundsFor = (store: string) => Number(process.env.STAGECOMMIT_RACE_ROUNDS ?? (store === 'local' ? 4 : 2));
const ATTEMPTS = 8;

for (const fx of storeFixtures()) {
  describe(`concurrency on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'c');

    const ROUNDS = roundsFor(fx.name);
    test(`${ATTEMPTS} attempts race commit-task, ${ROUNDS} rounds: one winner, only its files`, async (t) => {
      const wins = new Array<number>(ATTEMPTS).fill(0);
      for (let round = 0; round < ROUNDS; round++) {
        const targetPath = posix.join(dir(), 't');
        const env = testEnv(sb.store);
        const stagingPath = await libStage(env, targetPath, {
          name: 'race',
          initial: null,
          job: { mode: 'create', algorithm: 'v1' },
          tasks: [],
        });
        for (let a = 0; a < ATTEMPTS; a++)
          await libStageTask(env, stagingPath, { task: '0', attempt: a, files: { [`from-${a}.csv`]: `attempt ${a}` } });
        const results = await Promise.all(
          Array.from({ length: ATTEMPTS }, (_, a) =>
            cli(['commit-task', '--job', sb.uri(stagingPath), '--task', '0', '--attempt', String(a)], { env: sb.env }),
          ),
        );
        const codes = results.map((r) => r.code);
        const winners = codes.flatMap((c, a) => (c === 0 ? [a] : []));
        assert.equal(
          winners.length,
          1,
          `round ${round}: exit codes ${codes.join(',')}: ${results.map((r) => r.stderr).join('')}`,
        );
        assert.equal(
          codes.filter((c) => c === 3).length,
          ATTEMPTS - 1,
          `round ${round}: losers exit 3, got ${codes.join(',')}: ${results.map((r) => r.stderr).join('')}`,
        );
        wins[winners[0]!]!++;
        await libCommitJob(env, stagingPath);
        assert.deepEqual(data(await readTree(sb.store, targetPath)), {
          [`from-${winners[0]}.csv`]: `attempt ${winners[0]}`,
        });
      }
      t.diagnostic(`wins per attempt over ${ROUNDS} rounds: ${wins.join(' ')}`);
    });

    const V2_ROUNDS = Math.min(ROUNDS, 4);
    test(`two v2 tasks publish one path with different bytes, ${V2_ROUNDS} rounds: one lands, one exits 6`, async () => {
      for (let round = 0; round < V2_ROUNDS; round++) {
        const target = posix.join(dir(), `v2-${round}`);
        const job = await stage(sb, { target, mode: 'append', algorithm: 'v2', partitionBy: 'dt' });
        for (const task of ['0', '1'])
          await stageTask(sb, job, { task, partition: ['dt=1'], files: { 'part-0': `from ${task}` } });
        const offset = Math.random() * 100;
        const results = await Promise.all(
          ['0', '1'].map(async (task, i) => (await sleep(i === 0 ? offset : 0), commitTask(sb, job, task))),
        );
        const codes = results.map((r) => r.code);
        const winner = codes.indexOf(0);
        const why = `round ${round} (task 0 started ${offset.toFixed(0)} ms late): exit codes ${codes.join(',')}: ${results.map((r) => r.stderr).join('')}`;
        if (fx.name === 's3' && codes.every((c) => c === 0)) {
          // S3 copies without refusing a taken key: publications at the same moment both land, the last one's bytes
          // stay (README).
          assert.match((await readTree(sb.store, target))['dt=1/part-0'] ?? '', /^from [01]$/, why);
          // commit-job finds the two claims of one path: the job is not marked done.
          const done = await commitJob(sb, job);
          assert.equal(done.code, 6, `${why}; commit-job: ${done.stderr}`);
          assert.match(done.stderr, /tasks 0 and 1 both wrote 'dt=1\/part-0'; v2 published both/, why);
          continue;
        }
        assert.ok(winner >= 0 && codes[1 - winner] === 6, why);
        // Refused by its plan, or by a rename that found the winner's file (both before it published anything).
        assert.match(
          results[1 - winner]!.stderr,
          /(append would overwrite 1 existing file\(s\) not shown to hold the same bytes \(other bytes, or a staged S3 upload of more than one part, which cannot be compared\), first 'dt=1\/part-0'|: another task or writer published there while this task did; nothing of this task was published): rename the files and commit the task again/,
          why,
        );
        assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/part-0': `from ${winner}` }, why);
        // The loser is free: another attempt of it, with its file renamed, commits.
        const loser = String(1 - winner);
        await stageTask(sb, job, {
          task: loser,
          attempt: 1,
          partition: ['dt=1'],
          files: { [`renamed-${loser}`]: `from ${loser}` },
        });
        const again = await commitTask(sb, job, loser, 1);
        assert.equal(again.code, 0, `${why}; the loser's new attempt: ${again.stderr}`);
        // An attempt of the winner's task whose file clashes with the winner's own output is denied (exit 3), not
        // refused as a clash.
        await stageTask(sb, job, {
          task: String(winner),
          attempt: 1,
          partition: ['dt=1'],
          files: { 'part-0': 'other bytes' },
        });
        const denied = await commitTask(sb, job, String(winner), 1);
        assert.equal(denied.code, 3, `${why}; a second attempt of the winner: ${denied.stderr}`);
        assert.equal((await commitJob(sb, job)).code, 0);
        assert.deepEqual(
          data(await readTree(sb.store, target)),
          { 'dt=1/part-0': `from ${winner}`, [`dt=1/renamed-${loser}`]: `from ${loser}` },
          why,
        );
      }
    });

    /**
     * A v2 job whose task 0 was killed once claimed, before it published, and whose task 1 then published the same
     * path.
     */
    const killedThenClashed = async (name: string): Promise<{ target: string; job: string }> => {
      const target = posix.join(dir(), name);
      const job = await stage(sb, { target, mode: 'append', algorithm: 'v2', partitionBy: 'dt' });
      for (const task of ['0', '1'])
        await stageTask(sb, job, { task, partition: ['dt=1'], files: { 'part-0': `from ${task}` } });
      // Mutations: the decision, the claim, then the publication: killed before the publication.
      const killed = await cli(['commit-task', '--job', job, '--task', '0'], {
        env: { ...sb.env, STAGECOMMIT_TEST_KILL_AT: '3' },
      });
      assert.equal(killed.signal, 'SIGKILL', killed.stderr);
      assert.equal((await commitTask(sb, job, '1')).code, 0);
      return { target, job };
    };

    /**
     * Only the run that made a claim may let it go: a re-run, or recover, cannot know that no other
     * re-run of the attempt is publishing beside it (both see the same dead claimer). The claim
     * stays (exit 6), its message says so, and abort is the way out.
     */
    const claimKept = async (
      r: { code: number | null; stderr: string },
      job: string,
      target: string,
    ): Promise<void> => {
      assert.equal(r.code, 6, r.stderr);
      assert.match(
        r.stderr,
        /the task stays claimed, as part of it may be published: if another task of this job wrote that path, the two clash \(abort the job\)/,
      );
      assert.equal((await cli(['abort', '--job', job], { env: sb.env })).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/part-0': 'from 1' });
    };

    test('v2 commit-task killed once claimed, then a clash: the re-run exits 6, keeps the claim; abort ends it', async () => {
      const { target, job } = await killedThenClashed('v2-killed');
      await claimKept(await commitTask(sb, job, '0'), job, target);
    });

    test('v2 commit-task killed once claimed, then a clash: recover exits 6, keeps the claim; abort ends it', async () => {
      const { target, job } = await killedThenClashed('v2-recovered');
      await claimKept(await cli(['recover', '--job', job], { env: sb.env }), job, target);
    });

    // The other task's file is moved aside, then recover runs: both tasks count as committed.
    test('two v2 tasks committed with one path: commit-job exits 6 naming both, nothing done; abort ends it', async () => {
      const { target, job } = await killedThenClashed('v2-both');
      // The advice for a clash with an outside file, followed where the file was task 1's.
      await sb.store.rename(posix.join(target, 'dt=1', 'part-0'), posix.join(target, 'dt=1', 'aside'));
      const rec = await cli(['recover', '--job', job], { env: sb.env });
      assert.equal(rec.code, 0, rec.stderr);
      const r = await commitJob(sb, job);
      assert.equal(r.code, 6, r.stderr);
      assert.match(
        r.stderr,
        /tasks 0 and 1 both wrote 'dt=1\/part-0'; v2 published both at commit-task, .*the job is not committed; abort it/,
      );
      assert.equal((await readTree(sb.store, target))._SUCCESS, undefined, 'no _SUCCESS');
      assert.equal((await cli(['abort', '--job', job], { env: sb.env })).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/part-0': 'from 0', 'dt=1/aside': 'from 1' });
    });

    test('a second run of a v2 attempt while the first publishes it on this host: exit 4, the first left alone', async () => {
      const target = posix.join(dir(), 'v2-twice');
      const job = await stage(sb, { target, mode: 'append', algorithm: 'v2' });
      await stageTask(sb, job, { task: '0', files: { a: 'a', b: 'b' } });
      const first = spawnCli(['commit-task', '--job', job, '--task', '0'], {
        env: { ...sb.env, STAGECOMMIT_TEST_DELAY_MS: '400' },
      });
      const staging = (await sb.store.list(posix.join(posix.dirname(target), '.stagecommit', 'v2-twice')))[0]!.path;
      const claim = new JobLayout(staging).claimFile(0, '0');
      await until('the first run claims the task', async () => (await sb.store.stat(claim)) !== null);
      const second = await commitTask(sb, job, '0');
      assert.equal(second.code, 4, second.stderr);
      assert.match(second.stderr, /is being committed by pid \d+ on .*: wait for it/);
      assert.equal((await first.result).code, 0);
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { a: 'a', b: 'b' });
    });

    test('recover while a v2 commit-task on this host publishes: exit 4, nothing changed; a later run keeps it', async () => {
      const target = posix.join(dir(), 'v2-recover-live');
      await writeTree(sb.store, target, { old: 'o' });
      const job = await stage(sb, { target, mode: 'append', algorithm: 'v2' });
      await stageTask(sb, job, { task: '0', files: { a: 'a', b: 'b', c: 'c' } });
      const first = spawnCli(['commit-task', '--job', job, '--task', '0'], {
        env: { ...sb.env, STAGECOMMIT_TEST_DELAY_MS: '400' },
      });
      const staging = (await sb.store.list(posix.join(posix.dirname(target), '.stagecommit', 'v2-recover-live')))[0]!
        .path;
      const claim = new JobLayout(staging).claimFile(0, '0');
      await until('the commit-task claims the task', async () => (await sb.store.stat(claim)) !== null);
      const rec = await cli(['recover', '--job', job], { env: sb.env });
      assert.equal(rec.code, 4, rec.stderr);
      assert.match(
        rec.stderr,
        /is being committed by pid \d+ on .*: nothing was changed; run recover again once it has ended/,
      );
      assert.equal((await first.result).code, 0, 'the commit-task goes on and exits 0');
      const again = await cli(['recover', '--job', job, '--json'], { env: sb.env });
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual(JSON.parse(again.stdout).committedTasks, ['0']);
      assert.equal((await commitJob(sb, job)).code, 0);
      assert.deepEqual(data(await readTree(sb.store, target)), { old: 'o', a: 'a', b: 'b', c: 'c' });
    });

    test('two jobs overwriting different static partitions of one table at once: both land, nothing else moves', async () => {
      const target = posix.join(dir(), 'sales');
      await writeTree(sb.store, target, { 'dt=1/old': 'o1', 'dt=2/old': 'o2', 'dt=3/old': 'o3' });
      // Staged here; every commit of both jobs, task and job, is a process of its own.
      const runOne = async (dt: string, tasks: number) => {
        const job = await stage(sb, { target, mode: 'overwrite', partition: [`dt=${dt}`] });
        await Promise.all(
          Array.from({ length: tasks }, (_, i) =>
            stageTask(sb, job, { task: String(i), files: { [`part-${i}`]: `${dt}-${i}` } }),
          ),
        );
        await Promise.all(Array.from({ length: tasks }, (_, i) => commitTask(sb, job, String(i))));
        return commitJob(sb, job);
      };
      const [a, b] = await Promise.all([runOne('1', 3), runOne('2', 3)]);
      assert.equal(a.code, 0, a.stderr);
      assert.equal(b.code, 0, b.stderr);
      assert.deepEqual(data(await readTree(sb.store, target)), {
        'dt=1/part-0': '1-0',
        'dt=1/part-1': '1-1',
        'dt=1/part-2': '1-2',
        'dt=2/part-0': '2-0',
        'dt=2/part-1': '2-1',
        'dt=2/part-2': '2-2',
        'dt=3/old': 'o3',
      });
    });

    test('two overwrites of one partition staged together: the second to commit fails with exit 6 naming both', async () => {
      const target = posix.join(dir(), 'sales');
      await writeTree(sb.store, target, { 'dt=1/old': 'o1' });
      const first = await prepare(sb, { target, mode: 'overwrite', partitionBy: 'dt', jobId: 'job-first' }, [
        { task: '0', partition: ['dt=1'], files: { a: 'first' } },
      ]);
      const second = await prepare(sb, { target, mode: 'overwrite', partitionBy: 'dt', jobId: 'job-second' }, [
        { task: '0', partition: ['dt=1'], files: { b: 'second' } },
      ]);
      assert.equal((await commitJob(sb, first)).code, 0);
      const r = await commitJob(sb, second);
      assert.equal(r.code, 6);
      assert.match(r.stderr, /job job-second conflicts with job job-first, which replaced 'dt=1'/);
      // The loser's staging dir (and on S3 its pending uploads in the table's prefix) stay until it is
      // aborted: the advice says so.
      assert.ok(
        r.stderr
          .trimEnd()
          .endsWith(
            `nothing was changed; abort it ('stagecommit abort --job ${second}' removes its staging dir and uploads) and stage the job again on the new data`,
          ),
        r.stderr,
      );
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a': 'first' });
      // A job staged after that commit does not conflict.
      await prepare(sb, { target, mode: 'overwrite', partitionBy: 'dt', jobId: 'job-third' }, [
        { task: '0', partition: ['dt=1'], files: { c: 'third' } },
      ])
        .then((j) => commitJob(sb, j))
        .then((c) => assert.equal(c.code, 0, c.stderr));
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/c': 'third' });
    });

    // Keeps protocol.md §5.14: an entry is a job's only when its staging dir is the job's too. The two
    // jobs here are staged together in two staging dirs; taking the first one's entry replaced its data.
    test('one --job-id for two jobs overwriting one partition: the second to commit exits 6', async () => {
      const root = dir();
      const target = posix.join(root, 'sales');
      await writeTree(sb.store, target, { 'dt=1/old': 'o1' });
      const spec = (d: string) => ({
        target,
        mode: 'overwrite' as const,
        partitionBy: 'dt',
        jobId: 'daily',
        stagingDir: posix.join(root, d),
      });
      const first = await prepare(sb, spec('s1'), [{ task: '0', partition: ['dt=1'], files: { a: 'first' } }]);
      const second = await prepare(sb, spec('s2'), [{ task: '0', partition: ['dt=1'], files: { b: 'second' } }]);
      assert.equal((await commitJob(sb, first)).code, 0);
      const r = await commitJob(sb, second);
      assert.equal(r.code, 6, r.stderr);
      assert.match(
        r.stderr,
        /job daily conflicts with job daily \(another job given the same --job-id, staged at \S+\/s1\), which replaced 'dt=1'/,
      );
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a': 'first' });
    });

    test('two commit-job on one job at once: one proceeds, the other sees its lease renewed and exits 4', async () => {
      const target = posix.join(dir(), 't');
      const tasks = Array.from({ length: 4 }, (_, i) => ({
        task: String(i),
        partition: [`dt=${i}`],
        files: { f: String(i) },
      }));
      const job = await prepare(sb, { target, partitionBy: 'dt' }, tasks);
      // A 6 s lease (renewed every 2 s, each renewal delayed 400 ms like every change), from the user's config layer:
      // the second sees a renewal within two seconds.
      const home = await mkdtemp(path.join(os.tmpdir(), 'sc-ttl-'));
      await mkdir(path.join(home, 'stagecommit'));
      await writeFile(path.join(home, 'stagecommit', 'config.yaml'), 'leaseTtlSeconds: 6\n');
      const env = { ...sb.env, XDG_CONFIG_HOME: home };
      const slow = spawnCli(['commit-job', '--job', job], { env: { ...env, STAGECOMMIT_TEST_DELAY_MS: '400' } });
      // Barrier: the first holds the lease (its file has its bytes).
      const staging = sb.pathOf(job);
      const leaseHeld = async () => {
        for (const e of await sb.store.list(staging))
          if (e.name.startsWith('_lease.') && (await sb.store.readFile(e.path))?.length) return true;
        return false;
      };
      await until('the first commit-job holds the lease', leaseHeld);
      const second = await cli(['commit-job', '--job', job], { env });
      const first = await slow.result;
      await rm(home, { recursive: true, force: true });
      assert.equal(first.code, 0, first.stderr);
      assert.equal(second.code, 4, second.stderr);
      assert.match(second.stderr, /is locked: commit-job by .* on .* \(pid \d+/);
      assert.equal(Object.keys(data(await readTree(sb.store, target))).length, 4);
    });

    test(
      'a killed commit-job not yet reaped (a zombie) does not lock its job: recover takes over at once',
      { skip: process.platform !== 'linux' && 'zombies are read from /proc' },
      async () => {
        const target = posix.join(dir(), 'z');
        const tasks = Array.from({ length: 4 }, (_, i) => ({
          task: String(i),
          partition: [`dt=${i}`],
          files: { f: String(i) },
        }));
        const job = await prepare(sb, { target, partitionBy: 'dt' }, tasks);
        // Its parent is a `sleep` that never waits for it, as a slow reaper keeps a killed step's pid for
        // minutes: a dead step's lease is taken over at once.
        const parent = spawn(
          'sh',
          ['-c', `"$0" "$@" & echo $!; exec sleep 60`, process.execPath, BIN, 'commit-job', '--job', job],
          {
            env: cliEnv({ env: { ...sb.env, STAGECOMMIT_TEST_DELAY_MS: '150' } }),
            stdio: ['ignore', 'pipe', 'ignore'],
          },
        );
        try {
          const [line] = (await once(parent.stdout!, 'data')) as [Buffer];
          const pid = Number(line.toString().trim());
          const staging = sb.pathOf(job);
          await until('the commit-job holds the lease', async () => {
            for (const e of await sb.store.list(staging))
              if (e.name.startsWith('_lease.') && (await sb.store.readFile(e.path))?.length) return true;
            return false;
          });
          process.kill(pid, 'SIGKILL');
          await until('it is a zombie', async () =>
            /^Z/.test((await readFile(`/proc/${pid}/stat`, 'latin1')).replace(/^.*\) /s, '')),
          );
          const r = await cli(['recover', '--job', job], { env: sb.env });
          assert.equal(r.code, 0, r.stderr);
          // Killed before or after its commit point: a commit-job now finishes what recover left.
          const again = await commitJob(sb, job);
          assert.equal(again.code, 0, again.stderr);
          assert.deepEqual(data(await readTree(sb.store, target)), {
            'dt=0/f': '0',
            'dt=1/f': '1',
            'dt=2/f': '2',
            'dt=3/f': '3',
          });
        } finally {
          parent.kill('SIGKILL');
        }
      },
    );

    /**
     * A job of table `name` with task 0 committed (dt=0/a) and task 1 staged (dt=1/b), for a late commit-task of task
     * 1.
     */
    const lateTaskJob = async (name: string) => {
      const target = posix.join(dir(), name);
      const job = await prepare(sb, { target, partitionBy: 'dt' }, [
        { task: '0', partition: ['dt=0'], files: { a: 'a' } },
      ]);
      await stageTask(sb, job, { task: '1', partition: ['dt=1'], files: { b: 'b' } });
      const stagingPath = sb.pathOf(job);
      return { target, job, stagingPath, layout: new JobLayout(stagingPath) };
    };

    /**
     * An env for commit-task of task 1 that signals once its claim exists: its first read of the job after creating it.
     */
    const signalsClaim = (layout: JobLayout) => {
      let claimMade!: () => void;
      const made = new Promise<void>((r) => (claimMade = r));
      let creating = false;
      const taskEnv = testEnv(sb.store, {
        beforeMutation: (_n, op, p) =>
          void (op === 'createExclusive' && p === layout.claimFile(0, '1') && (creating = true)),
        beforeRead: (_op, p) => void (creating && p === layout.jobFile && claimMade()),
      });
      return { taskEnv, made, claimMade };
    };

    /**
     * An env whose first lease create runs `race` whole before it (another step at the lease); `raced()` says whether
     * it ran.
     */
    const racingForLease = (race: (leasePath: string) => Promise<unknown>) => {
      let ran = false;
      const env = testEnv(sb.store, async (_n, op, p) => {
        if (ran || op !== 'createExclusive' || !posix.basename(p).startsWith('_lease.')) return;
        ran = true;
        await race(p);
      });
      return { env, raced: () => ran };
    };

    test('a commit-task whose claim lands after commit-job read the claims exits 6 and is not published', async () => {
      const { target, stagingPath, layout } = await lateTaskJob('t');
      const { taskEnv, made, claimMade } = signalsClaim(layout);
      let late: Promise<unknown> | undefined;
      // commit-job's first mutation outside its staging dir is its table-log entry: the claims are read.
      await libCommitJob(
        testEnv(sb.store, async (_n, op, p) => {
          if (late || op !== 'createExclusive' || p.startsWith(stagingPath)) return;
          late = libCommitTask(taskEnv, stagingPath, { task: '1', files: {} }).then(
            () => null,
            (e: unknown) => e,
          );
          void late.then(() => claimMade());
          await made;
        }),
        stagingPath,
      );
      const error = await late;
      assert.ok(error instanceof ConflictError, `commit-task exits 4, not: ${String(error)}`);
      assert.match(
        (error as Error).message,
        /read the committed tasks before this one, so task 1's output is not in it/,
      );
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a' });
      assert.equal(await sb.store.stat(stagingPath), null, 'no claim left behind');
    });

    // The commit-job is killed at its commit point: the late claim never joins its plan.
    test('a claim landing after commit-job read the claims: exit 6; recover publishes the plan without it', async () => {
      const { target, stagingPath, layout } = await lateTaskJob('k');
      const { taskEnv, made, claimMade } = signalsClaim(layout);
      let late: Promise<unknown> | undefined;
      // The plan is written, then the driver dies: `_job.yaml` still says 'staged', the lease is gone.
      const dies = killedAt.atCommitPoint();
      const killed = libCommitJob(
        testEnv(sb.store, async (n, op, p) => {
          if (!late && op === 'createExclusive' && !p.startsWith(stagingPath)) {
            late = libCommitTask(taskEnv, stagingPath, { task: '1', files: {} }).then(
              () => null,
              (e: unknown) => e,
            );
            void late.then(() => claimMade());
            await made;
          }
          await dies(n, op, p);
        }),
        stagingPath,
      );
      await assert.rejects(killed, InjectedFault);
      await driverDied(sb.store, stagingPath);
      const error = await late;
      assert.ok(error instanceof ConflictError, `commit-task exits 4, not: ${String(error)}`);
      assert.match((error as Error).message, /was committing while task 1 committed: .*task 1's output is not in it/);
      await recover(testEnv(sb.store), { stagingPath });
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a' });
      assert.equal(await sb.store.stat(stagingPath), null);
    });

    // Keeps protocol.md §4.1: a plan no table-log entry names is garbage, never a state: a late
    // commit-task exits 0, recover removes the plan without a word, and the job commits with the late task.
    test('a commit-job killed with its plan written but no table-log entry: the plan is garbage', async () => {
      const { target, stagingPath, layout } = await lateTaskJob('p-file');
      const killed = libCommitJob(testEnv(sb.store, killedAt.beforeCommitPoint()), stagingPath);
      await assert.rejects(killed, InjectedFault);
      assert.notEqual(await planFileOf(sb.store, layout), null, 'the plan was written');
      await driverDied(sb.store, stagingPath);
      await libCommitTask(testEnv(sb.store), stagingPath, { task: '1', files: {} });
      const warnings: string[] = [];
      const r = await recover(
        testEnv(sb.store, undefined, {
          emit: (e: { type: string; message?: string }) => void (e.type === 'warn' && warnings.push(e.message!)),
        }),
        { stagingPath },
      );
      assert.equal(r.state, 'staged');
      assert.deepEqual(warnings, []);
      assert.equal(await planFileOf(sb.store, layout), null, 'the plan is gone');
      await libCommitJob(testEnv(sb.store), stagingPath);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a', 'dt=1/b': 'b' });
      assert.equal(await sb.store.stat(stagingPath), null);
    });
    test('an abort removing the staging dir as commit-job takes the lease: exit 2, not a raw not-found', async () => {
      const { target, stagingPath, layout } = await lateTaskJob('g');
      const racing = racingForLease(() => abort(testEnv(sb.store), { stagingPath }));
      const error = await libCommitJob(racing.env, stagingPath).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(racing.raced(), 'the abort ran');
      assert.ok(error instanceof JobGoneError, `exit 2 (job gone), not: ${String(error)}`);
      assert.equal(await sb.store.stat(layout.root), null, 'nothing left of the staging dir');
      assert.deepEqual(data(await readTree(sb.store, target)), {}, 'the aborted job published nothing');
    });

    test('recover moving the job on as commit-job takes the lease: commit-job commits what the job then holds', async () => {
      const { target, stagingPath } = await lateTaskJob('r');
      const racing = racingForLease(() => recover(testEnv(sb.store), { stagingPath }));
      const r = await libCommitJobStep(racing.env, { stagingPath });
      assert.ok(racing.raced(), 'the recover ran');
      assert.equal(r.outcome, 'committed');
      assert.equal(r.files, 1);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a' });
      assert.equal(await sb.store.stat(stagingPath), null, 'the staging dir is gone');
    });

    test("an abort removing commit-job's lease file as it is taken: taken afresh, exit 4 naming the abort", async () => {
      const { target, stagingPath, layout } = await lateTaskJob('h');
      let holder: Lease | undefined;
      const racing = racingForLease(async (p) => {
        // The abort took the lease and began removing the tree: our lease's temporary file went first.
        holder = await Lease.acquire(
          sb.store,
          layout,
          testEnv(sb.store, undefined, { user: 'someone', host: 'other-host', pid: 1, leaseTtlMs: 1500 }),
          'abort',
        );
        throw new StoreError(
          'not-found',
          'createExclusive',
          [sb.store.toUri(p)],
          'ENOENT: no such file or directory, link',
        );
      });
      const error = await libCommitJob(racing.env, stagingPath).then(
        () => null,
        (e: unknown) => e,
      );
      await holder?.release();
      assert.ok(racing.raced(), 'the lease was raced');
      assert.ok(error instanceof ConflictError, `exit 4, not: ${String(error)}`);
      assert.match((error as Error).message, /is locked: abort by someone on other-host/);
      assert.deepEqual(data(await readTree(sb.store, target)), {}, 'nothing published');
      assert.ok(await sb.store.stat(layout.jobFile), 'the job is left to its abort');
    });

    test('an abort whose job another abort finishes as it takes the lease: nothing to abort (exit 0)', async () => {
      const { target, stagingPath, layout } = await lateTaskJob('k');
      const racing = racingForLease(() => abort(testEnv(sb.store), { stagingPath }));
      const r = await abort(racing.env, { stagingPath });
      assert.ok(racing.raced(), 'the other abort ran');
      assert.equal(r.outcome, 'nothing');
      assert.equal(await sb.store.stat(layout.root), null);
      assert.deepEqual(data(await readTree(sb.store, target)), {});
    });

    test('a commit-task that decides after commit-job removed the staging dir exits 6 and leaves nothing there', async () => {
      const { target, stagingPath, layout } = await lateTaskJob('t');
      let committed: Promise<unknown> | undefined;
      // The whole commit-job runs between commit-task's look at its output and its decision.
      const taskEnv = testEnv(sb.store, async (_n, op, p) => {
        if (committed || op !== 'createExclusive' || !p.startsWith(layout.decisionsDir(0))) return;
        committed = libCommitJob(testEnv(sb.store), stagingPath);
        await committed;
      });
      const error = await libCommitTask(taskEnv, stagingPath, { task: '1', files: {} }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(committed, 'commit-job ran');
      assert.ok(error instanceof ConflictError, `commit-task exits 4, not: ${String(error)}`);
      assert.match((error as Error).message, /finished while task 1 committed/);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a' });
      assert.equal(await sb.store.stat(stagingPath), null, 'no decision, claim or directory left behind');
    });

    // Two runs of one commit-task attempt, the second started at a point of the first: once the
    // first has its claim (as it promotes), or before its first listing (the claim still absent).
    // The second runs whole, or stops for a second before it marks its claim committed, its files moved.
    const twoRuns = [
      {
        where: 'promotes',
        late: false,
        name: 'second whole as first promotes: both exit 0, published once',
      },
      {
        where: 'lists',
        late: false,
        name: 'second whole before first lists: first finds it committed, exit 0',
      },
      {
        where: 'promotes',
        late: true,
        name: 'second moves files as first promotes, marks later: both exit 0',
      },
      {
        where: 'lists',
        late: true,
        name: 'second moves files before first lists, marks later: first waits',
      },
    ] as const;
    for (const { where, late, name } of twoRuns) {
      test(`one commit-task attempt run twice, ${name}`, async () => {
        const { target, stagingPath, layout, job } = await lateTaskJob('t');
        let second: Promise<unknown> | undefined;
        let moved!: () => void;
        const hasMoved = new Promise<void>((r) => (moved = r));
        const secondEnv = testEnv(sb.store, async (_n, op, p) => {
          if (!late || op !== 'writeFile' || p !== layout.claimFile(0, '1')) return;
          moved();
          await sleep(1000);
        });
        const startSecond = async () => {
          second = libCommitTask(secondEnv, stagingPath, { task: '1', files: {} }).then(
            () => null,
            (e: unknown) => e,
          );
          await (late ? hasMoved : second);
        };
        let claimed = false;
        const firstEnv =
          where === 'promotes'
            ? testEnv(sb.store, async (_n, op, p) => {
                if (op === 'createExclusive' && p === layout.claimFile(0, '1')) return void (claimed = true);
                if (claimed && !second) await startSecond();
              })
            : testEnv(sb.store, {
                beforeRead: async (op, p) =>
                  void (!second && op === 'list' && p.startsWith(layout.attemptsDir(0)) && (await startSecond())),
              });
        const first = await libCommitTask(firstEnv, stagingPath, { task: '1', files: {} }).then(
          () => null,
          (e: unknown) => e,
        );
        assert.ok(second, 'the second run ran');
        assert.equal(await second, null, 'the second run exits 0');
        assert.equal(first, null, `the first run exits 0 too, not: ${String(first)}`);
        assert.equal((await commitJob(sb, job)).code, 0);
        assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a', 'dt=1/b': 'b' });
      });
    }

    for (const point of ['decides', 'claims'] as const) {
      // The job is aborted and a new job of the same id staged in its place: exit 6 names the new job.
      test(`a job replaced by one of the same id as commit-task ${point}: exit 6, nothing of it in the new job`, async () => {
        const target = posix.join(dir(), `reused-${point}`);
        const handle = await stage(sb, { target, partitionBy: 'dt', jobId: 'reused' });
        await stageTask(sb, handle, { task: '1', partition: ['dt=1'], files: { b: 'b' } });
        const layout = new JobLayout(sb.pathOf(handle));
        const at = point === 'decides' ? layout.decisionsDir(0) : layout.claimsDir(0);
        let replaced: Promise<unknown> | undefined;
        const taskEnv = testEnv(sb.store, async (_n, op, p) => {
          if (replaced || op !== 'createExclusive' || !p.startsWith(at)) return;
          replaced = (async () => {
            await abort(testEnv(sb.store), { stagingPath: layout.root });
            await stage(sb, { target, partitionBy: 'dt', jobId: 'reused' });
          })();
          await replaced;
        });
        const error = await libCommitTask(taskEnv, layout.root, { task: '1', files: {} }).then(
          () => null,
          (e: unknown) => e,
        );
        assert.ok(replaced, 'the job was replaced');
        assert.ok(error instanceof ConflictError, `commit-task exits 4, not: ${String(error)}`);
        assert.match(
          (error as Error).message,
          /^job reused finished while task 1 committed, and a new job of that id is now staged in /,
        );
        assert.equal(await sb.store.stat(layout.claimFile(0, '1')), null, 'no claim in the new job');
        assert.equal(
          await sb.store.stat(layout.decisionFile(0, taskAttemptName('reused', '1', 0))),
          null,
          'no decision in the new job',
        );
        // The new job's attempt of the same name is its own: staged, committed and published.
        await stageTask(sb, handle, { task: '1', partition: ['dt=1'], files: { c: 'c' } });
        await libCommitTask(testEnv(sb.store), layout.root, { task: '1', files: {} });
        await libCommitJob(testEnv(sb.store), layout.root);
        assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/c': 'c' });
      });
    }

    for (const algorithm of ['v1', 'v2'] as const) {
      // The new job's steps never take them for their own.
      test(`an earlier job's claim and decision left in a new job of the same id (${algorithm}): refused, exit 6`, async () => {
        const target = posix.join(dir(), `zombie-${algorithm}`);
        const handle = await stage(sb, { target, partitionBy: 'dt', jobId: 'zombie', algorithm, mode: 'append' });
        const layout = new JobLayout(sb.pathOf(handle));
        await stageTask(sb, handle, { task: '0', partition: ['dt=1'], files: { 'old.txt': 'old' } });
        // The earlier job's records as its run wrote them (a run that went on after its job ended
        // and died before it could take them back leaves exactly these bytes).
        const attempt0 = taskAttemptName('zombie', '0', 0);
        await libCommitTask(testEnv(sb.store), layout.root, { task: '0', files: {} });
        const [claim, decision] = await Promise.all([
          sb.store.readFile(layout.claimFile(0, '0')),
          sb.store.readFile(layout.decisionFile(0, attempt0)),
        ]);
        await abort(testEnv(sb.store), { stagingPath: layout.root });
        // v2 published at commit-task, and an abort leaves what was published.
        const earlier = algorithm === 'v2' ? { 'dt=1/old.txt': 'old' } : {};
        await stage(sb, { target, partitionBy: 'dt', jobId: 'zombie', algorithm, mode: 'append' });
        await stageTask(sb, handle, { task: '0', partition: ['dt=1'], files: { 'new.txt': 'new' } });
        await sb.store.writeFile(layout.claimFile(0, '0'), claim!);
        const ct = await commitTask(sb, handle, '0');
        assert.equal(ct.code, 6, `commit-task: ${ct.stderr}`);
        assert.match(
          ct.stderr,
          /the claim of task 0, made by attempt_zombie_0_0 \(.*\) was made for an earlier job zombie, staged .*: nothing was changed; abort this job and stage it again/,
        );
        const cj = await commitJob(sb, handle);
        assert.equal(cj.code, 6, `commit-job: ${cj.stderr}`);
        assert.match(cj.stderr, /was made for an earlier job zombie/);
        assert.deepEqual(
          await readTree(sb.store, target),
          earlier,
          'nothing published, no _SUCCESS naming a file that is not there',
        );
        // The decision alone: the attempt is refused with advice; another attempt commits.
        await sb.store.delete(layout.claimFile(0, '0'), false);
        await sb.store.writeFile(layout.decisionFile(0, attempt0), decision!);
        const again = await commitTask(sb, handle, '0');
        assert.equal(again.code, 6, `commit-task: ${again.stderr}`);
        assert.match(
          again.stderr,
          /the decision \(commit\) of attempt_zombie_0_0 \(.*\) was made for an earlier job zombie, .*stage the task as a new --attempt/,
        );
        await stageTask(sb, handle, { task: '0', attempt: 1, partition: ['dt=1'], files: { 'new.txt': 'new' } });
        assert.equal((await commitTask(sb, handle, '0', 1)).code, 0);
        assert.equal((await commitJob(sb, handle)).code, 0);
        assert.deepEqual(data(await readTree(sb.store, target)), { ...earlier, 'dt=1/new.txt': 'new' });
      });
    }

    test('an abort between a claim and its commit mark: commit-task exits 6, no staging dir left', async () => {
      const { target, stagingPath, layout } = await lateTaskJob('t');
      let aborted: Promise<unknown> | undefined;
      let claimed = false;
      const taskEnv = testEnv(sb.store, async (_n, op, p) => {
        if (op === 'createExclusive' && p === layout.claimFile(0, '1')) return void (claimed = true);
        if (!claimed || aborted) return;
        aborted = abort(testEnv(sb.store), { stagingPath });
        await aborted;
      });
      const error = await libCommitTask(taskEnv, stagingPath, { task: '1', files: {} }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(aborted, 'abort ran');
      assert.ok(error instanceof ConflictError, `commit-task exits 4, not: ${String(error)}`);
      assert.match((error as Error).message, /aborted/);
      assert.equal(await sb.store.stat(target), null);
      assert.equal(await sb.store.stat(stagingPath), null, 'no claim, decision or directory left behind');
      assert.equal(
        await sb.store.stat(posix.dirname(stagingPath)),
        null,
        "nor the default layout's parents it made again",
      );
    });

    /** A job of one staged task attempt (task 0, file dt=1/f): what the abort races below start from. */
    async function oneFileJob(name: string, opts: { algorithm?: 'v2'; mode?: 'append'; jobId?: string } = {}) {
      const target = posix.join(dir(), name);
      const handle = await stage(sb, { target, partitionBy: 'dt', ...opts });
      const stagingPath = sb.pathOf(handle);
      await stageTask(sb, handle, { task: '0', partition: ['dt=1'], files: { f: 'f' } });
      return { target, handle, stagingPath, layout: new JobLayout(stagingPath) };
    }

    test('a job abort meeting a file a racing step just wrote (ENOTEMPTY): looks again, removes it, exit 0', async () => {
      const { target, stagingPath, layout } = await oneFileJob('abort-notempty');
      const late = posix.join(layout.attemptsDir(0), 'late-writer', 'x');
      // The delete of `_temporary` finds a file written after it listed the dir, as a local rmdir
      // then says; the file is real.
      let failed = 0;
      const taskEnv = testEnv(sb.store, async (_n, op, p) => {
        if (failed || op !== 'delete' || p !== `${stagingPath}/_temporary`) return;
        failed++;
        await sb.store.writeFile(late, 'x');
        throw new StoreError('exists', op, [p], `ENOTEMPTY: directory not empty, rmdir '${p}'`);
      });
      await abort(taskEnv, { stagingPath });
      // Stores that remove a tree at once (HDFS) or key by key (S3) never delete the dir itself.
      assert.equal(failed, sb.store.caps.atomicTreeDelete || sb.store.deleteMany ? 0 : 1);
      assert.equal(await sb.store.stat(stagingPath), null, 'the staging dir is gone, the late file too');
      assert.equal(await sb.store.stat(target), null);
    });

    test('an abort --task whose job is aborted as it decides: nothing of it left where the staging dir was', async () => {
      const { target, stagingPath, layout } = await oneFileJob('task-abort-race');
      let aborted: Promise<unknown> | undefined;
      const taskEnv = testEnv(sb.store, async (_n, op, p) => {
        if (aborted || op !== 'createExclusive' || !p.startsWith(layout.decisionsDir(0))) return;
        aborted = abort(testEnv(sb.store), { stagingPath });
        await aborted;
      });
      await abort(taskEnv, { stagingPath, task: '0' }).catch(() => undefined);
      assert.ok(aborted, 'the job abort ran');
      assert.equal(await sb.store.stat(stagingPath), null, 'no decision or dir left where the staging dir was');
      assert.deepEqual(await readTree(sb.store, target), {});
    });

    // Never "nothing of it is kept": its files are in the target.
    test('a v2 commit-task whose job is aborted after it published: exit 6 saying its files stay', async () => {
      const { target, stagingPath, layout } = await oneFileJob('v2-aborted', { algorithm: 'v2', mode: 'append' });
      let aborted: Promise<unknown> | undefined;
      // Once published, before the claim says committed: the job is aborted.
      const taskEnv = testEnv(sb.store, async (_n, op, p) => {
        if (aborted || op !== 'writeFile' || p !== layout.claimFile(0, '0')) return;
        aborted = abort(testEnv(sb.store), { stagingPath });
        await aborted;
      });
      const error = await libCommitTask(taskEnv, stagingPath, { task: '0', files: {} }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(aborted, 'abort ran');
      assert.ok(error instanceof ConflictError, `commit-task exits 4, not: ${String(error)}`);
      assert.match(
        (error as Error).message,
        /was aborted while .* committed: its files were published into the target already \(v2 publishes at commit-task\) and stay there/,
      );
      assert.deepEqual(await readTree(sb.store, target), { 'dt=1/f': 'f' }, 'what the message says is in the target');
    });

    for (const when of ['as it claims', 'as it lists its files'] as const) {
      test(`a v2 commit-task whose job is aborted ${when}: exit 6, nothing published, no target`, async () => {
        const { target, stagingPath, layout } = await oneFileJob(`v2-aborted-early-${when.length}`, {
          algorithm: 'v2',
          mode: 'append',
          jobId: 'v2early',
        });
        let aborted: Promise<unknown> | undefined;
        let claimed = false;
        const abortNow = async () => {
          aborted = abort(testEnv(sb.store), { stagingPath });
          await aborted;
        };
        // The claim is made; the abort removes the attempt's files before the task publishes them.
        const taskEnv = testEnv(sb.store, {
          beforeMutation: async (_n, op, p) => {
            if (aborted || op !== 'createExclusive' || p !== layout.claimFile(0, '0')) return;
            if (when === 'as it claims') await abortNow();
            else claimed = true;
          },
          beforeRead: async (_op, p) => {
            if (claimed && !aborted && p.startsWith(layout.attemptDir(0, taskAttemptName('v2early', '0', 0))))
              await abortNow();
          },
        });
        const error = await libCommitTask(taskEnv, stagingPath, { task: '0', files: {} }).then(
          () => null,
          (e: unknown) => e,
        );
        assert.ok(aborted, 'abort ran');
        assert.ok(error instanceof ConflictError, `commit-task exits 4, not: ${String(error)}`);
        assert.doesNotMatch((error as Error).message, /published into the target/);
        assert.match((error as Error).message, /was aborted while .* committed: nothing of it/);
        assert.equal(await sb.store.stat(target), null, 'no target made by a task that published nothing');
        assert.equal(await sb.store.stat(stagingPath), null);
      });
    }

    // A kill left the first run published.
    test('a v2 commit-task re-run after publishing, job aborted as it decides: exit 6, its files stay', async () => {
      const { target, stagingPath, layout } = await oneFileJob('v2-rerun-aborted', { algorithm: 'v2', mode: 'append' });
      // Killed once published, before its claim says committed.
      const killedEnv = testEnv(sb.store, (n, op, p) => {
        if (op === 'writeFile' && p === layout.claimFile(0, '0')) throw new InjectedFault(n, op, p);
      });
      await assert.rejects(libCommitTask(killedEnv, stagingPath, { task: '0', files: {} }), InjectedFault);
      let aborted: Promise<unknown> | undefined;
      const rerunEnv = testEnv(sb.store, async (_n, op, p) => {
        if (aborted || op !== 'createExclusive' || !p.startsWith(layout.decisionsDir(0))) return;
        aborted = abort(testEnv(sb.store), { stagingPath });
        await aborted;
      });
      const error = await libCommitTask(rerunEnv, stagingPath, { task: '0', files: {} }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(aborted, 'abort ran');
      assert.ok(error instanceof ConflictError, `commit-task exits 4, not: ${String(error)}`);
      assert.match(
        (error as Error).message,
        /was aborted while .* committed: its files were published into the target already/,
      );
      assert.deepEqual(
        data(await readTree(sb.store, target)),
        { 'dt=1/f': 'f' },
        'what the message says is in the target',
      );
    });

    // A kill left the first run published. The message says the job was aborted, never "never staged".
    test('a v2 commit-task re-run after publishing, job aborted before it reads the claim: exit 6 "aborted"', async () => {
      const { target, stagingPath, layout } = await oneFileJob('v2-rerun-aborted-early', {
        algorithm: 'v2',
        mode: 'append',
      });
      const claimFile = layout.claimFile(0, '0');
      const killedEnv = testEnv(sb.store, (n, op, p) => {
        if (op === 'writeFile' && p === claimFile) throw new InjectedFault(n, op, p);
      });
      await assert.rejects(libCommitTask(killedEnv, stagingPath, { task: '0', files: {} }), InjectedFault);
      let aborted: Promise<unknown> | undefined;
      const rerunEnv = testEnv(sb.store, {
        beforeRead: async (_op, p) => {
          if (aborted || p !== claimFile) return;
          aborted = abort(testEnv(sb.store), { stagingPath });
          await aborted;
        },
      });
      const error = await libCommitTask(rerunEnv, stagingPath, { task: '0', files: {} }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(aborted, 'abort ran');
      assert.ok(error instanceof ConflictError, `commit-task exits 4, not: ${String(error)}`);
      assert.match(
        (error as Error).message,
        /was aborted while task 0 committed: this run published nothing; any file an earlier run of it published .* stays in the target/,
      );
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/f': 'f' }, 'the earlier run published the file');
    });

    test('commit-task re-run as recover carries its committed task into attempt 1: exit 0, not "never staged"', async () => {
      const { target, stagingPath, layout } = await oneFileJob('rerun-carried', { mode: 'append' });
      await libCommitTask(testEnv(sb.store), stagingPath, { task: '0', files: {} });
      let recovered: Promise<unknown> | undefined;
      const rerunEnv = testEnv(sb.store, {
        beforeRead: async (_op, p) => {
          if (recovered || p !== layout.claimFile(0, '0')) return;
          recovered = recover(testEnv(sb.store), { stagingPath });
          await recovered;
        },
      });
      const r = await commitTaskStep(rerunEnv, { stagingPath, task: '0' }).then(
        (x) => x,
        (e: unknown) => e,
      );
      assert.ok(recovered, 'recover ran');
      // (S3 keeps a carried task's files where they were staged: that run finds them and goes on to 'carried'.)
      assert.ok(
        ['already', 'committed'].includes((r as { outcome?: string }).outcome ?? ''),
        `exit 0, not: ${r instanceof Error ? r.message : JSON.stringify(r)}`,
      );
      assert.equal((await libCommitJobStep(testEnv(sb.store), { stagingPath })).files, 1, 'the job commits the task');
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/f': 'f' });
    });

    // The abort is killed in its clean-up.
    test('a v2 commit-task re-run while its job is being aborted: exit 6 saying its files stand in the target', async () => {
      const { target, stagingPath, layout } = await oneFileJob('v2-rerun-aborting', {
        algorithm: 'v2',
        mode: 'append',
      });
      const killedEnv = testEnv(sb.store, (n, op, p) => {
        if (op === 'writeFile' && p === layout.claimFile(0, '0')) throw new InjectedFault(n, op, p);
      });
      await assert.rejects(libCommitTask(killedEnv, stagingPath, { task: '0', files: {} }), InjectedFault);
      // The abort marks the job aborted, then is killed as it starts removing the staging dir.
      const abortEnv = testEnv(sb.store, (n, op, p) => {
        if (op === 'delete') throw new InjectedFault(n, op, p);
      });
      await assert.rejects(abort(abortEnv, { stagingPath }), InjectedFault);
      await driverDied(sb.store, stagingPath);
      const error = await libCommitTask(testEnv(sb.store), stagingPath, { task: '0', files: {} }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(error instanceof ConflictError, `exit 4, not: ${String(error)}`);
      assert.match(
        (error as Error).message,
        /cannot commit task 0: job .* was aborted .*: its files were published into the target already .* and stay there/,
      );
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/f': 'f' });
    });

    // Not "nothing more to do": the task is not in the job.
    test('commit-task at a job committed meanwhile: exit 2, the task can no longer be committed into it', async () => {
      const target = posix.join(dir(), 'late-task');
      const stagingPath = await readyJob(sb.store, target, jobScenario('L', 'append'), [
        { task: '0', partition: ['dt=1'], files: { a: 'a' } },
      ]);
      await libStageTask(testEnv(sb.store), stagingPath, { task: '1', partition: ['dt=2'], files: { b: 'b' } });
      await libCommitJob(testEnv(sb.store), stagingPath);
      const error = await libCommitTask(testEnv(sb.store), stagingPath, { task: '1', files: {} }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(error instanceof JobGoneError, `exit 2, not: ${String(error)}`);
      assert.match(
        (error as Error).message,
        /job L is finished: it was committed .*; task 1 can no longer be committed into it: its commit holds task 1's output only if the task was committed before the job was \(if that output is missing, run the job again\)$/,
      );
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a': 'a' });
    });

    test('two runs of one v2 attempt, the second whole as the first plans: both exit 0, no append clash', async () => {
      const { target, stagingPath } = await oneFileJob('v2-two-runs-plan', { algorithm: 'v2', mode: 'append' });
      // The partition holds a file already: the task's files move one by one.
      await writeTree(sb.store, target, { 'dt=1/old': 'o' });
      let second: Promise<unknown> | undefined;
      const firstEnv = testEnv(sb.store, {
        beforeRead: async (_op, p) => {
          if (second || !(p === target || p.startsWith(`${target}/`))) return;
          second = libCommitTask(testEnv(sb.store), stagingPath, { task: '0', files: {} }).then(
            () => null,
            (e: unknown) => e,
          );
          await second;
        },
      });
      const first = await libCommitTask(firstEnv, stagingPath, { task: '0', files: {} }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(second, 'the second run ran');
      assert.equal(await second, null, 'the second run exits 0');
      assert.equal(first, null, `the first run exits 0 too, not: ${String(first)}`);
      assert.equal((await libCommitJobStep(testEnv(sb.store), { stagingPath })).files, 1);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/f': 'f', 'dt=1/old': 'o' });
    });

    // The second publishes after the first; the claim stays.
    test('two runs of one v2 attempt, the second claiming after the first: both exit 0, the job commits it', async () => {
      const { target, stagingPath, layout } = await oneFileJob('v2-two-runs', { algorithm: 'v2', mode: 'append' });
      // The partition holds a file already: the task's files move one by one.
      await writeTree(sb.store, target, { 'dt=1/old': 'o' });
      const claimFile = layout.claimFile(0, '0');
      let first: Promise<unknown> | undefined;
      let claimed!: () => void;
      const firstClaimed = new Promise<void>((r) => (claimed = r));
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let firstHasClaim = false;
      // The first run claims, then waits before it publishes until the second run plans against the target.
      const firstEnv = testEnv(sb.store, async (_n, op, p) => {
        if (op === 'createExclusive' && p === claimFile) return void (firstHasClaim = true);
        if (!firstHasClaim) return;
        claimed();
        await released;
      });
      let pastClaim = false;
      // The second run looked before the first claimed; the first claims as the second is about to.
      const secondEnv = testEnv(sb.store, {
        beforeMutation: async (_n, op, p) => {
          if (first || op !== 'createExclusive' || p !== claimFile) return;
          first = libCommitTask(firstEnv, stagingPath, { task: '0', files: {} }).then(
            () => null,
            (e: unknown) => e,
          );
          await firstClaimed;
          pastClaim = true;
        },
        beforeRead: async (_op, p) => {
          if (!pastClaim || !(p === target || p.startsWith(`${target}/`))) return;
          pastClaim = false;
          release();
          await first;
        },
      });
      const second = await libCommitTask(secondEnv, stagingPath, { task: '0', files: {} }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(first, 'the first run ran');
      assert.equal(await first, null, 'the first run exits 0');
      assert.equal(second, null, `the second run exits 0 too, never a clash with its own files: ${String(second)}`);
      const done = await libCommitJobStep(testEnv(sb.store), { stagingPath });
      assert.equal(done.files, 1, "the job's commit counts the task");
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/f': 'f', 'dt=1/old': 'o' });
    });

    test('recover reading a claim while its commit-task runs: the task is kept exactly when it exits 0', async () => {
      const { target, job, stagingPath, layout } = await lateTaskJob('t');
      const claim = layout.claimFile(0, '1');
      let acted!: () => void;
      const recoverActed = new Promise<void>((r) => (acted = r));
      let checked!: () => void;
      const taskChecked = new Promise<void>((r) => (checked = r));
      let claimed = false;
      let rec: Promise<unknown> | undefined;
      // recover starts right after the claim is made, and pauses once it has acted on the claims
      // (undone it, or finished it) until commit-task has looked at the job after its own commit.
      const recoverEnv = testEnv(sb.store, async (_n, _op, p) => {
        if (!p.includes('_claims') && p !== layout.jobFile) return;
        acted();
        await taskChecked;
      });
      const taskEnv = testEnv(sb.store, {
        beforeMutation: async (_n, op, p) => {
          if (op === 'createExclusive' && p === claim) return void (claimed = true);
          if (!claimed || rec) return;
          rec = recover(recoverEnv, { stagingPath }).then(
            () => null,
            (e: unknown) => e,
          );
          await recoverActed;
        },
        beforeRead: (_op, p) => void (rec && p === layout.jobFile && checked()),
      });
      const outcome = await libCommitTask(taskEnv, stagingPath, { task: '1', files: {} }).then(
        () => 0,
        (e: unknown) => (e instanceof ConflictError ? 4 : e),
      );
      checked();
      assert.equal(await rec, null, 'recover finished');
      assert.ok(outcome === 0 || outcome === 4, String(outcome));
      const again = await commitJob(sb, job);
      assert.equal(again.code, 0, again.stderr);
      const tree = data(await readTree(sb.store, target));
      assert.equal(tree['dt=0/a'], 'a');
      assert.equal(
        'dt=1/b' in tree,
        outcome === 0,
        `commit-task ${outcome === 0 ? 'exited 0' : 'exited 4'}, target ${JSON.stringify(tree)}`,
      );
    });

    test('recover removing what commit-task writes into: commit-task says what happened, no raw not-found', async () => {
      const { target, job, stagingPath } = await lateTaskJob('t');
      const claim = new JobLayout(stagingPath).claimFile(0, '1');
      let rec: Promise<unknown> | undefined;
      // Right before commit-task records its claim committed, recover runs whole (it finishes the
      // claim, whose files are in place, and prunes app attempt 0); the write then finds its
      // directory gone, as it does when recover's prune lands in the middle of it.
      const taskEnv = testEnv(sb.store, async (_n, op, p) => {
        if (rec || op !== 'writeFile' || p !== claim) return;
        rec = recover(testEnv(sb.store), { stagingPath });
        await rec;
        throw new StoreError('not-found', 'writeFile', [sb.store.toUri(p)], 'ENOENT: no such file or directory');
      });
      await libCommitTask(taskEnv, stagingPath, { task: '1', files: {} });
      assert.ok(rec, 'recover ran');
      const again = await commitJob(sb, job);
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a', 'dt=1/b': 'b' });
    });

    // Recover carries the claim on S3; either way never the raw store error.
    test('a claim made but its answer lost, recover meanwhile: exit 0 if recover carried it, else exit 6', async () => {
      const { target, job, stagingPath, layout } = await lateTaskJob('t');
      const claim = layout.claimFile(0, '1');
      let rec: Promise<unknown> | undefined;
      // The claim is created; before its answer arrives recover runs whole and carries it, committed,
      // into app attempt 1; the answer is then lost (the store reports a reset connection).
      const lossy = new Proxy(sb.store, {
        get(store, key) {
          const v = Reflect.get(store, key) as unknown;
          if (key !== 'createExclusive') return typeof v === 'function' ? v.bind(store) : v;
          return async (p: string, d: Buffer | string) => {
            const made = await store.createExclusive(p, d);
            if (rec || p !== claim) return made;
            rec = recover(testEnv(sb.store), { stagingPath });
            await rec;
            throw new StoreError('io', 'createExclusive', [store.toUri(p)], 'read ECONNRESET');
          };
        },
      });
      const outcome = await libCommitTask(testEnv(lossy), stagingPath, { task: '1', files: {} }).then(
        () => 0,
        (e: unknown) => (e instanceof ConflictError ? e.exitCode : e),
      );
      assert.ok(rec, 'recover ran');
      // S3 leaves a claimed task's files where they were staged, so recover can finish the claim;
      // local and HDFS move them at commit-task, so recover undoes it.
      assert.equal(outcome, sb.store.caps.directoryRename ? 6 : 0, String(outcome));
      const again = await commitJob(sb, job);
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual(
        data(await readTree(sb.store, target)),
        outcome === 0 ? { 'dt=0/a': 'a', 'dt=1/b': 'b' } : { 'dt=0/a': 'a' },
      );
    });

    test("recover run whole between commit-task's claim and its look at the job: exit 0 iff the task is kept", async () => {
      const { target, job, stagingPath, layout } = await lateTaskJob('t');
      let claimed = false;
      let rec: Promise<unknown> | undefined;
      // On S3 recover finishes the claim (the files are where commit-job reads them) and carries it;
      // elsewhere the files are not promoted yet and it undoes the claim.
      const taskEnv = testEnv(sb.store, {
        beforeMutation: (_n, op, p) =>
          void (op === 'createExclusive' && p === layout.claimFile(0, '1') && (claimed = true)),
        beforeRead: async (_op, p) => {
          if (!claimed || rec || p !== layout.jobFile) return;
          rec = recover(testEnv(sb.store), { stagingPath });
          await rec;
        },
      });
      const outcome = await libCommitTask(taskEnv, stagingPath, { task: '1', files: {} }).then(
        () => 0,
        (e: unknown) => (e instanceof ConflictError ? e.exitCode : e),
      );
      assert.ok(rec, 'recover ran');
      assert.ok(outcome === 0 || outcome === 6, String(outcome));
      const again = await commitJob(sb, job);
      assert.equal(again.code, 0, again.stderr);
      const tree = data(await readTree(sb.store, target));
      assert.equal(
        'dt=1/b' in tree,
        outcome === 0,
        `commit-task ${outcome === 0 ? 'exited 0' : 'exited 4'}, target ${JSON.stringify(tree)}`,
      );
    });

    test('recover removing the app attempt as commit-task decides: exit 6 naming it, not a raw not-found', async () => {
      const { stagingPath, layout } = await lateTaskJob('t');
      let rec: Promise<unknown> | undefined;
      // recover runs whole right before the decision is created, which then finds its directory
      // gone, as it does when recover's prune lands in the middle of the create.
      const taskEnv = testEnv(sb.store, async (_n, op, p) => {
        if (rec || op !== 'createExclusive' || !p.startsWith(layout.decisionsDir(0))) return;
        rec = recover(testEnv(sb.store), { stagingPath });
        await rec;
        throw new StoreError('not-found', 'createExclusive', [sb.store.toUri(p)], 'ENOENT: no such file or directory');
      });
      const error = await libCommitTask(taskEnv, stagingPath, { task: '1', files: {} }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(rec, 'recover ran');
      assert.ok(error instanceof ConflictError, `commit-task exits 4, not: ${String(error)}`);
      assert.match(
        (error as Error).message,
        /recover started app attempt 1 .* nothing of it was published; run the task again/,
      );
    });

    for (const failed of [true, false]) {
      // The decision's create then fails, or lands in the dir it made again: abort --task says recover
      // dropped the attempt, never a raw not-found, and nothing is left of it.
      test(`recover removing the attempt as abort --task decides, ${failed ? 'create fails' : 'create lands'}: exit 0`, async () => {
        const { target, stagingPath, layout } = await lateTaskJob(`abort-task-recover-${failed}`);
        let rec: Promise<unknown> | undefined;
        const warnings: string[] = [];
        const emit = (e: { type: string; message?: string }) => void (e.type === 'warn' && warnings.push(e.message!));
        const taskEnv = testEnv(
          sb.store,
          async (_n, op, p) => {
            if (rec || op !== 'createExclusive' || !p.startsWith(layout.decisionsDir(0))) return;
            rec = recover(testEnv(sb.store), { stagingPath });
            await rec;
            if (failed)
              throw new StoreError(
                'not-found',
                'createExclusive',
                [sb.store.toUri(p)],
                'ENOENT: no such file or directory',
              );
          },
          { emit },
        );
        const result = await abort(taskEnv, { stagingPath, task: '1' });
        assert.ok(rec, 'recover ran');
        assert.equal(result.scope, 'task');
        assert.ok(
          warnings.some((w) =>
            /recover started app attempt 1 of job \S+ while this abort ran, without attempt_\S+_1_0: nothing of it will be published/.test(
              w,
            ),
          ),
          warnings.join('\n'),
        );
        assert.equal(
          await sb.store.stat(layout.decisionsDir(0)),
          null,
          'no decision left in app attempt 0 (recover removed its decisions)',
        );
        await libCommitJobStep(testEnv(sb.store), { stagingPath });
        assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a' });
      });
    }

    for (const point of ['before its claim', 'once its claim exists'] as const) {
      // Keeps protocol.md §5.9: only recover finishes or undoes a commit a task decided, so abort --task
      // says so at once, never waiting out the lease, never "its files belong to the job".
      test(`abort --task after commit-task died committing ${point}: exit 6 at once naming recover`, async () => {
        const { stagingPath } = await lateTaskJob(`abort-dead-${point.length}`);
        const dead = testEnv(
          sb.store,
          crashAt({ op: point === 'before its claim' ? 'createExclusive' : 'writeFile', path: /\/_claims\/1\.yaml$/ }),
          { pid: 4_000_000, isPidAlive: () => false },
        );
        await assert.rejects(libCommitTask(dead, stagingPath, { task: '1', files: {} }), InjectedFault);
        const err = await abort(testEnv(sb.store, undefined, { isPidAlive: (pid) => pid !== 4_000_000 }), {
          stagingPath,
          task: '1',
        }).then(
          () => null,
          (e: unknown) => e,
        );
        assert.ok(
          err instanceof ConflictError &&
            err.detail.reason === 'abort-undecided' &&
            /^attempt_\S+_1_0$/.test(err.detail.taskAttempt) &&
            /^tester@\S+ pid 4000000$/.test(err.detail.by),
          String(err),
        );
      });
    }

    // Recover carries the attempt into app attempt 1; abort --task says so.
    test('recover carrying a committed attempt on as abort --task decides: exit 6, the job commits it', async () => {
      const { target, job, stagingPath, layout } = await lateTaskJob('abort-task-carried');
      await commitTask(sb, job, '1');
      let rec: Promise<unknown> | undefined;
      const taskEnv = testEnv(sb.store, async (_n, op, p) => {
        if (rec || op !== 'createExclusive' || !p.startsWith(layout.decisionsDir(0))) return;
        rec = recover(testEnv(sb.store), { stagingPath });
        await rec;
      });
      await assert.rejects(
        abort(taskEnv, { stagingPath, task: '1' }),
        (e: unknown) =>
          e instanceof ConflictError &&
          e.detail.reason === 'attempt-carried' &&
          e.detail.appAttempt === 1 &&
          /^attempt_\S+_1_0$/.test(e.detail.taskAttempt),
      );
      assert.ok(rec, 'recover ran');
      await libCommitJobStep(testEnv(sb.store), { stagingPath });
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/a': 'a', 'dt=1/b': 'b' });
    });

    const LATE_ROUNDS = Number(process.env.STAGECOMMIT_RACE_ROUNDS ?? (fx.name === 'local' ? 3 : 2));
    test(`commit-task racing commit-job as processes, ${LATE_ROUNDS} rounds: published exactly when exit 0`, async (t) => {
      const seen: string[] = [];
      for (let round = 0; round < LATE_ROUNDS; round++) {
        const { target, job } = await lateTaskJob(`t${round}`);
        // Either starts first, by 0-300 ms; commit-job's store calls are slowed to widen its window.
        const offset = Math.random() * 600 - 300;
        const pause = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
        const [first, ct] = await Promise.all([
          pause(offset).then(
            () =>
              spawnCli(['commit-job', '--job', job], { env: { ...sb.env, STAGECOMMIT_TEST_DELAY_MS: '15' } }).result,
          ),
          pause(-offset).then(() => cli(['commit-task', '--job', job, '--task', '1'], { env: sb.env })),
        ]);
        // A commit-job that met the claim while it was being made stops before its commit point.
        if (first.code !== 0) {
          assert.equal(first.code, 4, first.stderr);
          const again = await commitJob(sb, job);
          assert.equal(again.code, 0, again.stderr);
        }
        const tree = data(await readTree(sb.store, target));
        assert.equal(tree['dt=0/a'], 'a');
        assert.equal(
          'dt=1/b' in tree,
          ct.code === 0,
          `round ${round}: commit-task exit ${ct.code} (${ct.stderr.trim()}), target ${JSON.stringify(tree)}`,
        );
        assert.ok([0, 2, 4, 6].includes(ct.code!), ct.stderr);
        assert.equal(await sb.store.stat(sb.pathOf(job)), null, 'staging dir gone');
        seen.push(`cj ${first.code} ct ${ct.code}`);
      }
      t.diagnostic(seen.join('; '));
    });

    // The store holds the requests unanswered.
    test('a driver whose renewals stop landing stops before its lease runs out; recover finishes the job', async () => {
      const target = posix.join(dir(), 'hung');
      const tasks = Array.from({ length: 12 }, (_, i) => ({
        task: String(i),
        partition: [`dt=${i}`],
        files: { f: `file ${i}` },
      }));
      const staging = await readyJob(sb.store, target, jobScenario('H', 'create'), tasks);
      // Lease renewals hang for good; every other change takes 250 ms: the 2 s lease lapses mid-commit.
      const hung = testEnv(
        sb.store,
        async (_n, op, path) => {
          if (posix.basename(path).startsWith('_lease.') && op === 'writeFile') return new Promise<void>(() => {});
          await sleep(250);
        },
        { leaseTtlMs: 2000 },
      );
      const err = await libCommitJobStep(hung, { stagingPath: staging }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(
        err instanceof StoreError &&
          /renew lease .*_lease\.0\.yaml: no renewal of it has landed in time \(the store has not answered, or this process was stopped\): this step stops changing the job [\d.]+ s before its lease runs out, when another process may take the job over/.test(
            err.message,
          ),
        String(err),
      );
      // The fence went with the step: the same store takes changes again.
      await hung.store.writeFile(posix.join(posix.dirname(target), 'after-lapse'), 'x');
      await driverDied(sb.store, staging);
      await recover(testEnv(sb.store), { stagingPath: staging });
      assert.deepEqual(
        data(await readTree(sb.store, target)),
        Object.fromEntries(tasks.map((t) => [`dt=${t.task}/f`, `file ${t.task}`])),
      );
    });

    test('a commit-job clean-up that outlasts the lease keeps renewing it: the job commits, nothing left', async () => {
      const target = posix.join(dir(), 'slowclean');
      const staging = await readyJob(sb.store, target, jobScenario('S', 'create'), [
        { task: '0', partition: ['dt=0'], files: { f: 'f' } },
      ]);
      const data0 = posix.join(staging, '_temporary');
      let slowed = false;
      // The first delete of the staging dir's data takes twice the 1.2 s lease.
      const slow = testEnv(
        sb.store,
        async (_n, op, path) => {
          if (slowed || op !== 'delete' || !path.startsWith(data0)) return;
          slowed = true;
          await sleep(2400);
        },
        { leaseTtlMs: 1200 },
      );
      const r = await libCommitJobStep(slow, { stagingPath: staging });
      assert.equal(r.outcome, 'committed');
      assert.equal(
        slowed,
        !sb.store.caps.atomicTreeDelete,
        'the clean-up was slowed (HDFS removes the tree in one delete)',
      );
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/f': 'f' });
      assert.equal(await sb.store.stat(staging), null, 'the staging dir is gone');
    });

    /** A lease (1.2 s) whose renewals the store never answers, and the signal it cuts requests off with. */
    async function lapsingLease(name: string): Promise<{ layout: JobLayout; lease: Lease; signal: AbortSignal }> {
      const layout = new JobLayout(posix.join(dir(), name, '.stagecommit', 'job'));
      const env = testEnv(
        sb.store,
        async (_n, op, path) => {
          if (op === 'writeFile' && posix.basename(path).startsWith('_lease.')) return new Promise<void>(() => {});
        },
        { leaseTtlMs: 1200 },
      );
      const lease = await Lease.acquire(env.store, layout, env, 'commit-job');
      const signal = lease.admit(posix.join(layout.root, '_commit.yaml'));
      assert.ok(signal && !signal.aborted);
      const alive = setInterval(() => {}, 1000); // the lease's timers do not hold the process: a request in flight does
      await once(signal, 'abort').finally(() => clearInterval(alive));
      return { layout, lease, signal };
    }

    // Keeps protocol.md §5.6: a driver whose lease may have lapsed sends no request, even unasked, its own
    // lease file and temps included; its lease file is left to expire.
    test('a lease whose renewals stop landing cuts off requests in flight when it may lapse; then none go', async () => {
      const { layout, lease, signal } = await lapsingLease('cut');
      assert.ok(
        signal.reason instanceof StoreError && /this step stops changing the job/.test(signal.reason.message),
        String(signal.reason),
      );
      for (const p of [
        posix.join(layout.root, '_commit.yaml'),
        lease.path,
        tempPathFor(posix.join(layout.root, '_commit.yaml')),
      ]) {
        assert.throws(() => lease.admit(p), /this step stops changing the job/, p);
      }
      await lease.release();
      // Removed, its generation could be taken again, and a renewal landing late would write over the successor's
      // lease.
      assert.ok(await sb.store.stat(lease.path), 'its lease file is left to expire');
    });

    // Its successor takes the next generation.
    test('a lapsed lease is left to expire: its late renewal does not make way for a third driver', async () => {
      const { layout, lease: a } = await lapsingLease('gen');
      await a.release();
      const left = await readCurrentLease(sb.store, layout);
      assert.equal(left?.path, a.path, 'the lapsed lease file is left');
      await sleep(Math.max(0, left!.record!.expiresAtMs - Date.now()) + 20);
      const other = (host: string) => ({ ...testEnv(sb.store), host });
      const b = await Lease.acquire(sb.store, layout, other('b-host'), 'recover');
      assert.match(b.path, /_lease\.1\.yaml$/);
      // The lapsed driver's renewal, held by the store, lands now.
      await sb.store.writeFile(a.path, encodeLease({ ...left!.record!, expiresAtMs: Date.now() + 60_000 }));
      await assert.rejects(
        Lease.acquire(sb.store, layout, other('c-host'), 'commit-job'),
        (e: unknown) =>
          e instanceof ConflictError &&
          e.detail.reason === 'lease-held' &&
          /^recover by tester on b-host/.test(e.detail.holder),
      );
      await b.release();
    });

    // The process was stopped past its lease: the message gives the real time, not "0 s before".
    test('a driver waking after its lease ran out stops, saying how long ago it ran out', async () => {
      const layout = new JobLayout(posix.join(dir(), 'woke'));
      let clock = Date.now();
      const lease = await Lease.acquire(
        sb.store,
        layout,
        testEnv(sb.store, undefined, { now: () => clock, leaseTtlMs: 2000 }),
        'commit-job',
      );
      clock += 5000;
      assert.throws(
        () => lease.admit(layout.jobFile),
        /renew lease .*no renewal of it has landed in time \(the store has not answered, or this process was stopped\): this step stops changing the job now: its lease ran out 3\.0 s ago, and another process may have taken the job over/,
      );
      await lease.release();
    });

    // A suspended host's monotonic clock does not count its sleep; its wall clock does.
    test('a driver whose host slept past its lease stops, though its monotonic clock did not move', async () => {
      const layout = new JobLayout(posix.join(dir(), 'slept'));
      let wall = Date.now();
      const slept = testEnv(sb.store, undefined, { now: () => wall, monotonicNow: () => 0, leaseTtlMs: 2000 });
      const lease = await Lease.acquire(sb.store, layout, slept, 'commit-job');
      assert.ok(lease.admit(layout.jobFile));
      wall += 5000;
      assert.throws(() => lease.admit(layout.jobFile), /its lease ran out 3\.0 s ago/);
      await lease.release();
    });

    test('a lease renewal that lands after the fence tripped does not bring the driver back: it stays stopped', async () => {
      const target = posix.join(dir(), 'late');
      const staging = await readyJob(sb.store, target, jobScenario('R', 'create'), [
        { task: '0', partition: ['dt=1'], files: { f: 'f' } },
      ]);
      // TTL 6 s: renewals every 2 s, the fence at 4.5 s. The first renewal lands at 4.8 s (late);
      // the plan's write runs until 5 s, when the lease would look renewed until 8 s.
      let t0 = 0;
      let renewals = 0;
      const late = testEnv(
        sb.store,
        async (_n, op, path) => {
          if (op === 'createExclusive' && posix.basename(path).startsWith('_lease.')) t0 = Date.now();
          if (op === 'writeFile' && posix.basename(path).startsWith('_lease.') && renewals++ === 0)
            await sleep(t0 + 4800 - Date.now());
          if (
            (op === 'createExclusive' && path.endsWith('_commit.yaml')) ||
            (op === 'writeFile' && path.endsWith('/_job.yaml'))
          )
            await sleep(t0 + 5000 - Date.now());
        },
        { leaseTtlMs: 6000 },
      );
      const err = await libCommitJobStep(late, { stagingPath: staging }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(
        err instanceof StoreError && /renew lease .*this step stops changing the job/.test(err.message),
        String(err),
      );
      assert.equal(renewals, 1, 'no renewal after the lease may have lapsed');
      assert.equal(await sb.store.stat(target), null, 'nothing published');
      await driverDied(sb.store, staging);
      // Past its commit point or not (WebHDFS fences the plan's rename too), recover and a commit finish it.
      await recover(testEnv(sb.store), { stagingPath: staging });
      if ((await sb.store.stat(target)) === null) await libCommitJobStep(testEnv(sb.store), { stagingPath: staging });
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/f': 'f' });
    });

    /**
     * A job whose commit-job wrote its plan and died before the table-log entry naming it: the plan's
     * path and bytes, and the entry its held create would make.
     */
    async function diedAfterPlan(name: string): Promise<{
      target: string;
      staging: string;
      layout: JobLayout;
      planPath: string;
      plan: Buffer;
      entry: LogEntry;
    }> {
      const target = posix.join(dir(), name);
      await writeTree(sb.store, target, { 'dt=1/old': 'old' });
      const staging = await readyJob(sb.store, target, jobScenario(name, 'overwrite'), [
        { task: '0', partition: ['dt=1'], files: { f: 'new' } },
      ]);
      const layout = new JobLayout(staging);
      await assert.rejects(
        libCommitJobStep(testEnv(sb.store, killedAt.beforeCommitPoint()), { stagingPath: staging }),
        InjectedFault,
      );
      const planPath = (await planFileOf(sb.store, layout))!;
      assert.ok(planPath, 'the plan was written');
      const plan = (await sb.store.readFile(planPath))!;
      await driverDied(sb.store, staging);
      const planName = posix.basename(planPath, '.yaml');
      const entry: LogEntry = {
        number: Number(planName.split('-')[1]),
        jobId: name,
        staging: layout.root,
        handle: sb.store.toUri(staging),
        touches: ['dt=1'],
        replaces: ['dt=1'],
        atMs: Date.now(),
        plan: { name: planName, sha256: createHash('sha256').update(plan).digest('hex') },
      };
      return { target, staging, layout, planPath, plan, entry };
    }

    // Keeps protocol.md §3.3, §5.15: the store held the entry's create; it lands after recover removed the plan.
    test('a table-log entry landing after recover removed its plan never counts: the job commits afresh', async () => {
      const { target, staging, layout, entry } = await diedAfterPlan('late-entry');
      const r = await recover(testEnv(sb.store), { stagingPath: staging });
      assert.equal(r.state, 'staged');
      assert.equal(await planFileOf(sb.store, layout), null, 'the plan was garbage');
      const log = new TableLog(sb.store, target);
      assert.equal(await log.tryAppend({ ...entry, plan: entry.plan! }), true, 'the held create lands now');
      assert.equal((await libCommitJobStep(testEnv(sb.store), { stagingPath: staging })).outcome, 'committed');
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/f': 'new' });
      assert.equal(await log.readDone(entry.number, entry.jobId), 'void', 'the dead entry is marked void');
      assert.equal(await log.readDone(entry.number + 1, entry.jobId), 'committed');
    });

    // Keeps protocol.md §3.3: another job meets the dead entry (its plan of an earlier app attempt), marks it void
    // and commits over it.
    test("another job's overwrite meets a dead entry: it is marked void, the commit goes on", async () => {
      const { target, staging, entry } = await diedAfterPlan('dead-entry');
      const other = await readyJob(sb.store, target, jobScenario('other', 'overwrite'), [
        { task: '0', partition: ['dt=1'], files: { o: 'other' } },
      ]);
      await recover(testEnv(sb.store), { stagingPath: staging });
      await new TableLog(sb.store, target).tryAppend({ ...entry, plan: entry.plan! });
      await libCommitJobStep(testEnv(sb.store), { stagingPath: other });
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/o': 'other' });
      assert.equal(await new TableLog(sb.store, target).readDone(entry.number, entry.jobId), 'void');
    });

    // The store held the plan's write; it lands once the job ended: a leftover every step names.
    test('a plan landing after its job committed or aborted is a leftover to delete; nothing else changes', async () => {
      for (const ending of ['commit', 'abort'] as const) {
        const { target, staging, planPath, plan } = await diedAfterPlan(`late-plan-${ending}`);
        if (ending === 'commit') await libCommitJobStep(testEnv(sb.store), { stagingPath: staging });
        else await abort(testEnv(sb.store), { stagingPath: staging });
        assert.equal(await sb.store.stat(staging), null, 'staging dir gone');
        await sb.store.writeFile(planPath, plan); // the held write lands now
        const warnings: string[] = [];
        const env = testEnv(sb.store, undefined, {
          emit: (e: { type: string; message?: string }) => void (e.type === 'warn' && warnings.push(e.message!)),
        });
        if (ending === 'commit') {
          assert.equal((await libCommitJobStep(env, { stagingPath: staging })).outcome, 'already-committed');
          assert.ok(
            warnings.some((w) => /landed after it committed .*_plan\/0-0-[0-9a-f]+\.yaml is garbage, removed/.test(w)),
            warnings.join('\n'),
          );
          assert.equal(await sb.store.stat(staging), null, 'the plan and its dir removed');
          await sb.store.writeFile(planPath, plan);
        } else {
          // No entry names it: garbage, which a driving step removes with the dir it made again.
          assert.equal((await abort(env, { stagingPath: staging })).outcome, 'nothing');
          assert.equal(await sb.store.stat(staging), null, 'the plan and its dir removed');
          await sb.store.writeFile(planPath, plan);
          await assert.rejects(
            libCommitJobStep(testEnv(sb.store), { stagingPath: staging }),
            (e: unknown) => e instanceof JobGoneError && e.detail.reason === 'job-plan-given-up',
          );
          assert.equal(await sb.store.stat(staging), null, 'removed again');
          await sb.store.writeFile(planPath, plan);
        }
        const swept = await cleanOrphans(testEnv(sb.store), {
          roots: [posix.dirname(staging)],
          olderThanMs: 0,
          delete: true,
        });
        assert.ok(
          swept.problems.some((p) => /_plan\/ without _job\.yaml: .* and this plan of it landed later/.test(p.message)),
          JSON.stringify(swept.problems),
        );
        await sb.store.delete(staging, true);
        assert.deepEqual(
          data(await readTree(sb.store, target)),
          ending === 'commit' ? { 'dt=1/f': 'new' } : { 'dt=1/old': 'old' },
        );
      }
    });

    test('a lease being renewed blocks; one unchanged for its TTL, or of a dead pid on this host, goes', async () => {
      const target = posix.join(dir(), 't');
      const job = await prepare(sb, { target }, [{ task: '0', files: { a: 'a' } }]);
      const layout = new JobLayout(sb.pathOf(job));
      const lease = (host: string, pid: number, expiresAtMs: number) =>
        encodeLease({ op: 'commit-job', owner: 'someone', host, pid, acquiredAtMs: 0, expiresAtMs, ttlMs: 1500 });
      const holder = await Lease.acquire(
        sb.store,
        layout,
        testEnv(sb.store, undefined, { user: 'someone', host: 'other-host', pid: 1, leaseTtlMs: 1500 }),
        'commit-job',
      );
      const blocked = await cli(['abort', '--job', job], { env: sb.env });
      await holder.release();
      assert.equal(blocked.code, 4);
      assert.match(blocked.stderr, /locked: commit-job by someone on other-host/);
      await sb.store.writeFile(
        posix.join(layout.root, '_lease.0.yaml'),
        lease(localHost(), 2 ** 22 + 12345, Date.now() + 3_600_000),
      );
      const st = JSON.parse(await ok(['status', '--job', job, '--json'], { env: sb.env }));
      assert.equal(st.lease.alive, false);
      // The same pid under this host name in another pid namespace (a container on the host's
      // network) or on another machine of the name: another host, never known dead by its pid.
      const hostName = localHost().split('#')[0]!;
      for (const elsewhere of [hostName, `${hostName}#00000000`]) {
        await sb.store.writeFile(
          posix.join(layout.root, '_lease.0.yaml'),
          lease(elsewhere, 2 ** 22 + 12345, Date.now() + 3_600_000),
        );
        const seen = JSON.parse(await ok(['status', '--job', job, '--json'], { env: sb.env }));
        assert.equal(seen.lease.alive, true, elsewhere);
      }
      // Its holder's clock says it runs for an hour more; it is never renewed.
      await sb.store.writeFile(
        posix.join(layout.root, '_lease.0.yaml'),
        lease('other-host', 1, Date.now() + 3_600_000),
      );
      const c = await commitJob(sb, job);
      assert.equal(c.code, 0, c.stderr);
      assert.deepEqual(data(await readTree(sb.store, target)), { a: 'a' });
    });

    // The first generation went with a takeover.
    test('a live holder of a later lease generation blocks too: exit 4 naming it, no lease left by the step', async () => {
      const target = posix.join(dir(), 't');
      const job = await prepare(sb, { target }, [{ task: '0', files: { a: 'a' } }]);
      const layout = new JobLayout(sb.pathOf(job));
      // A dead holder of generation 2 on this host, taken over by a live one on another host: generation 3.
      const dead = { op: 'recover', owner: 'someone', host: localHost(), pid: 2 ** 22 + 12345, acquiredAtMs: 0 };
      await sb.store.writeFile(posix.join(layout.root, '_lease.2.yaml'), encodeLease({ ...dead, expiresAtMs: 0 }));
      const holder = await Lease.acquire(
        sb.store,
        layout,
        testEnv(sb.store, undefined, { user: 'someone', host: 'other-host', pid: 1, leaseTtlMs: 1500 }),
        'recover',
      );
      try {
        for (const step of ['commit-job', 'abort', 'recover']) {
          const r = await cli([step, '--job', job], { env: sb.env });
          assert.equal(r.code, 4, `${step}: ${r.stderr}`);
          assert.match(r.stderr, /locked: recover by someone on other-host/);
          const leases = (await sb.store.list(layout.root)).map((e) => e.name).filter((n) => n.startsWith('_lease.'));
          assert.deepEqual(leases, ['_lease.3.yaml'], `${step} left only the holder's lease`);
        }
      } finally {
        await holder.release();
      }
      assert.deepEqual(data(await readTree(sb.store, target)), {});
    });
  });
}
