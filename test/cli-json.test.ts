// --json through the CLI: every command's document has the fields the README's JSON table
// names, and every failure (usage errors included) is one error document with exit 2…5.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { versionCheck } from '../src/cli/version.js';
import { localFiles } from '../testing/jobs.js';
import { runMain } from '../testing/main.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';

const JSON_DOC = readFileSync(fileURLToPath(new URL('../../docs/json.md', import.meta.url)), 'utf8');

/** docs/json.md's table: command → the fields listed before any parenthesis. */
function documentedFields(): Map<string, string[]> {
  const rows = JSON_DOC.split('\n').filter((l) => /^\| `/.test(l));
  return new Map(
    rows.map((r) => {
      const [, cmd, fields] = r.split('|').map((c) => c.trim());
      return [cmd!.replace(/`/g, ''), [...fields!.split('(')[0]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)];
    }),
  );
}

function assertFields(doc: Record<string, unknown>, command: string): void {
  const fields = documentedFields().get(command);
  assert.ok(fields?.length, `docs/json.md's table has a row for ${command}`);
  for (const f of fields!) assert.ok(f in doc, `${command} --json has '${f}' (got ${Object.keys(doc).join(', ')})`);
  for (const [k, v] of Object.entries(doc)) {
    if (k.endsWith('AtMs') && v !== null)
      assert.equal(doc[k.slice(0, -2)], new Date(v as number).toISOString(), `${k} has its ISO-8601 twin`);
  }
}

async function json(args: string[], env: Record<string, string>, code = 0): Promise<Record<string, unknown>> {
  const r = await runMain(['--json', ...args], env);
  assert.equal(r.code, code, r.stderr);
  assert.doesNotThrow(() => JSON.parse(r.stdout), `one JSON document on stdout for ${args.join(' ')}: ${r.stdout}`);
  return JSON.parse(r.stdout);
}

