// Leftover recognition without a store: fixtures laid out as Hadoop, Spark and Hive write them,
// killed at each stage of their own commit; what adopt would publish, report and discard.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { recogniseLeftover } from '../src/leftover/recognise.js';
import type { ListedEntry } from '../src/leftover/types.js';
import {
  attemptDir,
  hadoopV1,
  hiveInsert,
  SPARK_JOB,
  SPARK_STAGES,
  sparkOverwrite,
  taskDir,
  type EngineCase,
} from '../testing/engines.js';
import type { Tree } from '../testing/tree.js';

/** The listing a walk of the leftover gives: every file and directory, relative to it. */
function listing(c: EngineCase, mtimeMs = 1000): ListedEntry[] {
  const out = new Map<string, ListedEntry>();
  for (const [k, v] of Object.entries(c.before)) {
    if (!k.startsWith(c.leftover + '/')) continue;
    const rel = k.slice(c.leftover.length + 1).replace(/\/$/, '');
    const segs = rel.split('/');
    for (let i = 1; i < segs.length; i++)
      out.set(segs.slice(0, i).join('/'), { path: segs.slice(0, i).join('/'), kind: 'dir', size: 0, mtimeMs });
    out.set(
      rel,
      k.endsWith('/')
        ? { path: rel, kind: 'dir', size: 0, mtimeMs }
        : { path: rel, kind: 'file', size: Buffer.byteLength(v), mtimeMs },
    );
  }
  return [...out.values()];
}

const recognise = (c: EngineCase) => recogniseLeftover(`/t/${c.leftover}`, c.leftover.split('/').pop()!, listing(c), 0);
/** What the adopted job would publish: table-relative path → size. */
const published = (c: EngineCase) =>
  Object.fromEntries(
    recognise(c)
      .sources.flatMap((s) => s.files.map((f) => [f.path, f.size]))
      .sort(),
  );
const sizes = (t: Tree, filter: (k: string) => boolean) =>
  Object.fromEntries(
    Object.entries(t)
      .filter(([k]) => filter(k))
      .map(([k, v]) => [k, Buffer.byteLength(v)])
      .sort(),
  );

