// The library (src/index.ts) on every store: the documented Node ETL step runs as written, calls
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
import { runMain } from '../testing/main.js';
import { storeFixtures, useSandbox, type StoreSandbox } from '../testing/stores.js';
import { data, readTree, writeTree } from '../testing/tree.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const INDEX = pathToFileURL(path.join(ROOT, 'dist/src/index.js')).href;

/** The ```js block of docs/library.md, which must be examples/etl-step.mjs. */
function readmeExample(): string {
  const section = readFileSync(path.join(ROOT, 'docs', 'library.md'), 'utf8');
  const code = /```js\n([\s\S]*?)```/.exec(section)![1]!;
  assert.equal(
    code,
    readFileSync(path.join(ROOT, 'examples/etl-step.mjs'), 'utf8'),
    'docs/library.md shows examples/etl-step.mjs as it is',
  );
  return code;
}

type Refusal = [what: string, call: () => Promise<unknown>, message: RegExp];

/** stage() calls with a misnamed, mistyped or missing option, at the target `uri`. */
function badStageOptions(uri: string, env: NodeJS.ProcessEnv): Refusal[] {
  return [
    [
      'typo partitions',
      () => sc.stage({ target: uri, mode: 'overwrite', partitions: ['dt=3'], env } as never),
      /^stage: 'partitions' is not an option \(did you mean 'partition'\?\)$/,
    ],
    [
      'partition_by',
      () => sc.stage({ target: uri, partition_by: 'dt', env } as never),
      /'partition_by' is not an option \(did you mean 'partitionBy'\?\)/,
    ],
    [
      'partition-by',
      () => sc.stage({ target: uri, 'partition-by': 'dt', env } as never),
      /'partition-by' is not an option \(did you mean 'partitionBy'\?\)/,
    ],
    ['stage({})', () => sc.stage({ env } as never), /^stage: 'target' is required/],
    ['stage()', () => (sc.stage as (o?: unknown) => Promise<unknown>)(), /^stage: takes an options object/],
    ['target: 42', () => sc.stage({ target: 42, env } as never), /'target' must be a non-empty string, got 42/],
    [
      "partition: 'dt=1'",
      () => sc.stage({ target: uri, mode: 'overwrite', partition: 'dt=1', env } as never),
      /'partition' must be a list of strings/,
    ],
    ['jobId: 12345', () => sc.stage({ target: uri, jobId: 12345, env } as never), /'jobId' must be/],
  ];
}

/** Calls on `job`, and cleanOrphans of `roots`, with a misnamed, mistyped or missing option. */
function badJobOptions(job: string, roots: string[], env: NodeJS.ProcessEnv): Refusal[] {
  const files = [{ name: 'x.csv', data: 'x' }];
  return [
    ['onprogress', () => sc.commitJob({ job, onprogress: () => {}, env } as never), /did you mean 'onProgress'/],
    [
      "delete: 'false'",
      () => sc.cleanOrphans({ roots, olderThan: '0s', delete: 'false', env } as never),
      /^cleanOrphans: 'delete' must be true or false, got 'false'$/,
    ],
    ['stageFiles without task', () => sc.stageFiles({ job, files, env } as never), /^stageFiles: 'task' is required/],
    ['commitTask without task', () => sc.commitTask({ job, env } as never), /^commitTask: 'task' is required/],
    ['task: null', () => sc.commitTask({ job, task: null, env } as never), /'task' must be .*, got null/],
    ['attemptPath without task', () => sc.attemptPath({ job, env } as never), /^attemptPath: 'task' is required/],
    [
      'parallelism: 0',
      () => sc.commitJob({ job, parallelism: 0, env }),
      /'parallelism' must be a whole number ≥ 1, got 0/,
    ],
    ["parallelism: 'x'", () => sc.commitJob({ job, parallelism: 'x', env } as never), /'parallelism' must be/],
    [
      'stageFiles without files',
      () => sc.stageFiles({ job, task: 0, env } as never),
      /^stageFiles: 'files' is required/,
    ],
    [
      "roots: 'str'",
      () => sc.cleanOrphans({ roots: roots[0], delete: true, env } as never),
      /'roots' must be a list of strings/,
    ],
    ['olderThan: 5', () => sc.cleanOrphans({ roots, olderThan: 5, delete: true, env } as never), /'olderThan' must be/],
    ['onProgress: 5', () => sc.commitJob({ job, onProgress: 5, env } as never), /'onProgress' must be a function/],
    ['commitJob without job', () => sc.commitJob({ env } as never), /^commitJob: 'job' is required/],
  ];
}

