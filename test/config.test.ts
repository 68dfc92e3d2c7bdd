// Config files through the CLI: a mistyped key is exit 2 naming it and its closest known key,
// changing nothing; the user's default file ($XDG_CONFIG_HOME, else ~/.config) is read under
// --config, and the system file under both, key by key.

import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/cli/config.js';
import { cli } from '../testing/cli.js';

describe('config files', () => {
  let work: string;
  let n = 0;
  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'stagecommit-config-'));
  });
  after(() => rm(work, { recursive: true, force: true }));

  /** A fresh directory with a config file in it (and no user config around it). */
  async function setup(yaml?: string): Promise<{ dir: string; file: string; env: Record<string, string | undefined> }> {
    const dir = path.join(work, `c${++n}`);
    await mkdir(dir);
    const file = path.join(dir, 'config.yaml');
    if (yaml !== undefined) await writeFile(file, yaml);
    // The CLI's code cache (bin/load-cli.js) goes elsewhere: `dir` holds only what a step made.
    return {
      dir,
      file,
      env: {
        XDG_CONFIG_HOME: path.join(dir, 'xdg'),
        HOME: dir,
        XDG_CACHE_HOME: path.join(work, 'cache'),
        STAGECOMMIT_CONFIG: undefined,
      },
    };
  }

  for (const [yaml, key, near] of [
    ['stagingRot: /tmp/x\n', 'stagingRot', 'stagingRoot'],
    ['s3:\n  endpont: http://127.0.0.1:1\n', 's3.endpont', 's3.endpoint'],
    ['webhdfs:\n  retrys: 2\n', 'webhdfs.retrys', 'webhdfs.retries'],
    ['concurency: 4\n', 'concurency', 'concurrency'],
  ] as const) {
    test(`'${key}' is exit 2 naming '${near}', and nothing is staged`, async () => {
      const { dir, file, env } = await setup(yaml);
      const r = await cli(['--config', file, 'stage', '--target', path.join(dir, 'sales')], { env });
      assert.equal(r.code, 2, r.stderr);
      assert.equal(
        r.stderr.trim(),
        `stagecommit: error: config ${file}: unknown key '${key}': did you mean '${near}'?`,
      );
      assert.equal(r.stdout, '');
      assert.deepEqual((await readdir(dir)).sort(), ['config.yaml']);
    });
  }

  test('a key far from every known one lists the known keys', async () => {
    const { dir, file, env } = await setup('s3:\n  bucketPolicy: x\n');
    const r = await cli(['--config', file, 'stage', '--target', path.join(dir, 'sales')], { env });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown key 's3\.bucketPolicy': the known keys of 's3' are endpoint, region, pathStyle, /);
  });

  test('the user file under $XDG_CONFIG_HOME is read, and a mistake in it is named', async () => {
    const { dir, env } = await setup();
    const userDir = path.join(env.XDG_CONFIG_HOME!, 'stagecommit');
    await mkdir(userDir, { recursive: true });
    await writeFile(path.join(userDir, 'config.yaml'), `stagingRoot: ${path.join(dir, 'staging-user')}\n`);
    const r = await cli(['stage', '--target', path.join(dir, 'sales')], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(path.dirname(r.stdout.trim()), path.join(dir, 'staging-user'));

    await writeFile(path.join(userDir, 'config.yaml'), 'stagingroot: /x\n');
    const bad = await cli(['stage', '--target', path.join(dir, 'other')], { env });
    assert.equal(bad.code, 2);
    assert.match(
      bad.stderr,
      new RegExp(
        `config ${path.join(userDir, 'config.yaml')}: unknown key 'stagingroot': did you mean 'stagingRoot'\\?`,
      ),
    );
  });

  test('without XDG_CONFIG_HOME the user file is ~/.config/stagecommit/config.yaml', async () => {
    const { dir, env } = await setup();
    await mkdir(path.join(dir, '.config', 'stagecommit'), { recursive: true });
    await writeFile(
      path.join(dir, '.config', 'stagecommit', 'config.yaml'),
      `stagingRoot: ${path.join(dir, 'staging-home')}\n`,
    );
    const r = await cli(['stage', '--target', path.join(dir, 'sales')], {
      env: { ...env, XDG_CONFIG_HOME: undefined },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(path.dirname(r.stdout.trim()), path.join(dir, 'staging-home'));
  });

  test('--config beats STAGECOMMIT_CONFIG, which beats the user file, key by key', async () => {
    const { dir, file, env } = await setup();
    const userDir = path.join(env.XDG_CONFIG_HOME!, 'stagecommit');
    await mkdir(userDir, { recursive: true });
    await writeFile(
      path.join(userDir, 'config.yaml'),
      `stagingRoot: ${path.join(dir, 'staging-user')}\nleaseTtlSeconds: 0\n`,
    );
    // The user file's bad leaseTtlSeconds is overridden by the explicit file: only the merged value is judged.
    await writeFile(file, `leaseTtlSeconds: 60\n`);
    const fromUser = await cli(['--config', file, 'stage', '--target', path.join(dir, 'a')], { env });
    assert.equal(fromUser.code, 0, fromUser.stderr);
    assert.equal(path.dirname(fromUser.stdout.trim()), path.join(dir, 'staging-user'));
    const envFile = path.join(dir, 'env.yaml');
    await writeFile(envFile, `stagingRoot: ${path.join(dir, 'staging-env')}\nleaseTtlSeconds: 60\n`);
    const fromEnv = await cli(['stage', '--target', path.join(dir, 'b')], {
      env: { ...env, STAGECOMMIT_CONFIG: envFile },
    });
    assert.equal(path.dirname(fromEnv.stdout.trim()), path.join(dir, 'staging-env'), fromEnv.stderr);
    await writeFile(file, `stagingRoot: ${path.join(dir, 'staging-flag')}\nleaseTtlSeconds: 60\n`);
    const fromFlag = await cli(['--config', file, 'stage', '--target', path.join(dir, 'c')], {
      env: { ...env, STAGECOMMIT_CONFIG: envFile },
    });
    assert.equal(path.dirname(fromFlag.stdout.trim()), path.join(dir, 'staging-flag'), fromFlag.stderr);
  });

  test('the system file is read under the user file, sections merged key by key (library)', async () => {
    const { dir, env } = await setup();
    const system = path.join(dir, 'system.yaml');
    await writeFile(system, 'concurrency: 8\ns3:\n  endpoint: http://system:7480\n  region: eu-west-1\n');
    await mkdir(path.join(env.XDG_CONFIG_HOME!, 'stagecommit'), { recursive: true });
    const user = path.join(env.XDG_CONFIG_HOME!, 'stagecommit', 'config.yaml');
    await writeFile(user, 's3:\n  endpoint: http://user:7480\n');
    const c = loadConfig(undefined, env, system);
    assert.equal(c.concurrency, 8);
    assert.deepEqual(c.raw.s3, { endpoint: 'http://user:7480', region: 'eu-west-1' });
    assert.deepEqual(c.files, [user, system]);
    assert.throws(() => loadConfig(path.join(dir, 'missing.yaml'), env, system), /cannot read config .*missing\.yaml/);
  });
});
