// A stdout or stderr that its reader closes early (`| head`, EPIPE) ends the step normally: its own
// exit code, no stack trace, and the work done (protocol.md §5.13). Local store only: these
// test the process's output streams, not the store.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { posix } from 'node:path';
import { describe, test } from 'node:test';
import { BIN, cli, type CliResult } from '../testing/cli.js';
import { localFixture, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { stage } from '../testing/jobs.js';
import { readTree } from '../testing/tree.js';

const STACK = /EPIPE|Error|\n\s+at /;

/** Runs the CLI with stdout or stderr closed by its reader before the CLI writes anything. */
function cliClosed(stream: 'stdout' | 'stderr', args: readonly string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child[stream].destroy();
    if (stream !== 'stdout') child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    if (stream !== 'stderr') child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Runs `stagecommit ARGS | head -1` in bash; the exit code is the CLI's, not head's. */
function cliHead(args: readonly string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'bash',
      ['-c', '"$@" | head -1; exit "${PIPESTATUS[0]}"', 'bash', process.execPath, BIN, ...args],
      {
        env: { ...process.env, NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

describe('output closed early', () => {
  let sb: StoreSandbox;
  const newDir = useSandbox(localFixture, (s) => (sb = s), 'pipe');

  /**
   * A warehouse of `tables` tables, each with a data file and a killed writer's `_temporary`.
   * Long table names make a long report: more than a pipe holds, so `head` leaves while it is written.
   */
  async function warehouse(tables: number): Promise<string> {
    const root = newDir();
    const names = Array.from(
      { length: tables },
      (_, i) => `table_${String(i).padStart(5, '0')}_${'long_name_'.repeat(19)}`,
    );
    for (let i = 0; i < names.length; i += 200) {
      await Promise.all(
        names.slice(i, i + 200).map(async (t) => {
          await mkdir(posix.join(root, t, '_temporary', '0'), { recursive: true });
          await writeFile(posix.join(root, t, '_temporary', '0', 'part-00000'), 'left');
          await writeFile(posix.join(root, t, 'part-00000.parquet'), 'data');
        }),
      );
    }
    return root;
  }

  test('--help into a reader that is already gone: exit 0, nothing on stderr', async () => {
    const r = await cliClosed('stdout', ['--help']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
  });

  test('--help | head -1: the first line, exit 0, nothing on stderr', async () => {
    const r = await cliHead(['--help']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'Usage: stagecommit [options] [command]\n');
    assert.equal(r.stderr, '');
  });

  test('clean-orphans --delete on a big tree | head -1: the header, exit 0, and every leftover removed', async () => {
    const root = await warehouse(600);
    const report = await cli(['clean-orphans', root, '--older-than', '0s']);
    assert.ok(report.stdout.length > 150_000, `a report of ${report.stdout.length} bytes`);
    const r = await cliHead(['clean-orphans', root, '--older-than', '0s', '--delete']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^KIND\s+PATH\s+AGE\s+FILES\s+BYTES\s+JOB\s+ACTION\n$/);
    assert.doesNotMatch(r.stderr, STACK);
    const left = await readTree(sb.store, root);
    assert.equal(Object.keys(left).length, 600);
    assert.ok(
      Object.keys(left).every((k) => k.endsWith('/part-00000.parquet')),
      'only data is left',
    );
  });

  test('stderr closed early: clean-orphans --verbose still prints its result and exits 0', async () => {
    const root = await warehouse(3);
    const r = await cliClosed('stderr', ['clean-orphans', root, '--older-than', '0s', '--verbose']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /3 leftover\(s\) to remove, .* dry run: nothing was changed/);
  });

  test('--json error with stdout closed early: exit 2 and one line on stderr', async () => {
    const r = await cliClosed('stdout', ['clean-orphans', posix.join(newDir(), 'missing'), '--json']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^stagecommit: error: the root .*missing does not exist: [^\n]*\n$/);
  });

  // The result lists 200,000 tasks to run: more than the pipe holds.
  test('a reader that reads only after 3 s gets the whole result of recover --json, exit 0', async () => {
    const job = await stage(sb, { target: posix.join(newDir(), 'sales'), tasks: 200_000 });
    const child = spawn(process.execPath, [BIN, '--json', 'recover', '--job', job], {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code) => resolve(code));
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.stdout.pause(); // what the pipe cannot hold waits for the reader
    await new Promise((r) => setTimeout(r, 3000));
    let stdout = '';
    const ended = new Promise((r) => child.stdout.once('close', r));
    child.stdout
      .setEncoding('utf8')
      .on('data', (d) => (stdout += d))
      .resume();
    await ended;
    assert.equal(await exited, 0, stderr);
    assert.equal(JSON.parse(stdout).tasksToRun.length, 200_000);
  });
});
