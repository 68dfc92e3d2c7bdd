// The recovery example in examples/ runs as documented and leaves the table the killed Spark job
// would have made (it builds its leftover on the local filesystem, so it runs there only).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../../examples/recover-killed-spark-overwrite.sh', import.meta.url));

test('examples/recover-killed-spark-overwrite.sh adopts the leftover and finishes the overwrite', async () => {
  const work = await mkdtemp(path.join(os.tmpdir(), 'stagecommit-example-'));
  try {
    const r = spawnSync('bash', [SCRIPT, work], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /dry run: commit-job would commit job adopted-spark-/);
    assert.match(
      r.stderr,
      /killed in its job commit, while replacing partitions of the table: 2 partition dir\(s\) still staged/,
    );
    const files = (await readdir(path.join(work, 'sales'), { recursive: true }))
      .map(String)
      .filter((f) => /part-.*parquet$/.test(f) && !path.basename(f).startsWith('.'))
      .sort();
    assert.deepEqual(files, [
      'dt=2026-11-27/part-00000-old.c000.snappy.parquet',
      'dt=2026-11-28/part-00000-5f1c2a3e-8d4b-4c61-9e0f-2b7a6c1d9e42.c000.snappy.parquet',
      'dt=2026-11-29/part-00000-5f1c2a3e-8d4b-4c61-9e0f-2b7a6c1d9e42.c000.snappy.parquet',
      'dt=2026-11-29/part-00001-5f1c2a3e-8d4b-4c61-9e0f-2b7a6c1d9e42.c000.snappy.parquet',
      'dt=2026-11-30/part-00001-5f1c2a3e-8d4b-4c61-9e0f-2b7a6c1d9e42.c000.snappy.parquet',
    ]);
    assert.deepEqual(
      (await readdir(path.join(work, 'sales'))).filter((n) => n.startsWith('.')),
      [],
      'the staging dir is gone from the table',
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
});
