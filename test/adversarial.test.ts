// The tool attacked as a hostile user would (issue "Nothing lost under races…"): racing
// processes with random offsets, every manifest damaged on purpose, stale jobs rolled forward
// after newer commits, an empty lease, a read-only partition. Every store runs the same suite.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { posix } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { CorruptManifestError, StageCommitError } from '../src/errors.js';
import { encodeLease } from '../src/job/lease.js';
import { JobLayout } from '../src/job/layout.js';
import { failAt } from '../src/store/instrumented.js';
import { abort } from '../src/steps/abort.js';
import { commitJob } from '../src/steps/commit-job.js';
import { recover } from '../src/steps/recover.js';
import { cli, type CliResult } from './helpers/cli.js';
import { damages, parseBody, withField, withItem, type Variant } from './helpers/damage.js';
import { libCommitTask, libStage, libStageTask, testEnv, type Scenario } from './helpers/lib.js';
import { storeFixtures, useSandbox, type StoreSandbox } from './helpers/stores.js';
import { data, readTree, writeTree, type Tree } from './helpers/tree.js';

const remote = (store: string) => store !== 'local';
/**
 * Rounds of each race: 50 locally for the races the issue names, fewer for the others; remote
 * stores pay ~0.4 s of start-up per process, so 3 there (STAGECOMMIT_RACE_ROUNDS, or npm run stress, overrides).
 */
const rounds = (store: string, local = 50) => Number(process.env.STAGECOMMIT_RACE_ROUNDS ?? (remote(store) ? 3 : local));

const job = (jobId: string, mode: 'overwrite' | 'append' | 'create', partitionBy: string[] = ['dt']): Scenario => ({
  name: jobId,
  initial: null,
  job: { mode, algorithm: 'v1', partitionBy, jobId },
  tasks: [],
});

/** Starts the CLI after a random offset, with a random delay before each store mutation. */
async function racer(sb: StoreSandbox, args: string[], maxOffsetMs = 40): Promise<CliResult> {
  await sleep(Math.floor(Math.random() * maxOffsetMs));
  return cli(args, { env: { ...sb.env, STAGECOMMIT_TEST_DELAY_MS: String(Math.floor(Math.random() * 4)) } });
}

