// The library (src/index.ts) on every store: the README's Node ETL step runs as written, calls
// return what --json prints, and failures throw StagecommitError with exitCode and kind.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path, { posix } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as sc from '../src/index.js';
import { runMain } from './helpers/main.js';
import { storeFixtures, useSandbox, type StoreSandbox } from './helpers/stores.js';
import { data, readTree, writeTree } from './helpers/tree.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const INDEX = pathToFileURL(path.join(ROOT, 'dist/src/index.js')).href;

/** The ```js block of the README's Library section, which must be examples/etl-step.mjs. */
function readmeExample(): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Library'));
  const code = /```js\n([\s\S]*?)```/.exec(section)![1]!;
  assert.equal(code, readFileSync(path.join(ROOT, 'examples/etl-step.mjs'), 'utf8'), 'the README shows examples/etl-step.mjs as it is');
  return code;
}

for (const fx of storeFixtures()) {
  describe(`library on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'a');

    test("the README's ETL step publishes its partition, and again over it", async () => {
      const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'sc-etl-')), 'etl.mjs');
      writeFileSync(file, readmeExample().replace("from 'stagecommit'", `from '${INDEX}'`));
      const target = posix.join(dir(), 'sales');
      await writeTree(sb.store, target, { 'dt=2026-11-29/old.csv': 'old\n', 'dt=2026-11-30/stale.csv': 'stale\n' });
      for (let run = 0; run < 2; run++) {
        // Async: the HDFS test server answers from this process.
        const r = await promisify(execFile)(process.execPath, [file], { encoding: 'utf8', env: { ...process.env, ...sb.env, TARGET: sb.uri(target), DAY: '2026-11-30' } });
        assert.match(r.stdout, /published 2 file\(s\) into /);
      }
      assert.deepEqual(data(await readTree(sb.store, target)), {
        'dt=2026-11-29/old.csv': 'old\n',
        'dt=2026-11-30/orders.csv': 'id,amount\n1,9.50\n',
        'dt=2026-11-30/refunds.csv': 'id,amount\n7,-2.00\n',
      });
    });

    test('calls return the --json documents; failures throw exitCode and kind; progress arrives', async () => {
      const env = { ...process.env, ...sb.env };
      const target = posix.join(dir(), 't');
      const staged = await sc.stage({ target: sb.uri(target), tasks: 1, env });
      const viaCli = JSON.parse((await runMain(['--json', 'status', '--job', staged.handle], sb.env)).stdout);
      const viaLib = await sc.status({ job: staged.handle, env });
      assert.deepEqual(Object.keys(viaLib), Object.keys(viaCli));
      assert.equal(viaLib.handle, staged.handle);
      await sc.stageFiles({ job: staged.handle, task: 0, files: [{ name: 'a.csv', data: 'a' }], env });
      const incomplete = await sc.commitJob({ job: staged.handle, env }).catch((e: unknown) => e);
      assert.ok(incomplete instanceof sc.StagecommitError);
      assert.equal(incomplete.exitCode, 5);
      assert.equal(incomplete.kind, 'IncompleteError');
      await sc.commitTask({ job: staged.handle, task: 0, env });
      const events: sc.ProgressEvent[] = [];
      const done = await sc.commitJob({ job: staged.handle, env, onProgress: (e) => events.push(e) });
      assert.equal(done.files, 1);
      assert.ok(events.some((e) => e.type === 'phase' && /publishing/.test(e.label)));
      assert.deepEqual(data(await readTree(sb.store, target)), { 'a.csv': 'a' });
      const bad = await sc.stage({ target: sb.uri(target), mode: 'bogus' as never, env }).catch((e: unknown) => e);
      assert.ok(bad instanceof sc.StagecommitError);
      assert.equal(bad.exitCode, 2);
    });
  });
}
