// The commit planner without a store: what moves where, what an overwrite displaces, and the
// operation counts protocol.md §9.1 promises.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import {
  buildTree,
  planCommit,
  singleOps,
  type PlanInput,
  type SourceTree,
  type TargetKind,
  type TargetSnapshot,
} from '../src/plan/plan.js';
import { decodePlan, encodePlan } from '../src/plan/plan-file.js';
import { copiesInFlight } from '../src/plan/apply.js';

const ABSENT: TargetSnapshot = { exists: false, dirs: new Map() };

function target(tree: Record<string, TargetKind[] | string[]>): TargetSnapshot {
  // { '': ['dt=1/'], 'dt=1': ['a.csv'] } — names ending in '/' are directories
  const dirs = new Map<string, Map<string, TargetKind>>();
  for (const [dir, names] of Object.entries(tree)) {
    dirs.set(
      dir,
      new Map(names.map((n) => (n.endsWith('/') ? [n.slice(0, -1), 'dir' as TargetKind] : [n, 'file' as TargetKind]))),
    );
  }
  return { exists: true, dirs };
}

function src(task: string, files: string[]): SourceTree {
  return { task, root: `_temporary/0/${task}`, files: files.map((path) => ({ path, size: 1 })) };
}

function plan(p: Partial<PlanInput> & Pick<PlanInput, 'sources'>, depth = 1) {
  return planCommit({ mode: 'create', replaceUnits: [], strategy: 'rename', target: ABSENT, ...p }, depth);
}

const ops = (r: ReturnType<typeof plan>) => r.phases.flatMap((p) => [...singleOps(p)]);
const count = (r: ReturnType<typeof plan>, op: string) => ops(r).filter((o) => o.op === op).length;