describe('leftover recognition', () => {
  for (const stage of SPARK_STAGES) {
    test(`spark dynamic overwrite killed at ${stage}: the staged partitions, as an overwrite`, () => {
      const c = sparkOverwrite(stage);
      const l = recognise(c);
      assert.equal(l.kind, 'spark-staging');
      assert.equal(l.engineJobId, SPARK_JOB);
      assert.equal(l.defaultMode, 'overwrite');
      assert.deepEqual(l.partitionBy, ['dt']);
      const inTable =
        stage === 'replacing'
          ? (k: string) => !k.startsWith('dt=2026-11-28/') && !k.startsWith('dt=2026-11-27/')
          : (k: string) => !k.startsWith('dt=2026-11-27/');
      const expected =
        stage === 'tasks-running'
          ? sizes(c.after, (k) => inTable(k) && !k.includes('part-00002'))
          : sizes(c.after, inTable);
      assert.deepEqual(published(c), expected);
      assert.equal(l.jobCommitBegun, ['merging', 'merged', 'replacing'].includes(stage));
      if (stage === 'replacing') assert.deepEqual(l.partitions, ['dt=2026-11-29', 'dt=2026-11-30']);
      if (stage === 'tasks-running') {
        assert.deepEqual(l.tasks, ['0', '1']);
        assert.deepEqual(
          l.discarded.map((d) => d.reason),
          ['uncommitted task attempt'],
        );
        assert.match(l.discarded[0]!.path, new RegExp(`_temporary/0/_temporary/${attemptDir(2, 0)}$`));
      }
      if (stage === 'tasks-committed') {
        assert.deepEqual(l.tasks, ['0', '1', '2']);
        assert.deepEqual(l.gaps, []);
        assert.equal(l.discarded.length, 1, 'the losing speculative attempt is discarded');
      }
      assert.equal(l.files, Object.keys(expected).length);
      assert.equal(
        l.bytes,
        Object.values(expected).reduce((a: number, b) => a + (b as number), 0),
      );
    });
  }

  test('hadoop v1 across app attempts 0 and 1: the newest committed output of each task wins', () => {
    const c = hadoopV1();
    const l = recognise(c);
    assert.equal(l.kind, 'hadoop-temporary');
    assert.equal(l.engineJobId, '20261130221500_0003');
    assert.equal(l.defaultMode, 'append');
    assert.deepEqual(l.appAttempts, [0, 1]);
    assert.deepEqual(l.tasks, ['0', '1', '2']);
    assert.deepEqual(
      l.sources.map((s) => s.root),
      [`_temporary/1/${taskDir(0)}`, `_temporary/1/${taskDir(1)}`, `_temporary/1/${taskDir(2)}`].map((r) =>
        r.replace(/^_temporary\//, ''),
      ),
    );
    assert.deepEqual(
      l.discarded.map((d) => [d.path, d.reason]),
      [
        [`0/${taskDir(1)}`, 'superseded by app attempt 1'],
        [`0/_temporary/${attemptDir(2, 0)}`, 'uncommitted task attempt'],
      ],
    );
    assert.deepEqual(
      published(c),
      sizes(c.after, (k) => !k.includes('earlier')),
    );
    assert.deepEqual(l.partitionBy, []);
  });

  test('gaps in the task numbering are reported', () => {
    const c = hadoopV1();
    const before = Object.fromEntries(Object.entries(c.before).filter(([k]) => !k.includes(taskDir(1))));
    const l = recognise({ ...c, before });
    assert.deepEqual(l.tasks, ['0', '2']);
    assert.deepEqual(l.gaps, [1]);
  });

  test('hive: -ext-10000 is the output, other dirs are discarded', () => {
    const c = hiveInsert();
    const l = recognise(c);
    assert.equal(l.kind, 'hive-staging');
    assert.equal(l.defaultMode, 'append');
    assert.deepEqual(
      published(c),
      sizes(c.after, (k) => k.includes('copy')),
    );
    assert.deepEqual(
      l.discarded.map((d) => d.path),
      ['-ext-10002'],
    );
  });

  test('what cannot be adopted is a one-line usage error naming what was found', () => {
    const bad = (name: string, entries: ListedEntry[], re: RegExp) =>
      assert.throws(
        () => recogniseLeftover(`/t/${name}`, name, entries, 0),
        (e: Error & { exitCode?: number }) => e.exitCode === 2 && re.test(e.message) && !e.message.includes('\n'),
      );
    const f = (path: string): ListedEntry => ({ path, kind: 'file', size: 1, mtimeMs: 0 });
    bad('sales', [f('a.csv')], /not an engine's leftover/);
    bad('_temporary', [], /is empty/);
    bad('_temporary', [f('junk.txt')], /'junk.txt' is not an app attempt number/);
    bad('_temporary', [f('0/whatever/x')], /neither a committed task dir/);
    bad('_temporary', [f(`0/_temporary/${attemptDir(0, 0)}/part-m-00000`)], /holds no output to publish.*v2/);
    bad('_temporary', [f(`0/${taskDir(0)}/p`), f(`0/${taskDir(1, 'r')}/q`)], /map and reduce/);
    bad('.hive-staging_hive_x', [f('_tmp.-ext-10000/000000_0')], /no finished Hive output.*still writing/);
    bad(`.spark-staging-${SPARK_JOB}`, [f('_SUCCESS')], /holds no output/);
    bad(`.spark-staging-${SPARK_JOB}`, [f('dt=1/a'), f('x/b')], /not a partition/);
    bad(`.spark-staging-${SPARK_JOB}`, [f('dt=1/a'), f('dt=1/h=2/b')], /different partition columns/);
    // Spark's absolute-path partition files (newTaskTempFileAbsPath), flat at the staging dir's top.
    bad(
      `.spark-staging-${SPARK_JOB}`,
      [f('dt=1/a'), f('0b6f2c1e-part-00000.c000.snappy.parquet')],
      /1 file\(s\) at its top \('0b6f2c1e-part-00000.c000.snappy.parquet'\).*absolute paths.*recorded only in the dead driver's memory/,
    );
    bad(`.spark-staging-${SPARK_JOB}`, [f('a.parquet'), f('_SUCCESS')], /at its top \('a.parquet'\)/);
    // Unpartitioned output in committed task dirs: never a whole-table overwrite.
    bad(
      `.spark-staging-${SPARK_JOB}`,
      [f(`_temporary/0/${taskDir(0)}/part-00000.parquet`)],
      /outside any partition dir.*would replace the whole table/,
    );
  });

  test('age is the newest of the leftover itself, every directory and every file inside', () => {
    const c = sparkOverwrite('replacing');
    const entries = listing(c, 5000);
    const at = (pred: (e: ListedEntry) => boolean, mtimeMs: number) =>
      entries.map((e) => (pred(e) ? { ...e, mtimeMs } : e));
    assert.equal(
      recogniseLeftover(
        'x',
        c.leftover,
        at((e) => e.kind === 'file' && e.path.startsWith('dt=2026-11-30/'), 9000),
        1,
      ).newestMtimeMs,
      9000,
    );
    // A live driver moving partition dirs out changes only directories: the leftover's own time, or one inside.
    assert.equal(recogniseLeftover('x', c.leftover, entries, 7000).newestMtimeMs, 7000);
    assert.equal(
      recogniseLeftover(
        'x',
        c.leftover,
        at((e) => e.path === 'dt=2026-11-29', 8000),
        1,
      ).newestMtimeMs,
      8000,
    );
    // S3 dates only objects.
    assert.equal(
      recogniseLeftover(
        'x',
        c.leftover,
        at((e) => e.kind === 'dir', -1),
        -1,
      ).newestMtimeMs,
      5000,
    );
    assert.equal(recogniseLeftover('x', c.leftover, listing(c, -1), 42).newestMtimeMs, 42);
    assert.equal(recogniseLeftover('x', c.leftover, listing(c, -1), -1).newestMtimeMs, -1);
  });
});
