// The Store contract (src/store/types.ts), tested once for every store (rclone's fstests):
// missing reads, create-if-absent, rename onto an existing path, delete idempotence, listings
// longer than one page, odd names, sizes and mtimes, and the file walk the steps build on it.

import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import { posix } from 'node:path';
import { Readable } from 'node:stream';
import { describe, test } from 'node:test';
import { StoreError } from '../src/errors.js';
import { walkFiles } from '../src/store/walk.js';
import { InstrumentedStore } from '../src/store/instrumented.js';
import { promoteOutput } from '../src/store/operations.js';
import { TEMP_PREFIX } from '../src/store/temp-names.js';
import { mapLimit } from '../src/util/pool.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree, writeTree } from '../testing/tree.js';

/** Names a partition value or a file may carry, each of which some layer has to escape. */
const ODD_NAMES = [
  'a b',
  'k=v',
  '100%',
  '%20',
  'what?',
  'x#y',
  'a+b',
  'ünï©ødé',
  '日本',
  "it's",
  'a&b;c',
  'dt=2026-01-01 10:00',
  'ctl\u0001char',
  'tab\tcr\rlf\n',
];

function storeError(kind: StoreError['reason']): (e: unknown) => boolean {
  return (e) => {
    assert.ok(e instanceof StoreError, `expected a StoreError '${kind}', got ${String(e)}`);
    assert.equal(e.reason, kind, e.message);
    return true;
  };
}

