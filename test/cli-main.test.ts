// main() run in-process with its output captured: the same exit codes, results and messages as
// the installed command, without a child process.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { posix } from 'node:path';
import { MANY_FILES, tightenHeapFor } from '../src/cli/heap.js';
import { runMain } from '../testing/main.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree, writeTree } from '../testing/tree.js';

for (const fx of storeFixtures()) {
  describe(`main() in-process on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'm');

    test('a whole job through main(): handle on stdout, files under the target, exit 0', async () => {
      const target = posix.join(dir(), 'sales');
      const staged = await runMain(['stage', '--target', sb.uri(target), '--tasks', '1'], sb.env);
      assert.equal(staged.code, 0, staged.stderr);
      const job = staged.stdout.trim();
      const put = await runMain(['stage', '--job', job, '--task', '0', '--name', 'part-0.csv', '-'], sb.env, 'a,b\n');
      assert.equal(put.code, 0, put.stderr);
      assert.equal((await runMain(['commit-task', '--job', job, '--task', '0'], sb.env)).code, 0);
      const done = await runMain(['--json', 'commit-job', '--job', job], sb.env);
      assert.equal(done.code, 0, done.stderr);
      assert.equal(JSON.parse(done.stdout).files, 1);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'part-0.csv': 'a,b\n' });
    });

    test('bad input through main(): exit 2, one line on stderr, the JSON error doc on stdout', async () => {
      const target = posix.join(dir(), 'full');
      await writeTree(sb.store, target, { 'old.csv': 'old' });
      const r = await runMain(['--json', 'stage', '--target', sb.uri(target)], sb.env);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /already exists/);
      assert.equal(r.stderr.trim().split('\n').length, 1);
      assert.equal(JSON.parse(r.stdout).error.exitCode, 2);
      assert.deepEqual(data(await readTree(sb.store, target)), { 'old.csv': 'old' });
    });
  });
}

test('the heap is tightened once, for a job of 100,000 files or more, never over the flags node was given', () => {
  assert.equal(tightenHeapFor(99_999, []), false, 'a small job');
  assert.equal(tightenHeapFor(MANY_FILES, ['--freeze-flags-after-init']), false, 'V8 would abort the process');
  assert.equal(tightenHeapFor(MANY_FILES, ['--heap-growing-percent=200']), false, "the user's own growth");
  assert.equal(tightenHeapFor(MANY_FILES, ['--max-old-space-size=4096']), true);
  assert.equal(tightenHeapFor(2 * MANY_FILES, []), false, 'set once');
});

describe('main() in-process, no store', () => {
  test('--help goes to the given stdout and exits 0', async () => {
    const r = await runMain(['commit-job', '--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /Usage: stagecommit commit-job/);
  });

  test('an unknown command is exit 2 with a suggestion on the given stderr', async () => {
    const r = await runMain(['comit-job']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown command 'comit-job'.*\n.*commit-job/s);
  });
});
