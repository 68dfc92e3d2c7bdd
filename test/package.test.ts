// The package as a user gets it: `npm pack` of this checkout, installed from the tarball into a
// fresh prefix (its one dependency from the npm cache, else the registry), then the installed `stagecommit` and
// `import('stagecommit')`.
// Checks what the tarball holds (bin, the built library and the JSON schemas, nothing of the checkout's tests,
// benchmarks, scripts or CI) and that its bundle is not older than the sources.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { SCHEMA_DIR } from '../testing/schemas.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NPM_ENV = {
  ...process.env,
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_update_notifier: 'false',
};

async function newestMtime(dir: string): Promise<number> {
  let newest = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith('.ts'))
      newest = Math.max(newest, (await stat(path.join(e.parentPath, e.name))).mtimeMs);
  }
  return newest;
}

describe('the packed package', () => {
  let work: string;
  let prefix: string;
  let bin: string;
  let files: string[];

  before(async () => {
    const bundle = await stat(path.join(ROOT, 'dist/bundle/cli.cjs')).catch(() => null);
    assert.ok(bundle, 'dist/bundle/cli.cjs is missing: run `npm run build` (npm test does) before this test');
    assert.ok(
      bundle.mtimeMs >= (await newestMtime(path.join(ROOT, 'src'))),
      'dist/bundle is older than src/: run `npm run build` first',
    );
    work = await mkdtemp(path.join(os.tmpdir(), 'stagecommit-package-'));
    // The bundle was just checked current: packing skips the `prepare` build, which would rewrite
    // dist/ under the other test files running beside this one.
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
      cwd: ROOT,
      env: NPM_ENV,
    });
    const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
    files = info!.files.map((f) => f.path).sort();
    prefix = path.join(work, 'app');
    await mkdir(prefix);
    await writeFile(path.join(prefix, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    await run('npm', ['install', '--prefer-offline', '--no-package-lock', path.join(work, info!.filename)], {
      cwd: prefix,
      env: NPM_ENV,
    });
    bin = path.join(prefix, 'node_modules', '.bin', 'stagecommit');
  });
  after(() => rm(work, { recursive: true, force: true }));

  test('holds bin and the built library only', () => {
    const top = new Set(
      files.map((f) =>
        f
          .split('/')
          .slice(0, f.startsWith('dist/') ? 2 : 1)
          .join('/'),
      ),
    );
    assert.deepEqual([...top].sort(), [
      'LICENSE',
      'README.md',
      'bin',
      'dist/bundle',
      'dist/src',
      'package.json',
      'schemas',
    ]);
    const schemas = readdirSync(SCHEMA_DIR).map((f) => `schemas/${f}`);
    assert.deepEqual(
      files.filter((f) => f.startsWith('schemas/')),
      schemas.sort(),
      'every JSON Schema ships',
    );
    assert.ok(
      files.includes('dist/bundle/cli.cjs') &&
        files.includes('dist/bundle/index.js') &&
        files.includes('dist/src/index.d.ts'),
    );
    const strays = files.filter((f) => f.startsWith('dist/src/') && !f.endsWith('.d.ts'));
    assert.deepEqual(strays, [], 'only type declarations of dist/src ship: the code is the bundle');
  });

  test('the installed stagecommit prints the version of its package.json', async () => {
    const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = await run(bin, ['--version'], { cwd: prefix });
    assert.equal(r.stdout.trim(), pkg.version);
  });

  test("the installed --version --json matches the installed package's schemas/version.json", async () => {
    const r = await run(bin, ['--version', '--json'], { cwd: prefix });
    const dir = path.join(prefix, 'node_modules', 'stagecommit', 'schemas');
    const ajv = new Ajv2020({ strict: true });
    for (const f of readdirSync(dir)) ajv.addSchema(JSON.parse(readFileSync(path.join(dir, f), 'utf8')));
    const validate = ajv.getSchema('urn:stagecommit:schema:version')!;
    assert.ok(validate(JSON.parse(r.stdout)), JSON.stringify(validate.errors));
    const resolved = await run(
      process.execPath,
      ['--input-type=module', '-e', "console.log(import.meta.resolve('stagecommit/schemas/stage.json'))"],
      { cwd: prefix },
    );
    assert.ok(resolved.stdout.trim().endsWith('/node_modules/stagecommit/schemas/stage.json'), resolved.stdout);
  });

  test('the install check works from any directory: version, package and library path, exit 0', async () => {
    const pkg = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = await run(bin, ['--version', '--verbose'], { cwd: '/' });
    const installed = path.join(prefix, 'node_modules', 'stagecommit');
    assert.equal(
      r.stdout,
      [
        `stagecommit ${pkg.version}`,
        `package  ${installed}`,
        `library  ${path.join(installed, 'dist', 'bundle', 'index.js')} (loads: stage, commitTask, commitJob, …)`,
        `node     ${process.version}`,
        '',
      ].join('\n'),
    );
  });

  test('the installed stagecommit runs a local job end to end', async () => {
    const target = path.join(work, 'table');
    const input = path.join(work, 'part-0.csv');
    await writeFile(input, 'a,1\n');
    // A config file too: the YAML parser is the package's one runtime dependency.
    const config = path.join(work, 'config.yaml');
    await writeFile(config, 'concurrency: 4\n');
    const sc = async (...args: string[]) =>
      (
        await run(bin, ['--config', config, ...args], { cwd: work, env: { ...process.env, NO_COLOR: '1' } })
      ).stdout.trim();
    const job = await sc('stage', '--target', target, '--partition-by', 'dt', '--tasks', '1');
    await sc('stage', '--job', job, '--task', '0', '--partition', 'dt=2026-11-30', input);
    await sc('commit-task', '--job', job, '--task', '0');
    const success = await sc('commit-job', '--job', job);
    assert.equal(await readFile(path.join(target, 'dt=2026-11-30', 'part-0.csv'), 'utf8'), 'a,1\n');
    assert.equal(success, path.join(target, '_SUCCESS'));
  });

  test("import('stagecommit') gives the library", async () => {
    const script =
      "const m = await import('stagecommit'); console.log(JSON.stringify(['stage', 'stageFiles', 'attemptPath', 'commitTask', 'commitJob', 'abort', 'recover', 'status', 'cleanOrphans', 'StagecommitError'].map((n) => typeof m[n])));";
    const r = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: prefix });
    assert.deepEqual(JSON.parse(r.stdout), Array(10).fill('function'));
  });

  test('its types resolve through exports for a TypeScript consumer', async () => {
    await writeFile(
      path.join(prefix, 'use.ts'),
      "import { commitJob, type CommitJobDoc } from 'stagecommit';\nexport const f: typeof commitJob = commitJob;\nexport type R = CommitJobDoc['outcome'];\n",
    );
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const types = path.join(ROOT, 'node_modules', '@types');
    // A Node 20 consumer's settings (@tsconfig/node20: es2022, lib es2023, no DOM).
    const node20 = ['--target', 'es2022', '--lib', 'es2023', '--module', 'nodenext', '--moduleResolution', 'nodenext'];
    const r = await run(
      process.execPath,
      [tsc, '--noEmit', '--strict', ...node20, '--typeRoots', types, '--types', 'node', 'use.ts'],
      { cwd: prefix },
    ).catch((e: { stdout: string }) => e);
    assert.equal(r.stdout.trim(), '');
  });
});
