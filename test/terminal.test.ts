// Every step ends on a real terminal (protocol.md §5.13): one of zero width, one of normal
// width with its spinner, and signals while a commit runs. Local store only: these test the
// terminal, not the store.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cli } from '../testing/cli.js';
import { commitJob, localFiles } from '../testing/jobs.js';
import { printable } from '../src/cli/ui.js';
import { libCommitTask, libStage, libStageTask, testEnv } from '../testing/lib.js';
import { HIDE_CURSOR, havePty, SHOW_CURSOR, underPty, type PtyResult } from '../testing/pty.js';
import { localFixture, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree } from '../testing/tree.js';

const FILES = { 'a.csv': 'a\n', 'b.csv': 'b\n' };

function describeRun(r: PtyResult): string {
  return `exit ${r.code} after ${r.ms} ms, ${r.bytes} bytes${r.stuck ? ', killed by the test' : ''}: ${JSON.stringify(r.output.slice(0, 600))}`;
}

describe(
  'commit-job on a terminal',
  { skip: !havePty && 'util-linux script (/usr/bin/script) is needed to make a terminal' },
  () => {
    let sb: StoreSandbox;
    const newDir = useSandbox(localFixture, (s) => (sb = s), 'tty');

    /**
     * A job with two committed tasks, ready for commit-job (staged in-process: only the commit under test runs as a
     * CLI).
     */
    async function job(): Promise<{ target: string; handle: string }> {
      const target = newDir();
      const env = testEnv(sb.store);
      const handle = await libStage(env, target, {
        name: 'tty',
        initial: null,
        job: { mode: 'create', algorithm: 'v1', tasks: 2 },
        tasks: [],
      });
      for (const [task, name] of [
        ['0', 'a.csv'],
        ['1', 'b.csv'],
      ] as const) {
        await libStageTask(env, handle, { task, files: { [name]: FILES[name] } });
        await libCommitTask(env, handle, { task, files: {} });
      }
      return { target, handle };
    }

    async function assertCommitted(target: string): Promise<void> {
      assert.deepEqual(data(await readTree(sb.store, target)), FILES);
    }

    test('0 columns: the commit ends at once with exit 0, without a spinner, and prints little', async () => {
      const { target, handle } = await job();
      const r = await underPty(['commit-job', '--job', handle], { cols: 0, rows: 0, timeoutMs: 8000 });
      assert.equal(r.stuck, false, describeRun(r));
      assert.equal(r.code, 0, describeRun(r));
      assert.ok(r.ms < 5000, describeRun(r));
      assert.ok(r.bytes < 64 * 1024, describeRun(r));
      assert.ok(!r.output.includes(HIDE_CURSOR), `no spinner on a terminal without width: ${describeRun(r)}`);
      assert.match(r.output, /_SUCCESS\r?\n.*committed job .*: 2 file\(s\)/s);
      await assertCommitted(target);
    });

    test('0 columns: SIGTERM in the middle of a slow commit ends it at once; running it again finishes it', async () => {
      const { target, handle } = await job();
      let sentAt = 0;
      const r = await underPty(['commit-job', '--job', handle, '--verbose'], {
        cols: 0,
        rows: 0,
        timeoutMs: 8000,
        env: { STAGECOMMIT_TEST_DELAY_MS: '500' },
        onOutput: (text, cli) => {
          // Past its commit point and at work: by now a spinner would have been drawing for a while.
          if (!sentAt && text.includes('publishing')) {
            sentAt = Date.now();
            process.kill(cli.pid, 'SIGTERM');
          }
        },
      });
      assert.equal(r.stuck, false, describeRun(r));
      assert.ok(sentAt, describeRun(r));
      assert.equal(r.code, 128 + 15, describeRun(r));
      assert.ok(r.bytes < 64 * 1024, describeRun(r));
      const again = await commitJob(sb, handle);
      assert.equal(again.code, 0, again.stderr);
      await assertCommitted(target);
    });

    test('80 columns: the spinner runs, ends, and gives the cursor back', async () => {
      const { target, handle } = await job();
      // Slow mutations, so the commit lasts long enough for the spinner to draw.
      const r = await underPty(['commit-job', '--job', handle], {
        cols: 80,
        rows: 24,
        timeoutMs: 8000,
        env: { STAGECOMMIT_TEST_DELAY_MS: '60' },
      });
      assert.equal(r.stuck, false, describeRun(r));
      assert.equal(r.code, 0, describeRun(r));
      assert.ok(r.output.includes(HIDE_CURSOR), `a spinner: ${describeRun(r)}`);
      assert.ok(
        r.output.lastIndexOf(SHOW_CURSOR) > r.output.lastIndexOf(HIDE_CURSOR),
        `the cursor is shown again: ${describeRun(r)}`,
      );
      assert.ok(r.bytes < 64 * 1024, describeRun(r));
      assert.match(r.output, /committed job .*: 2 file\(s\)/);
      await assertCommitted(target);
    });

    test('80 columns: no spinner frame is drawn after a step prints its result', async () => {
      const target = newDir();
      const handle = (await cli(['stage', '--target', sb.uri(target)], { env: sb.env })).stdout.trim();
      const files = await localFiles(Object.fromEntries(['a', 'b', 'c'].map((n) => [`${n}.csv`, `${n}\n`])));
      assert.equal((await cli(['stage', '--job', handle, '--task', '0', ...files], { env: sb.env })).code, 0);
      const env = { ...sb.env, STAGECOMMIT_TEST_DELAY_MS: '150' };
      for (const args of [
        ['commit-task', '--job', handle, '--task', '0'],
        ['commit-job', '--job', handle],
      ]) {
        const r = await underPty(args, { cols: 100, rows: 24, timeoutMs: 15000, env });
        assert.equal(r.code, 0, describeRun(r));
        assert.ok(r.output.includes(HIDE_CURSOR), `a spinner: ${describeRun(r)}`);
        const result = r.output.search(/committed (task 0|job)/);
        assert.ok(result > 0, describeRun(r));
        // ora draws a frame as a braille dot pattern: none after the result line.
        assert.doesNotMatch(r.output.slice(result), /[\u2800-\u28ff]/, describeRun(r));
        if (args[0] === 'commit-task') assert.match(r.output, /claiming 3\/3/, `the count moves: ${describeRun(r)}`);
      }
    });

    test('80 columns: stage shows files and bytes as they go; a pipe, --json and --quiet show none', async () => {
      const target = newDir();
      const handle = (await cli(['stage', '--target', sb.uri(target)], { env: sb.env })).stdout.trim();
      const files = await localFiles(
        Object.fromEntries(['a', 'b', 'c', 'd'].map((n) => [`${n}.bin`, 'x'.repeat(300 * 1024)])),
      );
      // Slow mutations, so the stage lasts long enough for the spinner to draw its counts.
      const env = { ...sb.env, STAGECOMMIT_TEST_DELAY_MS: '150' };
      const args = (task: string) => ['stage', '--job', handle, '--task', task, ...files];
      const r = await underPty(args('0'), { cols: 100, rows: 24, timeoutMs: 15000, env });
      assert.equal(r.code, 0, describeRun(r));
      assert.match(r.output, /staging files \d\/4, [\d.]+ (B|KiB|MiB)\/1\.2 MiB/, describeRun(r));
      for (const quiet of [['--json'], ['--quiet']]) {
        const q = await underPty([...quiet, ...args(`q${quiet[0]}`)], { cols: 100, rows: 24, timeoutMs: 15000, env });
        assert.equal(q.code, 0, describeRun(q));
        assert.doesNotMatch(q.output, /staging files/, describeRun(q));
        assert.ok(!q.output.includes(HIDE_CURSOR), describeRun(q));
      }
      const piped = await cli(args('p'), { env });
      assert.equal(piped.code, 0, piped.stderr);
      assert.equal(piped.stderr, 'staged 4 file(s) for task p attempt 0\n');
    });

    for (const [signal, how] of [
      ['SIGINT', 'Ctrl-C'],
      ['SIGTERM', 'SIGTERM'],
    ] as const) {
      test(`80 columns: ${how} while the spinner runs ends the step with ${signal === 'SIGINT' ? 130 : 143}; a rerun finishes it`, async () => {
        const { target, handle } = await job();
        let sentAt = 0;
        const r = await underPty(['commit-job', '--job', handle], {
          cols: 80,
          rows: 24,
          timeoutMs: 8000,
          env: { STAGECOMMIT_TEST_DELAY_MS: '500' },
          onOutput: (text, cli) => {
            if (sentAt || !text.includes(HIDE_CURSOR)) return;
            sentAt = Date.now();
            if (signal === 'SIGINT') cli.type('\x03');
            else process.kill(cli.pid, signal);
          },
        });
        assert.ok(sentAt, `the spinner never started: ${describeRun(r)}`);
        assert.equal(r.stuck, false, describeRun(r));
        assert.equal(r.code, signal === 'SIGINT' ? 130 : 143, describeRun(r));
        assert.ok(Date.now() - sentAt < 3000, describeRun(r));
        assert.match(r.output, new RegExp(`stagecommit: stopped by ${signal}; the step is safe to run again`));
        assert.ok(
          r.output.lastIndexOf(SHOW_CURSOR) > r.output.lastIndexOf(HIDE_CURSOR),
          `the cursor is shown again: ${describeRun(r)}`,
        );
        const again = await commitJob(sb, handle);
        assert.equal(again.code, 0, again.stderr);
        await assertCommitted(target);
      });
    }
  },
);

