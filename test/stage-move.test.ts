// stage --move on every store: the sources become the job's (renamed into the attempt where the
// store can, else copied and removed once staged); a stage that fails leaves them where they were.

import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path, { posix } from 'node:path';
import { describe, test } from 'node:test';
import { stageFiles } from '../src/steps/stage-files.js';
import { inProcess, okInProcess } from '../testing/main.js';
import { testEnv } from '../testing/lib.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree } from '../testing/tree.js';

async function localTree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'stage-move-'));
  for (const [rel, body] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), body);
  }
  return root;
}

/** Every file under a local dir, relative, with its contents. */
async function localFiles(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const full = path.join(e.parentPath, e.name);
    out[path.relative(root, full)] = await readFile(full, 'utf8');
  }
  return out;
}

for (const fx of storeFixtures()) {
  describe(`stage --move on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'mv');

    const newJob = async (name: string, ...opts: string[]) => {
      const target = posix.join(dir(), name);
      const handle = await okInProcess(['stage', '--target', sb.uri(target), ...opts], { env: sb.env });
      return { target, handle };
    };
    const commit = async (handle: string) => {
      await okInProcess(['commit-task', '--job', handle, '--task', '0'], { env: sb.env });
      await okInProcess(['commit-job', '--job', handle], { env: sb.env });
    };

    test('a tree staged with --move is published whole; its files are gone, dirs and hidden names stay', async () => {
      const { target, handle } = await newJob('tree', '--partition-by', 'dt');
      const tree = await localTree({ 'dt=1/a.csv': 'a,1\n', 'dt=2/b.csv': 'b,22\n', 'dt=2/.b.csv.crc': 'x' });
      const r = await inProcess(['stage', '--job', handle, '--task', '0', '--move', tree], { env: sb.env });
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(await localFiles(tree), { 'dt=2/.b.csv.crc': 'x' });
      assert.deepEqual((await readdir(tree)).sort(), ['dt=1', 'dt=2']);
      await commit(handle);
      const published = data(await readTree(sb.store, target));
      delete published['_SUCCESS'];
      assert.deepEqual(published, { 'dt=1/a.csv': 'a,1\n', 'dt=2/b.csv': 'b,22\n' });
    });

    test('files staged with --move are gone from where they were; without it they stay', async () => {
      const { target, handle } = await newJob('files');
      const src = await localTree({ 'a.csv': 'a,1\n', 'b.csv': 'b,22\n', 'c.csv': 'c,333\n' });
      const at = (n: string) => path.join(src, n);
      await okInProcess(['stage', '--job', handle, '--task', '0', '--move', at('a.csv'), at('b.csv')], {
        env: sb.env,
      });
      await okInProcess(['stage', '--job', handle, '--task', '0', at('c.csv')], { env: sb.env });
      assert.deepEqual(await localFiles(src), { 'c.csv': 'c,333\n' });
      await commit(handle);
      const published = data(await readTree(sb.store, target));
      delete published['_SUCCESS'];
      assert.deepEqual(published, { 'a.csv': 'a,1\n', 'b.csv': 'b,22\n', 'c.csv': 'c,333\n' });
    });

    test('a --move stage that fails part-way leaves every source file where it was, bytes intact', async () => {
      const { handle } = await newJob('fails');
      const src = await localTree({ 'a.csv': 'a,1\n', 'b.csv': 'b,22\n', 'c.csv': 'c,333\n' });
      let puts = 0;
      const env = testEnv(sb.store, (_n, op) => {
        if ((op === 'put' || op === 'upload') && ++puts === 2) throw new Error('injected: the disk is full');
      });
      const files = ['a.csv', 'b.csv', 'c.csv'].map((name) => ({ localPath: path.join(src, name), name }));
      const error = await stageFiles(env, {
        stagingPath: sb.pathOf(handle),
        task: '0',
        partition: [],
        files,
        move: true,
      }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.match(String(error), /injected: the disk is full/);
      assert.deepEqual(await localFiles(src), { 'a.csv': 'a,1\n', 'b.csv': 'b,22\n', 'c.csv': 'c,333\n' });
    });
  });
}