for (const fx of storeFixtures({ inProcess: true, transport: true })) {
  describe(`store contract on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'k');

    test('reads of a missing path: stat and readFile answer null, list answers []', async () => {
      const d = dir();
      for (const p of [d, posix.join(d, 'f'), posix.join(d, 'no', 'such', 'f')]) {
        assert.equal(await sb.store.stat(p), null, p);
        assert.equal(await sb.store.readFile(p), null, p);
        assert.deepEqual(await sb.store.list(p), [], p);
      }
      // Under a file: no file there either (a local ENOTDIR is not an error).
      await sb.store.writeFile(posix.join(d, 'afile'), 'a');
      const under = posix.join(d, 'afile', 'x.yaml');
      assert.equal(await sb.store.stat(under), null);
      assert.equal(await sb.store.readFile(under), null);
      assert.deepEqual(await sb.store.list(posix.join(d, 'afile', 'sub')), []);
    });

    // A manifest replaced by a directory is damage, not absence.
    test('readFile of a directory is an error, never null', async (t) => {
      if (!sb.store.caps.realDirectories) return t.skip('the store has no directories: a key and a prefix are apart');
      const d = posix.join(dir(), 'd.yaml');
      await sb.store.writeFile(posix.join(d, 'x'), 'x');
      await assert.rejects(sb.store.readFile(d), (e: unknown) => e instanceof StoreError);
    });

    // Elsewhere the output stays put. Run again, it finds the output promoted; a missing parent is made.
    test('promoteOutput: one rename where directories rename; idempotent; vanished output is null', async () => {
      const d = dir();
      const attempt = posix.join(d, '_temporary', '0', '_temporary', 'attempt_0');
      const committed = posix.join(d, '_temporary', '0', '0');
      await writeTree(sb.store, attempt, { 'dt=1/f': 'f' });
      const calls: string[] = [];
      const counted = new InstrumentedStore(sb.store, {
        beforeMutation: (_n, op) => void calls.push(op),
        beforeRead: (op) => void calls.push(op),
      });
      const renames = sb.store.caps.directoryRename;
      assert.equal(await promoteOutput(counted, attempt, committed, true), renames ? committed : attempt);
      assert.deepEqual(calls, renames ? ['rename'] : [], 'one store call');
      assert.deepEqual(data(await readTree(sb.store, renames ? committed : attempt)), { 'dt=1/f': 'f' });
      if (!renames) return;
      assert.equal(await promoteOutput(sb.store, attempt, committed, true), committed, 'a re-run finds it promoted');
      assert.equal(
        await promoteOutput(sb.store, attempt, posix.join(d, 'elsewhere', '0'), true),
        null,
        'nothing to promote, nothing promoted',
      );
      const other = posix.join(d, 'b', '_temporary', 'attempt_1');
      await writeTree(sb.store, other, { g: 'g' });
      assert.equal(
        await promoteOutput(sb.store, other, posix.join(d, 'c', 'd', '1'), true),
        posix.join(d, 'c', 'd', '1'),
      );
      assert.deepEqual(data(await readTree(sb.store, posix.join(d, 'c'))), { 'd/1/g': 'g' });
    });

    test('writeFile creates parents and replaces a whole file; stat and list tell kind, size and mtime', async () => {
      const d = dir();
      const f = posix.join(d, 'p', 'q', 'f.csv');
      const before = Date.now();
      await sb.store.writeFile(f, 'first version');
      await sb.store.writeFile(f, 'second');
      const after = Date.now();
      assert.equal((await sb.store.readFile(f))!.toString(), 'second');
      const st = (await sb.store.stat(f))!;
      assert.equal(st.kind, 'file');
      assert.equal(st.name, 'f.csv');
      assert.equal(st.size, 6);
      // Object stores keep whole seconds; the clock is this machine's.
      assert.ok(
        st.mtimeMs >= before - 2000 && st.mtimeMs <= after + 2000,
        `mtime ${st.mtimeMs} outside [${before}, ${after}]`,
      );
      assert.equal((await sb.store.stat(posix.join(d, 'p', 'q')))!.kind, 'dir');
      const listed = await sb.store.list(posix.join(d, 'p', 'q'), { details: true });
      assert.deepEqual(
        listed.map((e) => [e.name, e.path, e.kind, e.size]),
        [['f.csv', f, 'file', 6]],
      );
      assert.ok(Math.abs(listed[0]!.mtimeMs - st.mtimeMs) <= 1000);
      assert.deepEqual(
        (await sb.store.list(posix.join(d, 'p'))).map((e) => [e.name, e.kind]),
        [['q', 'dir']],
      );
    });

    test('createExclusive: exactly one of many racing creators wins, and its bytes stay', async () => {
      const claim = posix.join(dir(), 'claims', 'c.yaml');
      const won = await Promise.all(
        Array.from({ length: 8 }, (_, i) => sb.store.createExclusive(claim, `creator ${i}`)),
      );
      assert.equal(won.filter(Boolean).length, 1, `winners: ${won.join(',')}`);
      assert.equal((await sb.store.readFile(claim))!.toString(), `creator ${won.indexOf(true)}`);
      assert.equal(await sb.store.createExclusive(claim, 'late'), false);
      assert.equal((await sb.store.readFile(claim))!.toString(), `creator ${won.indexOf(true)}`);
    });

    test('rename: onto an existing file fails with exists unless replace; a missing source is not-found', async () => {
      const d = dir();
      const [a, b, c] = ['a', 'b', 'c'].map((n) => posix.join(d, n));
      await writeTree(sb.store, d, { a: 'A', b: 'B' });
      await assert.rejects(sb.store.rename(a!, b!), storeError('exists'));
      assert.deepEqual(await readTree(sb.store, d), { a: 'A', b: 'B' }, 'nothing moved');
      await sb.store.rename(a!, b!, { replace: true });
      assert.deepEqual(await readTree(sb.store, d), { b: 'A' });
      await sb.store.rename(b!, c!);
      assert.deepEqual(await readTree(sb.store, d), { c: 'A' });
      await assert.rejects(sb.store.rename(a!, posix.join(d, 'z')), storeError('not-found'));
      await sb.store.mkdirs(posix.join(d, 'sub'));
      await sb.store.rename(c!, posix.join(d, 'sub', 'c'));
      assert.deepEqual(await readTree(sb.store, d), { 'sub/c': 'A' });
    });

    test('rename of a directory, where the store can: all of it moves; never onto an existing one', async (t) => {
      if (!sb.store.caps.directoryRename) return t.skip('no directory rename on this store');
      const d = dir();
      await writeTree(sb.store, d, { 'src/x': 'x', 'src/deep/y': 'y', 'taken/z': 'z' });
      await assert.rejects(sb.store.rename(posix.join(d, 'src'), posix.join(d, 'taken')), storeError('exists'));
      await sb.store.rename(posix.join(d, 'src'), posix.join(d, 'moved'));
      assert.deepEqual(await readTree(sb.store, d), { 'moved/deep/y': 'y', 'moved/x': 'x', 'taken/z': 'z' });
    });

    test('delete is idempotent: a missing path is no error, recursive takes everything under a directory', async () => {
      const d = dir();
      await writeTree(sb.store, d, { f: 'f', 'tree/a': 'a', 'tree/b/c': 'c' });
      assert.equal(await sb.store.delete(posix.join(d, 'f'), false), true);
      assert.equal(await sb.store.stat(posix.join(d, 'f')), null);
      assert.equal(typeof (await sb.store.delete(posix.join(d, 'f'), false)), 'boolean');
      await sb.store.delete(posix.join(d, 'never'), true);
      await sb.store.delete(posix.join(d, 'tree'), true);
      assert.equal(await sb.store.stat(posix.join(d, 'tree')), null);
      assert.deepEqual(await sb.store.list(d), []);
      await sb.store.deleteMany?.([posix.join(d, 'gone-1'), posix.join(d, 'gone-2')]);
    });

    test('a listing longer than one page holds every entry once, files and directories', async () => {
      const d = dir();
      const n = (sb.listPage ?? 10) + 3;
      const names = Array.from({ length: n }, (_, i) => `part-${String(i).padStart(5, '0')}`);
      await mapLimit(names, 16, (name) => sb.store.writeFile(posix.join(d, name), name));
      await writeTree(sb.store, d, { 'dt=1/f': '1', 'zz/f': 'z' });
      const listed = await sb.store.list(d, { details: true });
      assert.deepEqual(listed.map((e) => e.name).sort(), [...names, 'dt=1', 'zz'].sort());
      assert.ok(listed.every((e) => (e.kind === 'file') === e.name.startsWith('part-')));
      assert.ok(listed.filter((e) => e.kind === 'file').every((e) => e.size === 10));
      const walked = await walkFiles(sb.store, d);
      assert.equal(walked.length, n + 2);
    });

    test('odd names (spaces, =, %, ?, #, +, unicode, control characters) are stored, listed, renamed, deleted', async () => {
      const d = dir();
      for (const name of ODD_NAMES) await sb.store.writeFile(posix.join(d, name, name), `in ${name}`);
      assert.deepEqual((await sb.store.list(d)).map((e) => e.name).sort(), [...ODD_NAMES].sort());
      for (const name of ODD_NAMES) {
        const p = posix.join(d, name, name);
        assert.deepEqual(
          (await sb.store.list(posix.join(d, name))).map((e) => [e.name, e.path]),
          [[name, p]],
          name,
        );
        assert.equal((await sb.store.stat(p))?.size, Buffer.byteLength(`in ${name}`), name);
        await sb.store.rename(p, posix.join(d, name, `${name}.moved`));
        await sb.store.copy(posix.join(d, name, `${name}.moved`), posix.join(d, name, `copy ${name}`));
      }
      const tree = await readTree(sb.store, d);
      for (const name of ODD_NAMES) {
        assert.equal(tree[`${name}/${name}.moved`], `in ${name}`, name);
        assert.equal(tree[`${name}/copy ${name}`], `in ${name}`, name);
      }
      for (const name of ODD_NAMES) await sb.store.delete(posix.join(d, name), true);
      assert.deepEqual(await sb.store.list(d), []);
    });

    test('walkFiles: every file below, relative and sorted; temp files never listed, removed when asked', async () => {
      const d = dir();
      await writeTree(sb.store, d, {
        'b/2': '2',
        'a/1': '1',
        'a/deep/er/3': '3',
        [`a/${TEMP_PREFIX}0123-x`]: 'half',
        top: 't',
      });
      assert.deepEqual(
        (await walkFiles(sb.store, d)).map((e) => e.name),
        ['a/1', 'a/deep/er/3', 'b/2', 'top'],
      );
      const detailed = await walkFiles(sb.store, d, { details: true, removeTemps: true });
      assert.deepEqual(
        detailed.map((e) => [e.name, e.size]),
        [
          ['a/1', 1],
          ['a/deep/er/3', 1],
          ['b/2', 1],
          ['top', 1],
        ],
      );
      assert.equal(await sb.store.stat(posix.join(d, 'a', `${TEMP_PREFIX}0123-x`)), null, 'temp removed');
      assert.deepEqual(await walkFiles(sb.store, posix.join(d, 'missing')), []);
    });

    test('put stores a local file or a stream whole, creating parents', async () => {
      const d = dir();
      const local = posix.join(os.tmpdir(), `stagecommit-contract-${process.pid}-${fx.name}`);
      await writeFile(local, 'from a file');
      await sb.store.put(posix.join(d, 'x', 'file'), { localPath: local });
      await sb.store.put(posix.join(d, 'y', 'stream'), {
        stream: Readable.from([Buffer.from('from '), Buffer.from('a stream')]),
      });
      assert.deepEqual(await readTree(sb.store, d), { 'x/file': 'from a file', 'y/stream': 'from a stream' });
    });
  });
}