for (const fx of storeFixtures({ transport: true })) {
  describe(`--json documents on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'j');

    /** `jobs` on the table, the directory it is in and that directory's .stagecommit list `job`. */
    const expectJobsListed = async (target: string, job: string, st: Record<string, unknown>) => {
      const listed = await json(['jobs', sb.uri(target)], sb.env);
      assertFields(listed, 'jobs');
      assert.deepEqual(
        (listed.jobs as { handle: string }[]).map((j) => j.handle),
        [job],
      );
      const owner = (listed.jobs as { owner: unknown }[])[0]!.owner;
      assert.deepEqual(owner, (st.job as { owner: unknown }).owner, 'owner is one object in jobs and status');
      // The directory the table is in, and its .stagecommit, list the jobs of the tables in it.
      for (const dir of [posix.dirname(target), posix.join(posix.dirname(target), '.stagecommit')]) {
        assert.deepEqual(
          ((await json(['jobs', sb.uri(dir)], sb.env)).jobs as { handle: string }[]).map((j) => j.handle),
          [job],
          dir,
        );
      }
    };

    /** A job run to its end: commit-job --dry-run, commit-job twice, status; the status document. */
    const committedJobDocs = async (root: string, f: string) => {
      const target2 = posix.join(root, 'two');
      const job2 = (await json(['stage', '--target', sb.uri(target2)], sb.env)).handle as string;
      await json(['stage', '--job', job2, '--task', '0', f], sb.env);
      await json(['commit-task', '--job', job2, '--task', '0'], sb.env);
      const plan = await json(['commit-job', '--job', job2, '--dry-run'], sb.env);
      assertFields(plan, 'commit-job --dry-run');
      assert.equal(plan.dryRun, true);
      const done = await json(['commit-job', '--job', job2], sb.env);
      assertFields(done, 'commit-job');
      assert.equal(done.handle, job2);
      const again = await json(['commit-job', '--job', job2], sb.env);
      assertFields(again, 'commit-job');
      assert.equal(again.outcome, 'already-committed');
      const finished = await json(['status', '--job', job2], sb.env);
      assertFields(finished, 'status of a finished job');
      assert.equal(finished.finished, true);
      assert.equal(finished.handle, job2);
      return finished;
    };

    /**
     * A rerun that finds its job committed: its time in both forms, as status gives it; recover
     * on it lists no committed tasks it cannot know (null), and no commits it finished.
     */
    const rerunDocs = async (root: string, f: string, finished: Record<string, unknown>) => {
      const rerun = ['stage', '--target', sb.uri(posix.join(root, 'rerun')), '--job-id', 'r1', '--tasks', '1'];
      const r1 = (await json(rerun, sb.env)).handle as string;
      await json(['stage', '--job', r1, '--task', '0', f], sb.env);
      await json(['commit-task', '--job', r1, '--task', '0'], sb.env);
      await json(['commit-job', '--job', r1], sb.env);
      const committed = await json(rerun, sb.env);
      assertFields(committed, 'stage --target');
      assert.equal(committed.state, 'committed');
      assert.equal(typeof committed.committedAtMs, 'number');
      const rec2 = await json(['recover', '--job', r1], sb.env);
      assertFields(rec2, 'recover');
      assert.equal(rec2.committedTasks, null);
      assert.deepEqual(rec2.commitsFinished, []);
      assert.equal(typeof finished.finished, 'boolean', "status's finished is a boolean; recover has no such field");
      assert.ok(!('finished' in rec2));
    };

    test('every command prints the fields the README names, with one name per meaning', async () => {
      const root = dir();
      const target = posix.join(root, 'sales');
      const staged = await json(['stage', '--target', sb.uri(target), '--partition-by', 'dt', '--tasks', '2'], sb.env);
      assertFields(staged, 'stage --target');
      assert.equal(staged.tasksDeclared, 2);
      const job = staged.handle as string;
      const [f] = await localFiles({ 'a.csv': 'abc' });
      const files = await json(['stage', '--job', job, '--task', '0', '--partition', 'dt=1', f!], sb.env);
      assertFields(files, 'stage FILE… / DIR / --print-path');
      assert.equal(files.files, 1);
      assert.equal(files.bytes, 3);
      assert.deepEqual(files.fileList, ['dt=1/a.csv']);
      assert.equal(files.task, '0', 'a task id is a string, also when it is a number');
      assert.equal(files.writeDir, `${files.attemptDir}/dt=1`);
      const printed = await json(['stage', '--job', job, '--task', '1', '--partition', 'dt=2', '--print-path'], sb.env);
      assertFields(printed, 'stage FILE… / DIR / --print-path');
      assert.equal(printed.files, 0);
      assert.equal(printed.handle, job);
      const task = await json(['commit-task', '--job', job, '--task', '0'], sb.env);
      assertFields(task, 'commit-task');
      assert.equal(task.files, 1);
      const st = await json(['status', '--job', job], sb.env);
      assertFields(st, 'status');
      assert.equal(st.handle, job);
      assert.deepEqual(st.tasksToRun, ['1']);
      assert.equal((st.job as { tasksDeclared: number }).tasksDeclared, 2);
      const manifest = st.job as { stagedAt: string; stagedAtMs: number; staging?: string };
      assert.equal(manifest.stagedAt, new Date(manifest.stagedAtMs).toISOString());
      assert.equal(manifest.staging, undefined, 'the handle has one name: handle');
      const recPlan = await json(['recover', '--job', job, '--dry-run'], sb.env);
      assertFields(recPlan, 'recover --dry-run');
      assert.deepEqual(recPlan.tasksToRun, ['1']);
      const rec = await json(['recover', '--job', job], sb.env);
      assertFields(rec, 'recover');
      assert.deepEqual(rec.tasksToRun, ['1']);
      const incomplete = await json(['commit-job', '--job', job], sb.env, 5);
      assert.deepEqual(Object.keys(incomplete), ['ok', 'error']);
      const incompleteError = incomplete.error as { message: string; detail: { reason: string } };
      assert.deepEqual(incomplete.error, {
        kind: 'IncompleteError',
        reason: incompleteError.detail.reason,
        message: incompleteError.message,
        exitCode: 5,
        retryable: false,
        detail: incompleteError.detail,
      });
      const abPlan = await json(['abort', '--job', job, '--task', '1', '--dry-run'], sb.env);
      assertFields(abPlan, 'abort --dry-run');
      await expectJobsListed(target, job, st);
      const ab = await json(['abort', '--job', job, '--task', '1'], sb.env);
      assertFields(ab, 'abort');
      const orphans = await json(['clean-orphans', sb.uri(root)], sb.env);
      assertFields(orphans, 'clean-orphans');

      const finished = await committedJobDocs(root, f!);
      await rerunDocs(root, f!, finished);
    });
  });
}

describe('--json outside a job', () => {
  test('--version --json is a JSON document with ok and the version', async () => {
    const doc = await json(['--version'], {});
    const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as {
      version: string;
    };
    assert.deepEqual(doc, { ok: true, version: pkg.version });
  });

  test('--version --verbose --json is the install check as a document', async () => {
    const doc = await json(['--version', '--verbose'], {});
    assert.equal(doc.ok, true);
    assert.deepEqual(Object.keys(doc).sort(), ['library', 'node', 'ok', 'package', 'version']);
    assert.match(doc.library as string, /dist\/bundle\/index\.js$/);
  });

  test('the install check of a package without its library throws naming the file and why', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'sc-pkg-'));
    await writeFile(path.join(root, 'package.json'), JSON.stringify({ name: 'stagecommit', version: '9.9.9' }));
    assert.throws(
      () => versionCheck(pathToFileURL(path.join(root, 'dist', 'cli.js')).href),
      /the library .*dist\/bundle\/index\.js does not load \(Error \[ERR_MODULE_NOT_FOUND\]: .*\): reinstall stagecommit/,
    );
    await rm(root, { recursive: true, force: true });
  });

  test('--help --json and help CMD --json: the help text in a document', async () => {
    for (const args of [['--help'], ['stage', '--help'], ['help', 'abort']]) {
      const doc = await json(args, {});
      assert.equal(doc.ok, true, args.join(' '));
      assert.match(doc.help as string, /^Usage: stagecommit/, args.join(' '));
    }
  });

  test('completion --json gives the script in a document', async () => {
    const doc = await json(['completion', 'bash'], {});
    assert.equal(doc.ok, true);
    assert.equal(doc.shell, 'bash');
    assert.match(doc.script as string, /^# stagecommit completion for bash/);
  });
});

describe('--json usage errors', () => {
  for (const args of [
    ['stage', '--mode', 'bogus'],
    ['stage', '--target', '/tmp/x', '--tasks', '0'],
    ['bogus'],
    ['clean-orphans'],
    ['commit-task', '--job', 'x'],
  ]) {
    test(`${args.join(' ')}: exit 2, one error document`, async () => {
      const doc = await json(args, {}, 2);
      assert.equal(doc.ok, false);
      const err = doc.error as { kind: string; reason: string; message: string; exitCode: number };
      assert.equal(err.kind, 'UsageError');
      assert.equal(typeof err.reason, 'string');
      assert.equal(err.exitCode, 2);
      assert.ok(err.message.length > 0);
    });
  }
});