// No message can clear the screen or retitle the window.
test('a name with terminal controls (ESC, BEL, CR) is printed escaped: no message clears or retitles', async () => {
  const evil = `/tmp/no-such-job-\x1b]0;pwned\x07\x1b[2J\r`;
  const r = await cli(['status', '--job', evil]);
  assert.equal(r.code, 2, r.stderr);
  assert.doesNotMatch(r.stderr, /[\x07\x0d]|\x1b(?!\[[0-9;]*m)/, JSON.stringify(r.stderr));
  assert.match(r.stderr, /no-such-job-\\u001b\]0;pwned\\u0007\\u001b\[2J\\u000d/);
  assert.equal(
    printable('\x1b[31mred\x1b[39m\tand\nmore'),
    '\x1b[31mred\x1b[39m\tand\nmore',
    'our colours, tabs and newlines pass',
  ); // C1 controls (CSI, NEL), line and paragraph separators, bidirectional overrides: escaped too.
  const sly = `/tmp/no-such-job-\x9b2J\x85next\u2028line\u2029par\u202egnp.exe\u2066x\u2069`;
  const s = await cli(['status', '--job', sly]);
  assert.equal(s.code, 2, s.stderr);
  assert.equal(s.stderr.trim().split('\n').length, 1, JSON.stringify(s.stderr));
  assert.doesNotMatch(s.stderr, /[\x80-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/, JSON.stringify(s.stderr));
  assert.match(s.stderr, /no-such-job-\\u009b2J\\u0085next\\u2028line\\u2029par\\u202egnp\.exe\\u2066x\\u2069/);
  assert.equal(printable('día — naïve ✓ 日本'), 'día — naïve ✓ 日本', 'other letters and signs pass');
});
