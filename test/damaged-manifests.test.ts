// Every manifest kind damaged on purpose (cut, lines removed, bytes flipped, fields removed,
// retyped or forged, paths escaping): each is refused with exit 1 naming the file, and nothing
// changes. The steps run in-process, so the in-memory stores take every variant.

import assert from 'node:assert/strict';
import { posix } from 'node:path';
import { describe, test } from 'node:test';
import { ConflictError, CorruptManifestError, InjectedFault, type ErrorContext } from '../src/errors.js';
import { encodeLease } from '../src/job/lease.js';
import { encodeProgress } from '../src/plan/plan-file.js';
import { JobLayout } from '../src/job/layout.js';
import { TableLog } from '../src/job/table-log.js';
import { abort } from '../src/steps/abort.js';
import { commitJob } from '../src/steps/commit-job.js';
import { recover } from '../src/steps/recover.js';
import { status } from '../src/steps/status.js';
import { cli } from '../testing/cli.js';
import { killed as killedAt } from '../testing/crash-points.js';
import { damages, parseBody, sign, withField, withItem, type Variant } from '../testing/damage.js';
import type { TaskSpec } from '../testing/jobs.js';
import {
  driverDied,
  planFileOf,
  jobScenario as job,
  libStageTask,
  readyJob,
  testEnv,
  type Scenario,
} from '../testing/lib.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';

/** A damaged table-log file stops every commit to its table: the message says how to get past it. */
const LOG_ADVICE =
  /no commit to this table can pass .*: restore the file .*; if no job of the table is committing \('stagecommit jobs .*' lists those in the default place; jobs staged with --staging-dir elsewhere count too\), abort every one, delete the log dir/;
import { data, readTree, writeTree } from '../testing/tree.js';

const real = storeFixtures().map((f) => f.name);

/** Whether variant i runs on a store: all in memory; real stores each take their own share. */
function sampled(store: string, i: number): boolean {
  const k = real.indexOf(store);
  if (k < 0) return true;
  const every = store === 'local' ? 4 : 15;
  return i % every === k % every;
}