describe('planner', () => {
  test('one task into an absent target: a single rename of its tree', () => {
    const r = plan({ sources: [src('0', ['dt=1/a', 'dt=2/b'])] });
    assert.deepEqual(r.phases, [[{ op: 'move', from: 's:_temporary/0/0', to: 't:', dir: true }]]);
    assert.deepEqual(r.partitionsWritten, ['dt=1', 'dt=2']);
  });

  test('several tasks into an absent target: merged in staging, then one rename to the target', () => {
    const r = plan({ sources: [src('0', ['dt=1/a', 'dt=1/b']), src('1', ['dt=2/c']), src('2', ['dt=1/d'])] });
    const all = ops(r);
    assert.deepEqual(all[0], { op: 'move', from: 's:_temporary/0/0', to: 's:_output', dir: true });
    assert.deepEqual(all.at(-1), { op: 'move', from: 's:_output', to: 't:', dir: true });
    assert.ok(all.some((o) => o.op === 'move' && o.from === 's:_temporary/0/1/dt=2' && o.to === 's:_output/dt=2'));
    assert.ok(all.some((o) => o.op === 'move' && o.from === 's:_temporary/0/2/dt=1/d' && o.to === 's:_output/dt=1/d'));
    assert.equal(all.filter((o) => o.op === 'move' && o.to.startsWith('t:')).length, 1);
  });

  test('100 partitions, one task each, new to an existing target: one rename per partition', () => {
    const sources = Array.from({ length: 100 }, (_, i) =>
      src(
        String(i),
        Array.from({ length: 100 }, (_, f) => `dt=${i}/f${f}`),
      ),
    );
    const r = plan({ mode: 'append', sources, target: target({ '': ['dt=old/'] }) });
    assert.equal(count(r, 'move'), 100);
    assert.equal(r.files, 10_000);
  });

  test('partitions that already hold files: files move one by one, in one parallel phase', () => {
    const sources = Array.from({ length: 10 }, (_, i) => src(String(i), [`dt=${i}/new.csv`]));
    const t: Record<string, string[]> = { '': sources.map((_, i) => `dt=${i}/`) };
    sources.forEach((_, i) => (t[`dt=${i}`] = ['old.csv']));
    const r = plan({ mode: 'append', sources, target: target(t) });
    assert.equal(r.phases.length, 1);
    assert.equal(count(r, 'move'), 10);
    assert.ok(ops(r).every((o) => o.op === 'move' && o.to.endsWith('/new.csv') && !o.replace));
  });

  test('several tasks into a new partition of an existing target: the partition appears with one rename', () => {
    const r = plan({
      mode: 'append',
      sources: [src('0', ['dt=9/a']), src('1', ['dt=9/b'])],
      target: target({ '': ['dt=1/'] }),
    });
    const toTarget = ops(r).filter((o) => o.op === 'move' && o.to.startsWith('t:'));
    assert.deepEqual(toTarget, [{ op: 'move', from: 's:_output/dt=9', to: 't:dt=9', dir: true }]);
  });

  test('dynamic overwrite: a data-only partition is swapped whole, old data parked in the trash', () => {
    const r = plan({
      mode: 'overwrite',
      replaceUnits: ['dt=1'],
      sources: [src('0', ['dt=1/new'])],
      target: target({ '': ['dt=1/', 'dt=2/'], 'dt=1': ['old'] }),
    });
    assert.deepEqual(
      ops(r).filter((o) => o.op === 'swap'),
      [{ op: 'swap', path: 't:dt=1', trash: 's:_trash/dt=1', from: 's:_temporary/0/0/dt=1', dir: true }],
    );
    assert.equal(count(r, 'delete'), 0);
    assert.deepEqual(r.partitionsReplaced, ['dt=1']);
  });

  // A file or a directory of the output.
  test('an output path where the target holds something else is refused, naming what is there', () => {
    const other: TargetSnapshot = {
      exists: true,
      dirs: new Map([
        ['', new Map([['a', 'dir' as TargetKind]])],
        [
          'a',
          new Map([
            ['c', 'other' as TargetKind],
            ['d', 'dir' as TargetKind],
            ['e', 'other' as TargetKind],
          ]),
        ],
      ]),
    };
    const refused = (files: string[], why: RegExp) =>
      assert.throws(() => plan({ mode: 'append', sources: [src('0', files)], target: other }), why);
    refused(
      ['a/c'],
      /'a\/c' is a file in the job's output but neither a file nor a directory in the target \(a symbolic link, pipe or device\): remove or rename it/,
    );
    refused(['a/d'], /'a\/d' is a file in the job's output but a directory in the target/);
    refused(['a/e/x'], /'a\/e' is a directory in the job's output but neither a file nor a directory in the target/);
  });

  test('dynamic overwrite of two partitions: the trash dir is made once', () => {
    const r = plan({
      mode: 'overwrite',
      replaceUnits: ['dt=1', 'dt=2'],
      sources: [src('0', ['dt=1/new']), src('1', ['dt=2/new'])],
      target: target({ '': ['dt=1/', 'dt=2/'], 'dt=1': ['old'], 'dt=2': ['old'] }),
    });
    assert.deepEqual(
      ops(r).filter((o) => o.op === 'mkdir'),
      [{ op: 'mkdir', path: 's:_trash' }],
    );
    assert.equal(count(r, 'swap'), 2);
  });

  test('overwrite keeps non-data entries: files replaced in place, old data deleted last', () => {
    const r = plan({
      mode: 'overwrite',
      replaceUnits: ['dt=1'],
      sources: [src('0', ['dt=1/a', 'dt=1/new'])],
      target: target({ '': ['dt=1/'], 'dt=1': ['a', 'gone', '_temporary/', '.hidden'] }),
    });
    assert.deepEqual([...singleOps(r.phases.at(-1)!)], [{ op: 'delete', path: 't:dt=1/gone', dir: false }]);
    assert.ok(ops(r).some((o) => o.op === 'move' && o.to === 't:dt=1/a' && o.replace === true));
    assert.ok(!ops(r).some((o) => 'path' in o && /_temporary|\.hidden/.test(o.path)));
  });

  test('unpartitioned overwrite deletes root data entries the job does not write, after the moves', () => {
    const r = plan(
      {
        mode: 'overwrite',
        replaceUnits: [''],
        sources: [src('0', ['p0'])],
        target: target({ '': ['p0', 'p1', 'sub/', '_SUCCESS', '.spark-staging-x/'] }),
      },
      0,
    );
    assert.deepEqual(r.phases.at(-1), [
      { op: 'delete', path: 't:p1', dir: false },
      { op: 'delete', path: 't:sub', dir: true },
    ]);
  });

  test('static overwrite with no output empties the partition', () => {
    const r = plan({
      mode: 'overwrite',
      replaceUnits: ['dt=1'],
      sources: [],
      target: target({ '': ['dt=1/'], 'dt=1': ['a'] }),
    });
    assert.deepEqual(ops(r), [{ op: 'delete', path: 't:dt=1', dir: true }]);
  });

  test('stores without rename: one server-side copy per file, never a directory move', () => {
    const r = plan({ strategy: 'copy', sources: [src('0', ['dt=1/a', 'dt=1/b']), src('1', ['dt=2/c'])] });
    assert.equal(count(r, 'copy'), 3);
    assert.equal(ops(r).length, 3);
  });

  test('append clashes: identical files are dropped, different ones refused', () => {
    const t = target({ '': ['dt=1/'], 'dt=1': ['a'] });
    assert.throws(
      () => plan({ mode: 'append', sources: [src('0', ['dt=1/a'])], target: t }),
      /append would overwrite 1 existing file/,
    );
    const r = plan({
      mode: 'append',
      sources: [src('0', ['dt=1/a', 'dt=1/b'])],
      target: t,
      identical: new Set(['dt=1/a']),
    });
    assert.equal(r.files, 1);
    assert.deepEqual(ops(r), [{ op: 'move', from: 's:_temporary/0/0/dt=1/b', to: 't:dt=1/b' }]);
  });

  test('a million-file merge is held as one group of moves per pair of dirs, written and read one per file', () => {
    // Three tasks each write part of two partitions, their files interleaved in the claims.
    const files = (t: number) => [0, 1, 2, 3, 4, 5].flatMap((i) => (i % 3 === t ? [`dt=1/f${i}`, `dt=2/f${i}`] : []));
    const r = plan({ sources: [src('0', files(0)), src('1', files(1)), src('2', files(2))] });
    const groups = r.phases.flat().filter((o) => o.op === 'moves');
    assert.equal(groups.length, 4); // tasks 1 and 2 into the merged dt=1 and dt=2 (task 0's dirs move whole)
    assert.deepEqual(
      groups.find((g) => g.from === 's:_temporary/0/1/dt=1'),
      { op: 'moves', from: 's:_temporary/0/1/dt=1', to: 's:_output/dt=1', names: ['f1', 'f4'] },
    );
    assert.equal(ops(r).filter((o) => o.op === 'move' && !o.dir).length, 8);
    const persisted = { ...r, jobId: 'j', appAttempt: 0, createdAtMs: 0, tasks: ['0', '1', '2'], logEntry: 1 };
    const text = encodePlan(persisted).toString('utf8');
    assert.equal(
      text.match(/"op":"move","from":"s:_temporary\/0\/[12]\/dt=[12]\/f\d","to":"s:_output\/dt=[12]\/f\d"}/g)?.length,
      8,
    );
    assert.ok(!text.includes('moves'));
    assert.deepEqual(decodePlan(text, 'f').phases, r.phases);
  });

  test('two tasks with one destination, or a file where a task has a dir, are refused, naming the tasks', () => {
    assert.throws(() => buildTree([src('0', ['x']), src('1', ['x'])]), /tasks 0 and 1 both wrote 'x'/);
    assert.throws(
      () => buildTree([src('0', ['x']), src('1', ['x/y'])]),
      /tasks 0 and 1 wrote a file 'x' and 'x\/y' inside it: a path is a file or a directory, not both/,
    );
    assert.throws(
      () => buildTree([src('0', ['x/y']), src('1', ['x'])]),
      /tasks 1 and 0 wrote a file 'x' and 'x\/…' inside it/,
    );
    assert.throws(
      () => buildTree([src('0', ['a/x', 'a/x/y'])]),
      /task 0 wrote both a file 'a\/x' and 'a\/x\/y' inside it/,
    );
  });
});

// Other phases keep the concurrency.
test('server-side copies in flight are paced by bytes: 16 of 8 MiB, 32 of 1 KiB, 8 of 1 GiB', () => {
  const copies = (size: number, n = 10) =>
    Array.from({ length: n }, () => ({ op: 'copy' as const, from: 's:a' as const, to: 't:a' as const, size }));
  assert.equal(copiesInFlight(copies(8 * 1024 ** 2), 32), 16);
  assert.equal(copiesInFlight(copies(1024), 32), 32);
  assert.equal(copiesInFlight(copies(1024 ** 3), 32), 8);
  assert.equal(copiesInFlight(copies(8 * 1024 ** 2), 4), 2);
  assert.equal(
    copiesInFlight([{ op: 'copy', from: 's:a', to: 't:a', upload: { id: 'u', etags: ['e'], size: 1024 ** 3 } }], 32),
    32,
    'a completion moves no bytes',
  );
  assert.equal(copiesInFlight([{ op: 'mkdir', path: 't:x' }], 32), 32);
});

test('the output tree keeps its file names, not the paths they were cut from (protocol.md §9.2)', () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  // 10,000 paths of 4 KiB each (a long directory name): kept whole, they would be 40 MB.
  const treeOfLongPaths = () => {
    const dir = 'd'.repeat(4096);
    const files = Array.from({ length: 10_000 }, (_, i) => ({
      path: `${dir}/part-${String(i).padStart(8, '0')}.csv`,
      size: 1,
    }));
    return buildTree([{ task: '0', root: '_temporary/0/0', files }]);
  };
  gc();
  const before = process.memoryUsage().heapUsed;
  const tree = treeOfLongPaths();
  gc();
  const kept = process.memoryUsage().heapUsed - before;
  assert.equal(tree.files, 10_000);
  assert.ok(
    kept < 10e6,
    `the tree of 10,000 files holds ${(kept / 1e6).toFixed(1)} MB: the paths its names were cut from`,
  );
});