for (const fx of storeFixtures()) {
  describe(`adversarial on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'a');

    /** The in-process driver that failed is "dead": its lease goes, as a dead pid's lease would be taken over. */
    async function killed(staging: string): Promise<void> {
      for (const e of await sb.store.list(staging)) if (e.name.startsWith('_lease.')) await sb.store.delete(e.path, false);
    }

    /** A job staged, its tasks staged and committed, in-process; returns the staging path. */
    async function ready(target: string, sc: Scenario, tasks: { task: string; partition: string[]; files: Tree }[]): Promise<string> {
      const env = testEnv(sb.store);
      const staging = await libStage(env, target, sc);
      for (const t of tasks) {
        await libStageTask(env, staging, t);
        await libCommitTask(env, staging, t);
      }
      return staging;
    }

    test(`two overwrites of one partition race commit-job, ${rounds(fx.name)} rounds: exactly one lands, the other exits 4 and changes nothing`, async (t) => {
      const wins = { A: 0, B: 0 };
      for (let round = 0; round < rounds(fx.name); round++) {
        const target = posix.join(dir(), 't');
        await writeTree(sb.store, target, { 'dt=1/old': 'old', 'dt=2/keep': 'keep' });
        const [a, b] = await Promise.all(
          ['A', 'B'].map((n) => ready(target, job(`${n}${round}`, 'overwrite'), [{ task: '0', partition: ['dt=1'], files: { [`from-${n}`]: n } }])),
        );
        const [ra, rb] = await Promise.all([racer(sb, ['commit-job', '--job', sb.uri(a!)]), racer(sb, ['commit-job', '--job', sb.uri(b!)])]);
        const where = `round ${round}: exits ${ra.code}/${rb.code}: ${ra.stderr}${rb.stderr}`;
        assert.deepEqual([ra.code, rb.code].sort(), [0, 4], where);
        const [winner, loser, lr] = ra.code === 0 ? ['A', 'B', rb] : ['B', 'A', ra];
        wins[winner as 'A' | 'B']++;
        assert.match(lr.stderr, new RegExp(`job ${loser}${round} conflicts with job ${winner}${round}, which replaced 'dt=1'`), where);
        assert.deepEqual(data(await readTree(sb.store, target)), { [`dt=1/from-${winner}`]: winner, 'dt=2/keep': 'keep' }, where);
        const loserStaging = winner === 'A' ? b! : a!;
        assert.equal(await sb.store.stat(winner === 'A' ? a! : b!), null, `${where}: winner's staging removed`);
        assert.equal(await sb.store.stat(new JobLayout(loserStaging).commitFile), null, `${where}: loser never passed its commit point`);
        await abort(testEnv(sb.store), { stagingPath: loserStaging });
      }
      t.diagnostic(`wins: A ${wins.A}, B ${wins.B}`);
    });

    test(`abort --task races commit-task of the same attempt, ${rounds(fx.name)} rounds: one decision, and its effect holds`, async (t) => {
      const tally = { committed: 0, aborted: 0 };
      for (let round = 0; round < rounds(fx.name); round++) {
        const target = posix.join(dir(), 't');
        await writeTree(sb.store, target, { 'dt=1/old': 'old' });
        const staging = await ready(target, job(`J${round}`, 'append'), []);
        await libStageTask(testEnv(sb.store), staging, { task: '0', partition: ['dt=1'], files: { new: 'new' } });
        const h = sb.uri(staging);
        const [c, a] = await Promise.all([racer(sb, ['commit-task', '--job', h, '--task', '0']), racer(sb, ['abort', '--job', h, '--task', '0'])]);
        const where = `round ${round}: commit-task ${c.code}, abort ${a.code}: ${c.stderr}${a.stderr}`;
        assert.ok((c.code === 0 && a.code === 4) || (c.code === 3 && a.code === 0), where);
        if (a.code === 4) assert.match(a.stderr, /already committed|committing/, where);
        // commit-job never wedges, and an exit-0 commit-task's file is in the table.
        await commitJob(testEnv(sb.store), { stagingPath: staging });
        const want = c.code === 0 ? { 'dt=1/old': 'old', 'dt=1/new': 'new' } : { 'dt=1/old': 'old' };
        assert.deepEqual(data(await readTree(sb.store, target)), want, where);
        tally[c.code === 0 ? 'committed' : 'aborted']++;
      }
      t.diagnostic(`commit won ${tally.committed}, abort won ${tally.aborted}`);
    });

    test(`jobs writing sibling partitions under one new parent race commit-job, ${rounds(fx.name, 6)} rounds: both land`, async () => {
      for (let round = 0; round < rounds(fx.name, 6); round++) {
        const target = posix.join(dir(), 't');
        await writeTree(sb.store, target, { 'dt=0/r=x/old': 'old' });
        const [a, b] = await Promise.all(
          ['a', 'b'].map((r) => ready(target, job(`${r}${round}`, 'append', ['dt', 'r']), [{ task: '0', partition: ['dt=1', `r=${r}`], files: { f: r } }])),
        );
        const rs = await Promise.all([racer(sb, ['commit-job', '--job', sb.uri(a!)]), racer(sb, ['commit-job', '--job', sb.uri(b!)])]);
        assert.deepEqual(rs.map((r) => r.code), [0, 0], `round ${round}: ${rs.map((r) => r.stderr).join('')}`);
        assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/r=x/old': 'old', 'dt=1/r=a/f': 'a', 'dt=1/r=b/f': 'b' });
      }
    });

    test(`two commit-job of one job race, ${rounds(fx.name, 6)} rounds: the data is complete, no exit 1, no staging dir left`, async () => {
      for (let round = 0; round < rounds(fx.name, 6); round++) {
        const target = posix.join(dir(), 't');
        const staging = await ready(target, job(`D${round}`, 'create'), [0, 1, 2].map((i) => ({ task: String(i), partition: [`dt=${i}`], files: { f: String(i) } })));
        const rs = await Promise.all([racer(sb, ['commit-job', '--job', sb.uri(staging)], 80), racer(sb, ['commit-job', '--job', sb.uri(staging)], 80)]);
        const where = `round ${round}: ${rs.map((r) => `${r.code} ${r.stderr}`).join(' | ')}`;
        assert.ok(rs.some((r) => r.code === 0) && rs.every((r) => r.code === 0 || r.code === 4 || r.code === 2), where);
        assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=0/f': '0', 'dt=1/f': '1', 'dt=2/f': '2' }, where);
        assert.equal(await sb.store.stat(staging), null, `${where}: staging dir left behind`);
      }
    });

    test('a stale job past its commit point is never rolled forward over a newer commit', async () => {
      const root = dir();
      const target = posix.join(root, 't');
      await writeTree(sb.store, target, { 'dt=1/old': 'old' });
      const x = await ready(target, job('X', 'overwrite'), [{ task: '0', partition: ['dt=1'], files: { x: 'X' } }]);
      // Y staged before X committed, Z after: X is killed just past its commit point.
      const y = await ready(target, job('Y', 'overwrite'), [{ task: '0', partition: ['dt=1'], files: { y: 'Y' } }]);
      await assert.rejects(commitJob(testEnv(sb.store, failAt(4)), { stagingPath: x })); // lease, log entry, plan; killed before applying
      await killed(x);
      assert.ok(await sb.store.stat(new JobLayout(x).commitFile), 'X is past its commit point');
      const z = await ready(target, job('Z', 'overwrite'), [{ task: '0', partition: ['dt=1'], files: { z: 'Z' } }]);
      const env = { ...sb.env };
      const rz = await cli(['commit-job', '--job', sb.uri(z)], { env });
      assert.equal(rz.code, 4, rz.stderr);
      assert.match(rz.stderr, new RegExp(`job X passed its commit point for 'dt=1' but did not finish.*stagecommit recover --job ${sb.uri(x).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/old': 'old' }, 'Z changed nothing');
      // The operator's cleaner rolls X forward; Y (staged before X's commit) conflicts; Z lands.
      const co = await cli(['clean-orphans', sb.uri(x), '--older-than', '0s', '--delete', '--json'], { env });
      assert.equal(co.code, 0, co.stderr);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/x': 'X' });
      const ry = await cli(['commit-job', '--job', sb.uri(y)], { env });
      assert.equal(ry.code, 4, ry.stderr);
      assert.match(ry.stderr, /job Y conflicts with job X, which replaced 'dt=1'/);
      const rz2 = await cli(['commit-job', '--job', sb.uri(z)], { env });
      assert.equal(rz2.code, 0, rz2.stderr);
      // Whatever is run on the stale job now, Z's data stays.
      for (const args of [['recover', '--job', sb.uri(x)], ['commit-job', '--job', sb.uri(x)], ['clean-orphans', sb.uri(x), '--older-than', '0s', '--delete']]) {
        const r = await cli(args, { env });
        assert.ok(r.code === 0 || r.code === 2, `${args[0]}: ${r.code} ${r.stderr}`);
        assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/z': 'Z' }, args[0]);
      }
    });

    test("a driver killed while writing _SUCCESS leaves its temp; the step run again removes it", async () => {
      const target = posix.join(dir(), 't');
      await writeTree(sb.store, target, { 'dt=1/old': 'old' });
      const staging = await ready(target, job('S', 'append'), [{ task: '0', partition: ['dt=2'], files: { f: 'f' } }]);
      await assert.rejects(commitJob(testEnv(sb.store, failAt(5)), { stagingPath: staging })); // past the commit point, killed mid-apply
      await killed(staging);
      await sb.store.writeFile(posix.join(target, '.stagecommit-tmp-0123456789ab-_SUCCESS'), '{"half":');
      const r = await cli(['recover', '--job', sb.uri(staging)], { env: sb.env });
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(Object.keys(await readTree(sb.store, target)), ['_SUCCESS', 'dt=1/old', 'dt=2/f']);
    });

    test('a lease renewed during a long commit leaves no staging dir behind', async () => {
      const target = posix.join(dir(), 't');
      const staging = await ready(target, job('L', 'create'), [0, 1, 2, 3].map((i) => ({ task: String(i), partition: [`dt=${i}`], files: { f: String(i) } })));
      // Renewed every second (the shortest period); each mutation waits 80 ms, so renewals fall
      // during the commit and around the removal of the staging dir.
      const slow = async () => void (await sleep(80));
      await commitJob(testEnv(sb.store, slow, { leaseTtlMs: 1000 }), { stagingPath: staging });
      await sleep(1200);
      assert.equal(await sb.store.stat(staging), null);
      assert.deepEqual((await sb.store.list(posix.dirname(staging))).map((e) => e.name), ['_log'], 'nothing but the table log in the staging root');
    });

    test('an empty lease file blocks only until the lease TTL, then is taken over', async () => {
      const target = posix.join(dir(), 't');
      const staging = await ready(target, job('E', 'create'), [{ task: '0', partition: ['dt=1'], files: { f: 'f' } }]);
      await sb.store.writeFile(posix.join(staging, '_lease.0.yaml'), '');
      const ttl = { leaseTtlMs: 1500 };
      await assert.rejects(commitJob(testEnv(sb.store, undefined, ttl), { stagingPath: staging }), (e: StageCommitError) => e.exitCode === 4 && /being written/.test(e.message));
      await sleep(2600);
      await commitJob(testEnv(sb.store, undefined, ttl), { stagingPath: staging });
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/f': 'f' });
    });

    describe('damaged manifests: exit 1 naming the file, nothing changed', () => {
      /**
       * One table with every manifest kind in place: job J (staged, two tasks committed, an
       * aborted attempt) holding `_job.yaml`, claims, decisions and a lease; job K's log entry
       * after J's stage (voided: K gave up), and job P past its commit point (its `_commit.yaml`).
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
        const k = await ready(target, job('K', 'overwrite'), [{ task: '0', partition: ['dt=1'], files: { k: 'k' } }]);
        await assert.rejects(commitJob(testEnv(sb.store, failAt(3)), { stagingPath: k })); // holds log entry 0, no plan
        await killed(k);
        await abort(testEnv(sb.store), { stagingPath: k }); // gives it up: entry 0 is void
        const p = await ready(posix.join(root, 'other'), job('P', 'append'), [{ task: '0', partition: ['dt=5'], files: { p: 'p' } }]);
        await assert.rejects(commitJob(testEnv(sb.store, failAt(5)), { stagingPath: p })); // past its commit point, killed mid-apply
        await killed(p);
        const layout = new JobLayout(j);
        const log = posix.join(root, '.stagecommit', 't', '_log');
        return { root, j, p, layout, log, entry: posix.join(log, '00000000000000000000.yaml'), done: posix.join(log, '00000000000000000000.done') };
      }

      async function expectRefused(root: string, file: string, variants: readonly Variant[], step: () => Promise<unknown>): Promise<number> {
        const good = (await sb.store.readFile(file))!;
        const before = await readTree(sb.store, root);
        let n = 0;
        for (const v of variants) {
          await sb.store.writeFile(file, v.text);
          const err = await step().then(
            () => null,
            (e: unknown) => e,
          );
          assert.ok(err instanceof CorruptManifestError, `${file}: ${v.name}: expected exit 1, got ${err === null ? 'success' : String(err)}`);
          assert.ok(err.message.startsWith(sb.store.toUri(file)), `${v.name}: the message names the file: ${err.message}`);
          await sb.store.writeFile(file, good);
          assert.deepEqual(await readTree(sb.store, root), before, `${file}: ${v.name}: something changed`);
          n++;
        }
        return n;
      }

      /** Remote stores (and HDFS re-reading short files) run a sample of the variants. */
      const sample = (vs: Variant[]) => (remote(fx.name) ? vs.filter((_, i) => i % 15 === 0) : vs);

      test('every kind, cut at every line and at bytes, lines removed, bytes flipped, fields removed or retyped, paths escaping', async (t) => {
        const w = await world();
        const env = () => testEnv(sb.store);
        const jLayout = w.layout;
        const claim = jLayout.claimFile(0, '0');
        const claimText = (await sb.store.readFile(claim))!.toString();
        const jobText = (await sb.store.readFile(jLayout.jobFile))!.toString();
        const decision = (await sb.store.list(jLayout.decisionsDir(0))).find((e) => e.name.endsWith('_0_1.yaml'))!.path;
        const pLayout = new JobLayout(w.p);
        const planText = (await sb.store.readFile(pLayout.commitFile))!.toString();
        const entryText = (await sb.store.readFile(w.entry))!.toString();
        const lease = posix.join(w.j, '_lease.0.yaml');
        const leaseText = encodeLease({ op: 'commit-job', owner: 'other', host: 'elsewhere', pid: 1, acquiredAtMs: 0, expiresAtMs: Date.now() + 3_600_000 });
        const forged = (text: string, cases: [string, string, string][]): Variant[] => cases.map(([name, key, value]) => ({ name, text: withField(text, key, value) }));
        const counts: Record<string, number> = {};

        counts.job = await expectRefused(w.root, jLayout.jobFile, [
          ...sample(damages(jobText, 1)),
          { name: "state edited to 'committed' (not re-signed)", text: jobText.replace('state: "staged"', 'state: "committed"') },
          ...forged(jobText, [['targetPath escapes', 'targetPath', '"/a/../../victim"'], ['targetPath relative', 'targetPath', '"victim"'], ['staging elsewhere', 'staging', '"/elsewhere"'], ['tasks 0', 'tasks', '0'], ['v2 overwrite', 'algorithm', '"v2"'], ['target not targetPath', 'target', '"/elsewhere"']]),
        ], () => commitJob(env(), { stagingPath: w.j }));

        counts.claim = await expectRefused(w.root, claim, [
          ...sample(damages(claimText, 2)),
          ...forged(claimText, [['root escapes', 'root', '"../../../victim"'], ['root absolute', 'root', '"/etc"'], ['root of another task', 'root', '"_temporary/0/1"'], ['task renamed', 'task', '"7"']]),
          { name: 'file path escapes', text: withItem(claimText, 'files', 0, (o) => (o.path = 'dt=1/../../x')) },
          { name: 'file path absolute', text: withItem(claimText, 'files', 0, (o) => (o.path = '/etc/passwd')) },
          { name: 'file outside the partitions', text: withItem(claimText, 'files', 0, (o) => (o.path = 'loose')) },
        ], () => commitJob(env(), { stagingPath: w.j }));

        counts.decision = await expectRefused(w.root, decision, sample(damages((await sb.store.readFile(decision))!.toString(), 3)), () => recover(env(), { stagingPath: w.j }));

        await sb.store.writeFile(lease, leaseText);
        counts.lease = await expectRefused(w.root, lease, sample(damages(leaseText, 4)).filter((v) => v.text !== ''), () => commitJob(env(), { stagingPath: w.j }));

        await sb.store.delete(lease, false);
        counts.logEntry = await expectRefused(w.root, w.entry, [
          ...sample(damages(entryText, 5)),
          ...forged(entryText, [['staging escapes', 'staging', '"/a/../b"'], ['touches escape', 'touches', '["../x"]'], ['number differs', 'number', '3']]),
        ], () => commitJob(env(), { stagingPath: w.j }));

        counts.logDone = await expectRefused(w.root, w.done, sample(damages((await sb.store.readFile(w.done))!.toString(), 6)), () => commitJob(env(), { stagingPath: w.j }));

        const ops = parseBody(planText).find((l) => l.key === 'ops')!.items!.length;
        counts.plan = await expectRefused(w.root, pLayout.commitFile, [
          ...sample(damages(planText, 7)),
          ...[['from', 's:../../etc'], ['to', 't:../x'], ['to', 't:/abs'], ['from', 's:_job.yaml'], ['to', 't:a//b']].map(([k, v]) => ({ name: `op ${k} '${v}'`, text: withItem(planText, 'ops', ops - 1, (o) => (o[k!] = v)) })),
          { name: 'delete of the whole target', text: withItem(planText, 'ops', ops - 1, (o) => Object.assign(o, { op: 'delete', path: 't:', dir: true })) },
          ...forged(planText, [['phaseCount too small', 'phaseCount', '0'], ['another job', 'jobId', '"Q"']]),
        ], () => recover(env(), { stagingPath: w.p }));

        t.diagnostic(`damaged variants refused: ${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ')}`);
        // Undamaged, everything still works: J commits (K's entry is void), P rolls forward.
        await commitJob(env(), { stagingPath: w.j });
        await recover(env(), { stagingPath: w.p });
        assert.deepEqual(data(await readTree(sb.store, posix.join(w.root, 't'))), { 'dt=1/a': 'a', 'dt=2/b': 'b', 'dt=9/keep': 'k' });
        assert.deepEqual(data(await readTree(sb.store, posix.join(w.root, 'other'))), { 'dt=5/p': 'p' });
      });

      test('through the CLI: exit 1, one line naming the file, a JSON error; a lost plan past the commit point is never made again', async () => {
        const w = await world();
        const pLayout = new JobLayout(w.p);
        const planText = (await sb.store.readFile(pLayout.commitFile))!.toString();
        const before = await readTree(sb.store, w.root);
        // Cut exactly at a line boundary: the last operation line and the check line gone.
        await sb.store.writeFile(pLayout.commitFile, planText.split('\n').slice(0, -3).join('\n') + '\n');
        const r = await cli(['recover', '--job', sb.uri(w.p), '--json'], { env: sb.env });
        assert.equal(r.code, 1, r.stderr);
        assert.equal(r.stderr.trim().split('\n').length, 1);
        assert.match(r.stderr, new RegExp(`${sb.uri(pLayout.commitFile).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: has no 'end:' check line`));
        assert.equal(JSON.parse(r.stdout).error.exitCode, 1);
        // The plan deleted after a kill mid-apply: exit 1, never planned again.
        await sb.store.delete(pLayout.commitFile, false);
        const jobText = (await sb.store.readFile(pLayout.jobFile))!.toString();
        assert.match(jobText, /state: "committing"/);
        for (const args of [['recover', '--job', sb.uri(w.p)], ['commit-job', '--job', sb.uri(w.p)]]) {
          const rr = await cli(args, { env: sb.env });
          assert.equal(rr.code, 1, rr.stderr);
          assert.match(rr.stderr, /_commit\.yaml: is missing, but the job is past its commit point/);
        }
        await sb.store.writeFile(pLayout.commitFile, planText);
        assert.deepEqual(await readTree(sb.store, w.root), before);
      });
    });

    test('committed output changed after commit-task (a file removed, one added, a symbolic link) is refused before the commit point', async (t) => {
      for (const change of ['removed', 'added', ...(fx.name === 'local' ? ['symlink'] : [])]) {
        const target = posix.join(dir(), 't');
        await writeTree(sb.store, target, { 'dt=1/old': 'old', 'dt=2/old': 'old' });
        const staging = await ready(target, job(`C-${change}`, 'overwrite'), [{ task: '0', partition: ['dt=1'], files: { a: 'a' } }, { task: '1', partition: ['dt=2'], files: { b: 'b' } }]);
        const root = posix.join(staging, (await sb.store.stat(posix.join(staging, '_temporary/0/1'))) ? '_temporary/0/1' : `_temporary/0/_temporary/attempt_C-${change}_1_0`);
        if (change === 'removed') await sb.store.delete(posix.join(root, 'dt=2/b'), false);
        if (change === 'added') await sb.store.writeFile(posix.join(root, 'dt=2/extra'), 'x');
        if (change === 'symlink') execFileSync('ln', ['-s', '/etc/passwd', posix.join(root, 'dt=2/link')]);
        const before = await readTree(sb.store, target);
        const r = await cli(['commit-job', '--job', sb.uri(staging)], { env: sb.env });
        assert.equal(r.code, 4, `${change}: ${r.stderr}`);
        assert.match(r.stderr, /committed output of task 1 .* (has lost 'dt=2\/b'|holds 'dt=2\/extra'|holds 'dt=2\/link')/);
        assert.deepEqual(await readTree(sb.store, target), before, `${change}: target unchanged`);
      }
      t.diagnostic('removed, added and link refused');
    });

    test('scripts that would silently do nothing: never-staged attempt after recover, task id 01, create with the staging dir inside the target', async () => {
      const target = posix.join(dir(), 't');
      const staging = await ready(target, { ...job('N', 'overwrite'), job: { ...job('N', 'overwrite').job, tasks: 2 } }, [{ task: '0', partition: ['dt=1'], files: { a: 'a' } }]);
      await libStageTask(testEnv(sb.store), staging, { task: '1', partition: ['dt=2'], files: { b: 'b' } });
      assert.deepEqual((await recover(testEnv(sb.store), { stagingPath: staging })).tasksToRun, ['1']);
      const r = await cli(['commit-task', '--job', sb.uri(staging), '--task', '1'], { env: sb.env });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /was never staged in app attempt 1 \(recover started it/);
      const z = await cli(['commit-task', '--job', sb.uri(staging), '--task', '01'], { env: sb.env });
      assert.equal(z.code, 2, z.stderr);
      assert.match(z.stderr, /write numbers without leading zeros \('1'\)/);
      const fresh = posix.join(dir(), 'new');
      const c = await cli(['stage', '--target', sb.uri(fresh), '--staging-dir', sb.uri(posix.join(fresh, '.stg'))], { env: sb.env });
      assert.equal(c.code, 2, c.stderr);
      assert.match(c.stderr, /inside the target/);
    });

    test("a plan whose table-log entry was lost or reused is never rolled forward", async () => {
      const root = dir();
      const target = posix.join(root, 't');
      await writeTree(sb.store, target, { 'dt=1/old': 'old' });
      const a = await ready(target, job('A', 'overwrite'), [{ task: '0', partition: ['dt=1'], files: { fa: 'A' } }]);
      await assert.rejects(commitJob(testEnv(sb.store, failAt(5)), { stagingPath: a })); // past its commit point
      await killed(a);
      await sb.store.delete(posix.join(root, '.stagecommit', 't', '_log', '00000000000000000000.yaml'), false); // the entry is lost
      const b = await ready(target, job('B', 'append'), [{ task: '0', partition: ['dt=1'], files: { fb: 'B' } }]);
      await commitJob(testEnv(sb.store), { stagingPath: b }); // takes number 0 again
      const r = await cli(['recover', '--job', sb.uri(a)], { env: sb.env });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /_commit\.yaml: field 'logEntry' names table-log entry 0, which is job B's/);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'dt=1/fb': 'B', 'dt=1/old': 'old' });
    });

    test('a read-only partition directory is found before the commit point (local: an immutable directory)', async (t) => {
      if (fx.name !== 'local') return t.skip('write access is checked on the local filesystem');
      const target = posix.join(dir(), 't');
      await writeTree(sb.store, target, { 'dt=1/old': 'old', 'dt=2/keep': 'k' });
      const staging = await ready(target, job('R', 'overwrite'), [{ task: '0', partition: ['dt=1'], files: { new: 'n' } }, { task: '1', partition: ['dt=3'], files: { c: 'c' } }]);
      try {
        execFileSync('chattr', ['+i', posix.join(target, 'dt=1')]);
      } catch {
        return t.skip('chattr +i is not available here');
      }
      try {
        const before = await readTree(sb.store, target);
        const r = await cli(['commit-job', '--job', staging], { env: sb.env });
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stderr, /dt=1: cannot change this directory/);
        assert.deepEqual(await readTree(sb.store, target), before);
        assert.equal(await sb.store.stat(new JobLayout(staging).commitFile), null, 'not past the commit point');
      } finally {
        execFileSync('chattr', ['-i', posix.join(target, 'dt=1')]);
      }
      const r = await cli(['commit-job', '--job', staging], { env: sb.env });
      assert.equal(r.code, 0, r.stderr);
    });
  });
}