for (const fx of storeFixtures({ inProcess: true })) {
  describe(`damaged manifests on ${fx.name}: exit 1 naming the file, nothing changed`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'm');
    const ready = (target: string, sc: Scenario, tasks: readonly TaskSpec[]) => readyJob(sb.store, target, sc, tasks);
    const killed = (staging: string) => driverDied(sb.store, staging);

    /**
     * One table with every manifest kind in place: job J (staged, two tasks committed, an
     * aborted attempt) holding `_job.yaml`, claims, decisions and a lease; job K's log entry
     * after J's stage (dead, marked void), and job P past its commit point (its plan in `_plan/`).
     */
    async function world() {
      const root = dir();
      const target = posix.join(root, 't');
      await writeTree(sb.store, target, { 'dt=1/old': 'old', 'dt=9/keep': 'k' });
      const j = await ready(target, job('J', 'overwrite'), [
        { task: '0', partition: ['dt=1'], files: { a: 'a' } },
        { task: '1', partition: ['dt=2'], files: { b: 'b' } },
      ]);
      await libStageTask(testEnv(sb.store), j, { task: '0', attempt: 1, partition: ['dt=1'], files: { late: 'late' } });
      await abort(testEnv(sb.store), { stagingPath: j, task: '0', attempt: 1 });
      // K's entry 0 for dt=1 is dead and marked void (protocol.md §3.3): it landed after its plan was removed.
      const k = await ready(target, job('K', 'overwrite'), [{ task: '0', partition: ['dt=1'], files: { k: 'k' } }]);
      const kEntry = {
        number: 0,
        jobId: 'K',
        staging: new JobLayout(k).root,
        handle: sb.store.toUri(k),
        touches: ['dt=1'],
        replaces: ['dt=1'],
        atMs: Date.now(),
        plan: { name: '0-0-dead', sha256: '0'.repeat(64) },
      };
      await new TableLog(sb.store, target).tryAppend(kEntry);
      await new TableLog(sb.store, target).markDone(kEntry, 'void', Date.now());
      await abort(testEnv(sb.store), { stagingPath: k });
      const p = await ready(posix.join(root, 'other'), job('P', 'append'), [
        { task: '0', partition: ['dt=5'], files: { p: 'p' } },
      ]);
      await assert.rejects(commitJob(testEnv(sb.store, killedAt.applying()), { stagingPath: p }), InjectedFault);
      await killed(p);
      const layout = new JobLayout(j);
      const log = posix.join(root, '.stagecommit', 't', '_log');
      return {
        root,
        j,
        p,
        layout,
        log,
        entry: posix.join(log, '00000000000000000000.yaml'),
        done: posix.join(log, '00000000000000000000.done'),
      };
    }

    /** The refusal names the file (its message starts with it) and, for a field taken out or retyped, that field. */
    function assertNames(err: CorruptManifestError, file: string, v: Variant): void {
      assert.equal(err.file, sb.store.toUri(file), `${v.name}: the error names the file`);
      assert.ok(err.message.startsWith(err.file), `${v.name}: the message names the file: ${err.message}`);
      // A field taken out may leave the document wrong as a whole (a committing job without its plan).
      const field = /^field '(.+)' (removed|retyped)/.exec(v.name)?.[1];
      if (field !== undefined && err.field !== null) assert.equal(err.field, field, `${v.name}: ${err.message}`);
      if (v.text === '') assert.equal(err.reason, 'empty', `${v.name}: ${err.message}`);
    }

    async function expectRefused(
      root: string,
      file: string,
      variants: readonly Variant[],
      step: () => Promise<unknown>,
      context?: ErrorContext['reason'],
    ): Promise<number> {
      const good = (await sb.store.readFile(file))!;
      const before = await readTree(sb.store, root);
      let n = 0;
      for (const v of variants) {
        await sb.store.writeFile(file, v.text);
        const err = await step().then(
          () => null,
          (e: unknown) => e,
        );
        assert.ok(
          err instanceof CorruptManifestError,
          `${file}: ${v.name}: expected exit 1, got ${err === null ? 'success' : String(err)}`,
        );
        assertNames(err, file, v);
        if (context) assert.equal(err.context?.reason, context, `${v.name}: the error says what to do`);
        await sb.store.writeFile(file, good);
        assert.deepEqual(await readTree(sb.store, root), before, `${file}: ${v.name}: something changed`);
        n++;
      }
      // A directory in its place (made by hand or by another tool), where a store has directories.
      if (sb.store.caps.realDirectories) {
        await sb.store.delete(file, false);
        await sb.store.writeFile(posix.join(file, 'x'), 'x');
        const err = await step().then(
          () => null,
          (e: unknown) => e,
        );
        assert.ok(
          err instanceof CorruptManifestError &&
            ['directory', 'not-a-claim'].includes(
              err.detail.reason === 'lease-unreadable' ? err.detail.damage.reason : err.reason,
            ),
          `${file}: a directory in its place: expected exit 1 saying so, got ${err === null ? 'success' : String(err)}`,
        );
        assert.ok(
          err.message.startsWith(sb.store.toUri(file)),
          `a directory: the message names the file: ${err.message}`,
        );
        if (context) assert.equal(err.context?.reason, context, 'a directory: the error says what to do');
        await sb.store.delete(file, true);
        await sb.store.writeFile(file, good);
        assert.deepEqual(
          await readTree(sb.store, root),
          before,
          `${file}: a directory in its place: something changed`,
        );
        n++;
      }
      return n;
    }

    /**
     * The in-memory stores run every variant; the real stores a deterministic sample, each its own
     * share (local every 4th, remote stores every 15th: a step there re-reads short files).
     */
    const sample = (vs: Variant[]) => vs.filter((_, i) => sampled(fx.name, i));

    type World = Awaited<ReturnType<typeof world>>;
    const env = () => testEnv(sb.store);
    const forged = (text: string, cases: [string, string, string][]): Variant[] =>
      cases.map(([name, key, value]) => ({ name, text: withField(text, key, value) }));

    /** The job file and a task's claim: each damage and forgery refused by commit-job. */
    const refuseJobAndClaim = async (w: World) => {
      const claim = w.layout.claimFile(0, '0');
      const claimText = (await sb.store.readFile(claim))!.toString();
      const jobText = (await sb.store.readFile(w.layout.jobFile))!.toString();
      const job = await expectRefused(
        w.root,
        w.layout.jobFile,
        [
          ...sample(damages(jobText, 1)),
          {
            name: "state edited to 'committed' (not re-signed)",
            text: jobText.replace('state: "staged"', 'state: "committed"'),
          },
          ...forged(jobText, [
            ['targetPath escapes', 'targetPath', '"/a/../../victim"'],
            ['targetPath relative', 'targetPath', '"victim"'],
            ['staging elsewhere', 'staging', '"/elsewhere"'],
            ['tasks 0', 'tasks', '0'],
            ['v2 overwrite', 'algorithm', '"v2"'],
            ['target not targetPath', 'target', '"/elsewhere"'],
          ]),
        ],
        () => commitJob(env(), { stagingPath: w.j }),
      );

      const claimN = await expectRefused(
        w.root,
        claim,
        [
          ...sample(damages(claimText, 2)),
          ...forged(claimText, [
            ['root escapes', 'root', '"../../../victim"'],
            ['root absolute', 'root', '"/etc"'],
            ['root of another task', 'root', '"_temporary/0/1"'],
            ['task renamed', 'task', '"7"'],
          ]),
          { name: 'file path escapes', text: withItem(claimText, 'files', 0, (o) => (o.path = 'dt=1/../../x')) },
          { name: 'file path absolute', text: withItem(claimText, 'files', 0, (o) => (o.path = '/etc/passwd')) },
          { name: 'file outside the partitions', text: withItem(claimText, 'files', 0, (o) => (o.path = 'loose')) },
          // A file listed twice is damage, not a clash of two tasks ("tasks 0 and 0 both wrote").
          {
            name: 'a file listed twice',
            text: sign(
              parseBody(claimText).map((l) => (l.key === 'files' ? { ...l, items: [...l.items!, l.items![0]!] } : l)),
            ),
          },
        ],
        () => commitJob(env(), { stagingPath: w.j }),
      );
      return { job, claim: claimN };
    };

    /** A task decision (refused by recover) and a lease another owner holds (by commit-job). */
    const refuseDecisionAndLease = async (w: World) => {
      const decision = (await sb.store.list(w.layout.decisionsDir(0))).find((e) => e.name.endsWith('_0_1.yaml'))!.path;
      const decisionN = await expectRefused(
        w.root,
        decision,
        sample(damages((await sb.store.readFile(decision))!.toString(), 3)),
        () => recover(env(), { stagingPath: w.j }),
      );
      const lease = posix.join(w.j, '_lease.0.yaml');
      const leaseText = encodeLease({
        op: 'commit-job',
        owner: 'other',
        host: 'elsewhere',
        pid: 1,
        acquiredAtMs: 0,
        expiresAtMs: Date.now() + 3_600_000,
      });
      await sb.store.writeFile(lease, leaseText);
      const leaseN = await expectRefused(
        w.root,
        lease,
        sample(damages(leaseText, 4)).filter((v) => v.text !== ''),
        () => commitJob(env(), { stagingPath: w.j }),
      );
      await sb.store.delete(lease, false);
      return { decision: decisionN, lease: leaseN };
    };

    /** The table log's entry and its done record: refused by commit-job, saying the log is damaged. */
    const refuseLog = async (w: World) => {
      const entryText = (await sb.store.readFile(w.entry))!.toString();
      const logEntry = await expectRefused(
        w.root,
        w.entry,
        [
          ...sample(damages(entryText, 5)),
          ...forged(entryText, [
            ['staging escapes', 'staging', '"/a/../b"'],
            ['touches escape', 'touches', '["../x"]'],
            ['number differs', 'number', '3'],
          ]),
        ],
        () => commitJob(env(), { stagingPath: w.j }),
        'table-log-damaged',
      );

      const logDone = await expectRefused(
        w.root,
        w.done,
        sample(damages((await sb.store.readFile(w.done))!.toString(), 6)),
        () => commitJob(env(), { stagingPath: w.j }),
        'table-log-damaged',
      );
      return { logEntry, logDone };
    };

    /** The commit plan: damages, ops that escape or destroy, forged fields; refused by recover. */
    const refusePlan = async (w: World) => {
      const pLayout = new JobLayout(w.p);
      const planFile = (await planFileOf(sb.store, pLayout))!;
      const planText = (await sb.store.readFile(planFile))!.toString();
      const opItems = parseBody(planText).find((l) => l.key === 'ops')!.items!;
      const ops = opItems.length;
      // An object store's plan copies: a copy's size (which paces them) must be a whole number.
      const copy = opItems.findIndex((o) => /"?op"?: ?"copy"/.test(o));
      const sized =
        copy < 0
          ? []
          : ['"8"', '-1', '1.5'].map((v) => ({
              name: `copy size ${v}`,
              text: withItem(planText, 'ops', copy, (o) => (o.size = JSON.parse(v) as unknown)),
            }));
      const planN = await expectRefused(
        w.root,
        planFile,
        [
          ...sized,
          ...sample(damages(planText, 7)),
          ...[
            ['from', 's:../../etc'],
            ['to', 't:../x'],
            ['to', 't:/abs'],
            ['from', 's:_job.yaml'],
            ['to', 't:a//b'],
          ].map(([k, v]) => ({ name: `op ${k} '${v}'`, text: withItem(planText, 'ops', ops - 1, (o) => (o[k!] = v)) })),
          {
            name: 'delete of the whole target',
            text: withItem(planText, 'ops', ops - 1, (o) => Object.assign(o, { op: 'delete', path: 't:', dir: true })),
          },
          // A move onto itself would lose the file (a local rename of one entry unlinks it).
          { name: 'a move or copy onto itself', text: withItem(planText, 'ops', ops - 1, (o) => (o.to = o.from)) },
          {
            name: 'a file moved or copied to become the target itself',
            text: withItem(planText, 'ops', ops - 1, (o) => Object.assign(o, { to: 't:', dir: false })),
          },
          ...forged(planText, [
            ['phaseCount too small', 'phaseCount', '0'],
            ['another job', 'jobId', '"Q"'],
          ]),
        ],
        () => recover(env(), { stagingPath: w.p }),
      );
      return { plan: planN };
    };

    /** The plan's progress record: refused by recover. */
    const refuseProgress = async (w: World) => {
      const pLayout = new JobLayout(w.p);
      // A progress record counting past the plan would skip every phase, and the staging dir would go
      // with the job's files (exit 0).
      const progressText =
        (await sb.store.readFile(pLayout.progressFile))?.toString() ?? encodeProgress({ jobId: 'P' }, 0);
      await sb.store.writeFile(pLayout.progressFile, progressText);
      const progress = await expectRefused(
        w.root,
        pLayout.progressFile,
        [
          ...sample(damages(progressText, 8)),
          { name: 'past the plan (as 0.1 wrote it)', text: '9\n' },
          { name: 'a bare number, unsigned (a flipped byte would read as another count)', text: '1\n' },
          { name: 'not a number', text: 'abc\n' },
          ...forged(progressText, [
            ['past the plan', 'phasesDone', '9'],
            ['another job', 'jobId', '"Q"'],
          ]),
        ],
        () => recover(env(), { stagingPath: w.p }),
      );

      return { progress };
    };

    // Cut at every line and at bytes.
    test('every kind, cut, with lines removed, bytes flipped, fields removed or retyped, paths escaping', async (t) => {
      const w = await world();
      const counts: Record<string, number> = {
        ...(await refuseJobAndClaim(w)),
        ...(await refuseDecisionAndLease(w)),
        ...(await refuseLog(w)),
        ...(await refusePlan(w)),
        ...(await refuseProgress(w)),
      };
      t.diagnostic(
        `damaged variants refused: ${Object.entries(counts)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
      );
      // Undamaged, everything still works: J commits (K's entry is void), P rolls forward.
      await commitJob(env(), { stagingPath: w.j });
      await recover(env(), { stagingPath: w.p });
      assert.deepEqual(data(await readTree(sb.store, posix.join(w.root, 't'))), {
        'dt=1/a': 'a',
        'dt=2/b': 'b',
        'dt=9/keep': 'k',
      });
      assert.deepEqual(data(await readTree(sb.store, posix.join(w.root, 'other'))), { 'dt=5/p': 'p' });
    });

    // A job staged before the damaged entry was made can still be aborted.
    test('a table-log entry cut short: commits to the table stop naming the way out, and the way out works', async () => {
      const root = dir();
      const target = posix.join(root, 't');
      await writeTree(sb.store, target, { 'dt=1/old': 'old' });
      const k = await ready(target, job('K', 'append'), [{ task: '0', partition: ['dt=1'], files: { k: 'k' } }]);
      const l = await ready(target, job('L', 'overwrite'), [{ task: '0', partition: ['dt=1'], files: { l: 'l' } }]);
      await commitJob(testEnv(sb.store), { stagingPath: k }); // entry 0
      const entry = posix.join(root, '.stagecommit', 't', '_log', '00000000000000000000.yaml');
      const text = (await sb.store.readFile(entry))!.toString();
      await sb.store.writeFile(entry, text.slice(0, text.indexOf('\n', text.length / 2) + 1));
      const refused = await commitJob(testEnv(sb.store), { stagingPath: l }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(refused instanceof CorruptManifestError, `exit 1, not ${String(refused)}`);
      // The words a user reads (a golden line).
      assert.match(refused.message, LOG_ADVICE);
      // The way out the message gives: abort every job, delete the log dir, stage again.
      await abort(testEnv(sb.store), { stagingPath: l });
      await sb.store.delete(posix.dirname(entry), true);
      const m = await ready(target, job('M', 'overwrite'), [{ task: '0', partition: ['dt=1'], files: { m: 'm' } }]);
      await commitJob(testEnv(sb.store), { stagingPath: m });
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/m': 'm' });
    });

    // Keeps protocol.md §5.10: a handle whose entry cannot be read may be past its commit point, so every
    // step exits 1, never 'no job'. The proofs gone are _SUCCESS and the entry's done marker.
    test("a finished job's unreadable table-log entry, its proofs gone: exit 1, the entry may be the job's", async () => {
      const root = dir();
      const target = posix.join(root, 't');
      const k = await ready(target, job('K', 'append'), [{ task: '0', partition: ['dt=1'], files: { k: 'k' } }]);
      await commitJob(testEnv(sb.store), { stagingPath: k });
      const log = posix.join(root, '.stagecommit', 't', '_log');
      await sb.store.delete(posix.join(target, '_SUCCESS'), false);
      await sb.store.delete(posix.join(log, '00000000000000000000.done'), false);
      const entry = posix.join(log, '00000000000000000000.yaml');
      await sb.store.writeFile(entry, (await sb.store.readFile(entry))!.subarray(0, 5));
      for (const [name, step] of [
        ['status', status],
        ['abort', abort],
        ['recover', recover],
      ] as const) {
        const e = await step(testEnv(sb.store), { stagingPath: k }).then(
          () => null,
          (x: unknown) => x,
        );
        assert.ok(e instanceof CorruptManifestError, `${name}: ${String(e)}`);
        assert.match(
          e.message,
          /_job\.yaml: is missing, and an unfinished entry of the table log cannot be read \(.*_log\/00000000000000000000\.yaml: .*\): it may be this job's, past its commit point; nothing was changed: repair or remove that entry, then run the step again$/,
          name,
        );
      }
    });

    // Once the new log has passed its position the job is never committed over that log's commits.
    test('a job staged before its log dir was deleted and made again is refused with exit 6', async () => {
      const root = dir();
      const target = posix.join(root, 't');
      await writeTree(sb.store, target, { 'dt=1/old': 'old' });
      await commitJob(testEnv(sb.store), {
        stagingPath: await ready(target, job('A', 'overwrite'), [
          { task: '0', partition: ['dt=1'], files: { a: 'a' } },
        ]),
      });
      // Staged at log position 0 (say with --staging-dir elsewhere, so 'stagecommit jobs' did not list it).
      const missed = await ready(target, job('J', 'overwrite'), [
        { task: '0', partition: ['dt=1'], files: { j: 'j' } },
      ]);
      await sb.store.delete(posix.join(root, '.stagecommit', 't', '_log'), true);
      // The new log passes J's position: B replaces dt=1 (entry 0), C writes dt=2 (entry 1).
      await commitJob(testEnv(sb.store), {
        stagingPath: await ready(target, job('B', 'overwrite'), [
          { task: '0', partition: ['dt=1'], files: { b: 'b' } },
        ]),
      });
      await commitJob(testEnv(sb.store), {
        stagingPath: await ready(target, job('C', 'append'), [{ task: '0', partition: ['dt=2'], files: { c: 'c' } }]),
      });
      const refused = await commitJob(testEnv(sb.store), { stagingPath: missed }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(refused instanceof ConflictError, `exit 6, not ${String(refused)}`);
      assert.match(
        refused.message,
        /job J cannot check its commit against the table log .*: it is not the log the job was staged against \(the log dir was deleted and made again since\).*nothing was changed; .*stage the job again/,
      );
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/b': 'b', 'dt=2/c': 'c' }, "B's commit stands");
    });

    // The job gave the log a new id when its id was removed.
    test("a job staged in a log deleted and made again exits 6, never replacing the new log's commits", async () => {
      const root = dir();
      const target = posix.join(root, 't');
      await commitJob(testEnv(sb.store), {
        stagingPath: await ready(target, job('A', 'append'), [{ task: '0', partition: ['dt=0'], files: { a: 'a' } }]),
      });
      const logDir = posix.join(root, '.stagecommit', 't', '_log');
      await sb.store.delete(posix.join(logDir, 'log-id.yaml'), false);
      const missed = await ready(target, job('J', 'overwrite'), [
        { task: '0', partition: ['dt=1'], files: { j: 'j' } },
      ]);
      await sb.store.delete(logDir, true);
      await commitJob(testEnv(sb.store), {
        stagingPath: await ready(target, job('K', 'overwrite'), [
          { task: '0', partition: ['dt=1'], files: { k: 'k' } },
        ]),
      });
      await commitJob(testEnv(sb.store), {
        stagingPath: await ready(target, job('L', 'append'), [{ task: '0', partition: ['dt=2'], files: { l: 'l' } }]),
      });
      const refused = await commitJob(testEnv(sb.store), { stagingPath: missed }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(refused instanceof ConflictError, `exit 6, not ${String(refused)}`);
      assert.deepEqual(
        data(await readTree(sb.store, target)),
        { 'dt=0/a': 'a', 'dt=1/k': 'k', 'dt=2/l': 'l' },
        "K's commit stands",
      );
    });

    test("the table log's id damaged: every commit to the table stops naming the way out, nothing changed", async () => {
      const root = dir();
      const target = posix.join(root, 't');
      await commitJob(testEnv(sb.store), {
        stagingPath: await ready(target, job('A', 'append'), [{ task: '0', partition: ['dt=1'], files: { a: 'a' } }]),
      });
      const idFile = posix.join(root, '.stagecommit', 't', '_log', 'log-id.yaml');
      const text = (await sb.store.readFile(idFile))!.toString();
      const l = await ready(target, job('L', 'append'), [{ task: '0', partition: ['dt=2'], files: { l: 'l' } }]);
      const before = await readTree(sb.store, root);
      for (const v of damages(text, 3).filter((_, i) => sampled(fx.name, i))) {
        await sb.store.writeFile(idFile, v.text);
        const refused = await commitJob(testEnv(sb.store), { stagingPath: l }).then(
          () => null,
          (e: unknown) => e,
        );
        assert.ok(refused instanceof CorruptManifestError, `${v.name}: exit 1, not ${String(refused)}`);
        assert.equal(refused.context?.reason, 'table-log-damaged', v.name);
        await sb.store.writeFile(idFile, text);
        assert.deepEqual(data(await readTree(sb.store, root)), data(before), `${v.name}: nothing changed`);
      }
      if (sb.store.caps.realDirectories) {
        // A directory in its place: was the raw EISDIR, with no way out named.
        await sb.store.delete(idFile, false);
        await sb.store.writeFile(posix.join(idFile, 'x'), 'x');
        const refused = await commitJob(testEnv(sb.store), { stagingPath: l }).then(
          () => null,
          (e: unknown) => e,
        );
        assert.ok(
          refused instanceof CorruptManifestError && refused.reason === 'directory',
          `a directory: exit 1, not ${String(refused)}`,
        );
        assert.deepEqual([refused.file, refused.context?.reason], [sb.store.toUri(idFile), 'table-log-damaged']);
        await sb.store.delete(idFile, true);
        await sb.store.writeFile(idFile, text);
      }
      await commitJob(testEnv(sb.store), { stagingPath: l });
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/a': 'a', 'dt=2/l': 'l' });
    });

    // Past the commit point, a lost plan is never made again.
    test('through the CLI: exit 1, one line naming the file, a JSON error; a lost plan is never made again', async (t) => {
      if (fx.inProcess) return t.skip('the CLI cannot open an in-memory store');
      const w = await world();
      const pLayout = new JobLayout(w.p);
      const planFile = (await planFileOf(sb.store, pLayout))!;
      const planText = (await sb.store.readFile(planFile))!.toString();
      const before = await readTree(sb.store, w.root);
      // Cut exactly at a line boundary: the last operation line and the check line gone.
      await sb.store.writeFile(planFile, planText.split('\n').slice(0, -3).join('\n') + '\n');
      const r = await cli(['recover', '--job', sb.uri(w.p), '--json'], { env: sb.env });
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stderr.trim().split('\n').length, 1);
      assert.match(
        r.stderr,
        new RegExp(`${sb.uri(planFile).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: has no 'end:' check line`),
      );
      assert.equal(JSON.parse(r.stdout).error.exitCode, 1);
      // The plan deleted after a kill mid-apply: exit 1, never planned again.
      await sb.store.delete(planFile, false);
      const jobText = (await sb.store.readFile(pLayout.jobFile))!.toString();
      assert.match(jobText, /state: "committing"/);
      for (const args of [
        ['recover', '--job', sb.uri(w.p)],
        ['commit-job', '--job', sb.uri(w.p)],
      ]) {
        const rr = await cli(args, { env: sb.env });
        assert.equal(rr.code, 1, rr.stderr);
        assert.match(
          rr.stderr,
          /_job\.yaml: says the job is past its commit point, but its plan \S+\/_plan\/0-0-[0-9a-f]+\.yaml is missing/,
        );
      }
      await sb.store.writeFile(planFile, planText);
      assert.deepEqual(await readTree(sb.store, w.root), before);
    });
  });
}
