// clean-orphans keeps what looks like committed output even where the leftover's layout is not one
// adopt reads (two jobs' tasks, a stray file, another Hive sink): plain --delete never removes it.

import assert from 'node:assert/strict';
import { symlink } from 'node:fs/promises';
import { posix } from 'node:path';
import { describe, test } from 'node:test';
import { adoptRunners, table } from '../testing/adopt.js';
import { SPARK_JOB, taskDir, type EngineCase } from '../testing/engines.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { readTree } from '../testing/tree.js';

const otherJobTask = taskDir(1).replace(/_0003_/, '_0004_');
const CASES: [string, EngineCase][] = [
  [
    'hadoop _temporary holding committed tasks of two jobs',
    {
      leftover: '_temporary',
      before: { [`_temporary/0/${taskDir(0)}/part-m-00000`]: 'a', [`_temporary/0/${otherJobTask}/part-m-00001`]: 'b' },
      after: {},
    },
  ],
  [
    'hadoop _temporary with committed tasks and a stray file',
    {
      leftover: '_temporary',
      before: { [`_temporary/0/${taskDir(0)}/part-m-00000`]: 'a', '_temporary/0/.DS_Store': 'x' },
      after: {},
    },
  ],
  [
    'spark staging with partitions and an unknown dir on top',
    {
      leftover: `.spark-staging-${SPARK_JOB}`,
      before: { [`.spark-staging-${SPARK_JOB}/dt=1/part-0`]: 'p', [`.spark-staging-${SPARK_JOB}/_logs/l`]: 'l' },
      after: {},
    },
  ],
  [
    'hive staging with only a second sink -ext-10002',
    {
      leftover: '.hive-staging_hive_2026-12-07',
      before: { '.hive-staging_hive_2026-12-07/-ext-10002/000000_0': 'h' },
      after: {},
    },
  ],
];

for (const fx of storeFixtures()) {
  describe(`clean-orphans keeps committed output in odd layouts on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'odd');
    const { run } = adoptRunners(() => sb);
    const args = (target: string, ...more: string[]) => [
      'clean-orphans',
      sb.uri(target),
      '--older-than',
      '0s',
      '--json',
      ...more,
    ];

    for (const [name, c] of CASES) {
      test(`${name}: only --delete-unpublished removes it`, async () => {
        const { target, leftover } = await table(sb, dir(), c);
        const before = await readTree(sb.store, leftover);
        const del = await run(args(target, '--delete'));
        assert.equal(del.code, 0, del.stderr);
        const [l] = JSON.parse(del.stdout).leftovers as { action: string; reason: string }[];
        assert.equal(l!.action, 'skipped', del.stdout);
        assert.match(l!.reason, /^holds \d+ file\(s\) that look like committed output the table may not have/);
        assert.deepEqual(await readTree(sb.store, leftover), before, 'the leftover is kept whole');
        const gone = await run(args(target, '--delete', '--delete-unpublished'));
        assert.equal(gone.code, 0, gone.stderr);
        assert.equal(JSON.parse(gone.stdout).leftovers[0].action, 'deleted');
        assert.deepEqual(await readTree(sb.store, leftover), {});
      });
    }

    test('a link inside a _temporary with committed tasks: kept by --delete', async (t) => {
      if (fx.name !== 'local') return t.skip('the store has no symbolic links');
      const c = CASES[1]![1];
      const { target, leftover } = await table(sb, dir(), c);
      await symlink('/etc/hostname', posix.join(leftover, '0', taskDir(0), 'link'));
      const del = await run(args(target, '--delete'));
      assert.equal(del.code, 0, del.stderr);
      const [l] = JSON.parse(del.stdout).leftovers as { action: string; reason: string }[];
      assert.equal(l!.action, 'skipped', del.stdout);
      assert.match(l!.reason, /^cannot be judged: .*link is neither a file nor a directory/);
      assert.equal((await readTree(sb.store, leftover))[`0/${taskDir(0)}/part-m-00000`], 'a');
    });
  });
}