for (const fx of storeFixtures({ transport: true })) {
  describe(`library on ${fx.name}`, () => {
    let sb!: StoreSandbox;
    const dir = useSandbox(fx, (s) => (sb = s), 'a');

    test('the documented ETL step publishes its partition, and again over it', async () => {
      const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'sc-etl-')), 'etl.mjs');
      writeFileSync(file, readmeExample().replace("from 'stagecommit'", `from '${INDEX}'`));
      const target = posix.join(dir(), 'sales');
      await writeTree(sb.store, target, { 'dt=2026-11-29/old.csv': 'old\n', 'dt=2026-11-30/stale.csv': 'stale\n' });
      for (let run = 0; run < 2; run++) {
        // Async: the HDFS test server answers from this process.
        const r = await promisify(execFile)(process.execPath, [file], {
          encoding: 'utf8',
          env: { ...process.env, ...sb.env, TARGET: sb.uri(target), DAY: '2026-11-30' },
        });
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
      assert.ok(incomplete instanceof sc.IncompleteError);
      assert.ok(incomplete instanceof sc.StagecommitError, 'the old name is the same base class');
      assert.equal(incomplete.exitCode, 5);
      assert.equal(incomplete.kind, 'IncompleteError');
      // @ts-expect-error kind is a union of the families' names: comparing with a misspelt one does not type-check
      assert.equal(incomplete.kind === 'IncompletError', false);
      await sc.commitTask({ job: staged.handle, task: 0, env });
      const events: sc.ProgressEvent[] = [];
      const done = await sc.commitJob({ job: staged.handle, env, onProgress: (e) => events.push(e) });
      assert.equal(done.files, 1);
      assert.ok(events.some((e) => e.type === 'phase' && /publishing/.test(e.label)));
      const published = events.filter((e) => e.type === 'progress' && e.label === 'publishing').at(-1);
      // Bytes where the store copies on the server (S3); a rename moves none.
      const copied = fx.name === 's3' ? { bytes: 1, bytesTotal: 1 } : {};
      assert.deepEqual(published, { type: 'progress', label: 'publishing', done: 1, total: 1, ...copied });
      assert.deepEqual(
        events.filter((e) => e.type === 'output'),
        [{ type: 'output', files: 1 }],
        'the count of the files, once, before they are read',
      );
      assert.deepEqual(data(await readTree(sb.store, target)), { 'a.csv': 'a' });
      const bad = await sc.stage({ target: sb.uri(target), mode: 'bogus' as never, env }).catch((e: unknown) => e);
      assert.ok(bad instanceof sc.StagecommitError);
      assert.equal(bad.exitCode, 2);
    });

    test('options are checked first: unknown names, wrong types, missing ones are UsageErrors (exit 2)', async () => {
      const env = { ...process.env, ...sb.env };
      const target = posix.join(dir(), 'sales');
      await writeTree(sb.store, target, { 'dt=1/keep.csv': 'keep\n', 'dt=2/keep.csv': 'keep\n' });
      const U = '6f1c2a3b-0000-4000-8000-000000000001';
      await writeTree(sb.store, posix.join(dir(), 'old'), { [`t/.spark-staging-${U}/dt=1/part-0`]: 'leftover' });
      const { handle: job } = await sc.stage({
        target: sb.uri(target),
        mode: 'overwrite',
        partitionBy: 'dt',
        tasks: 1,
        env,
      });
      await sc.stageFiles({ job, task: 0, partition: ['dt=3'], files: [{ name: 'new.csv', data: 'new\n' }], env });
      await sc.commitTask({ job, task: 0, env });
      const before = await readTree(sb.store, dir(), { dirs: true });
      const roots = [sb.uri(posix.join(dir(), 'old'))];
      const bad = [...badStageOptions(sb.uri(target), env), ...badJobOptions(job, roots, env)];
      for (const [what, fn, message] of bad) {
        const e = await fn().then(
          () => assert.fail(`${what}: accepted`),
          (err: unknown) => err,
        );
        assert.ok(e instanceof sc.StagecommitError, what);
        assert.equal(e.kind, 'UsageError', `${what}: ${e.message}`);
        assert.ok(/^options?-/.test(e.reason), `${what}: reason ${e.reason}`);
        assert.equal(e.exitCode, 2, what);
        assert.match(e.message, message, what);
        assert.doesNotMatch(e.message, /\n/, what);
      }
      assert.deepEqual(await readTree(sb.store, dir(), { dirs: true }), before, 'the refused calls changed nothing');
    });

    test('an onProgress that throws (or rejects) does not interrupt a commit', async () => {
      const env = { ...process.env, ...sb.env };
      for (const [name, onProgress] of [
        [
          'throws',
          () => {
            throw new Error('callback bug');
          },
        ],
        [
          'rejects',
          async () => {
            throw new Error('callback bug');
          },
        ],
      ] as const) {
        const target = posix.join(dir(), name);
        let calls = 0;
        const cb = (e: sc.ProgressEvent) => {
          calls++;
          void e;
          return onProgress();
        };
        const { handle: job } = await sc.stage({ target: sb.uri(target), tasks: 1, env, onProgress: cb });
        await sc.stageFiles({ job, task: 0, files: [{ name: 'a.csv', data: 'a' }], env, onProgress: cb });
        await sc.commitTask({ job, task: 0, env, onProgress: cb });
        const done = await sc.commitJob({ job, env, onProgress: cb });
        assert.equal(done.files, 1);
        assert.ok(calls > 0, 'the callback was called');
        assert.deepEqual(data(await readTree(sb.store, target)), { 'a.csv': 'a' });
        assert.equal((await sc.status({ job, env })).state, 'committed');
      }
    });
  });
}
