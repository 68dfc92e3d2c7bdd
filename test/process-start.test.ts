// A pid's holder told from a later process given the same pid: the start time /proc gives, on a
// real process (a copy of `sleep` whose name holds spaces and parentheses, as /proc/<pid>/stat's
// second field may).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { isPidAliveLocal } from '../src/steps/env.js';
import { processStartMs } from '../src/util/process-start.js';

test('a process started after a record is not the one that wrote it; one started before is', async (t) => {
  if (process.platform !== 'linux') return t.skip('start times come from /proc');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pid-'));
  const odd = path.join(dir, 'a) b (c');
  copyFileSync('/bin/sleep', odd);
  chmodSync(odd, 0o755);
  const before = Date.now();
  const child = spawn(odd, ['30'], { stdio: 'ignore' });
  await once(child, 'spawn');
  const after = Date.now();
  try {
    const started = processStartMs(child.pid!);
    assert.ok(started !== null && started >= before - 2_000 && started <= after + 2_000, `started ${started}, spawned between ${before} and ${after}`);
    assert.equal(isPidAliveLocal(child.pid!), true);
    assert.equal(isPidAliveLocal(child.pid!, after), true, 'a record written as it ran');
    assert.equal(isPidAliveLocal(child.pid!, before - 120_000), false, 'a record two minutes older than the process: the pid was given again');
    assert.equal(isPidAliveLocal(child.pid!, before - 30_000), true, 'within the margin for a clock stepped forward');
  } finally {
    child.kill();
    await once(child, 'exit');
    rmSync(dir, { recursive: true, force: true });
  }
  assert.equal(isPidAliveLocal(child.pid!, Date.now()), false, 'gone');
  assert.equal(processStartMs(child.pid!), null);
});
