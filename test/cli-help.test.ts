// --help of every subcommand (examples, exit codes, global options) and the completion scripts.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { runMain } from '../testing/main.js';

const COMMANDS = ['stage', 'commit-task', 'commit-job', 'abort', 'recover', 'status', 'clean-orphans', 'completion'];

describe('help', () => {
  for (const c of COMMANDS) {
    test(`${c} --help: an example, its exit codes, the global options`, async () => {
      const r = await runMain([c, '--help']);
      assert.equal(r.code, 0);
      assert.match(r.stdout, new RegExp(`Examples:\\n  .*stagecommit ${c}`));
      assert.match(r.stdout, /Exit codes:\n {2}0 {2}done/);
      assert.match(r.stdout, /Global Options:[\s\S]*--json[\s\S]*--config/);
    });
  }

  test("stage's three forms are shown apart", async () => {
    const r = await runMain(['stage', '--help']);
    assert.match(
      r.stdout,
      /Forms:\n {2}stage --target URI[\s\S]*\n {2}stage --job JOB --task T .*FILE…[\s\S]*\n {2}stage --job JOB --task T .*--print-path/,
    );
  });
});

describe('completion', () => {
  const script = async (shell: string) => {
    const r = await runMain(['completion', shell]);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout;
  };
  const bash = (file: string, body: string) =>
    spawnSync('bash', ['-c', `source ${file}; ${body}`], { encoding: 'utf8' });

  test('bash: sources cleanly and completes subcommands, options and choices', async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'sc-comp-')), 'c.bash');
    writeFileSync(file, await script('bash'));
    assert.equal(spawnSync('bash', ['-n', file]).status, 0);
    const complete = (words: string[]) => {
      const r = bash(
        file,
        `COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _stagecommit; printf '%s\\n' "\${COMPREPLY[@]}"`,
      );
      assert.equal(r.status, 0, r.stderr);
      return r.stdout.trim().split('\n').filter(Boolean);
    };
    assert.deepEqual(complete(['stagecommit', 'comm']), ['commit-task', 'commit-job']);
    assert.deepEqual(complete(['stagecommit', 'cl']), ['clean-orphans']);
    assert.ok(complete(['stagecommit', 'stage', '--']).includes('--print-path'));
    assert.deepEqual(complete(['stagecommit', 'stage', '--mode', 'o']), ['overwrite']);
    assert.deepEqual(complete(['stagecommit', '--json', 'commit-job', '--par']), ['--parallelism']);
    // Each subcommand offers its own choices; a number or an id completes to nothing, a path to files.
    assert.deepEqual(complete(['stagecommit', 'adopt', '--mode', '']), ['append', 'overwrite']);
    assert.deepEqual(complete(['stagecommit', 'stage', '--mode', '']), ['create', 'append', 'overwrite']);
    const inDir = path.dirname(file) + '/';
    for (const opt of ['--task', '--tasks', '--attempt', '--job-id']) {
      assert.deepEqual(complete(['stagecommit', 'stage', opt, inDir]), [], opt);
    }
    assert.deepEqual(complete(['stagecommit', 'commit-job', '--parallelism', inDir]), []);
    assert.deepEqual(complete(['stagecommit', 'status', '--job', inDir]), [file]);
    assert.deepEqual(complete(['stagecommit', '--config', file]), [file]);
    // Positional arguments: a shell's name, a path where the command takes one, else nothing.
    assert.deepEqual(complete(['stagecommit', 'completion', '']), ['bash', 'zsh', 'fish']);
    for (const sub of ['status', 'commit-task', 'commit-job', 'abort', 'recover']) {
      assert.deepEqual(complete(['stagecommit', sub, inDir]), [], sub);
    }
    for (const sub of ['stage', 'jobs', 'clean-orphans', 'adopt']) {
      assert.deepEqual(complete(['stagecommit', sub, inDir]), [file], sub);
    }
    assert.ok(bash(file, 'complete -p stagecommit').stdout.includes('_stagecommit'));
  });

  test('zsh and fish: a script naming every subcommand; an unknown shell is exit 2', async () => {
    const zsh = await script('zsh');
    const fish = await script('fish');
    assert.match(zsh, /^#compdef stagecommit/);
    for (const c of COMMANDS) {
      assert.match(zsh, new RegExp(`'${c}:`));
      assert.match(fish, new RegExp(`-a ${c} -d`));
    }
    // zsh and fish offer each subcommand's own choices, and file names only for paths.
    assert.match(zsh, /\(adopt\) _arguments [^\n]*'--mode\[[^\]]*\]:value:\(append overwrite\)'/);
    assert.match(zsh, /\(stage\) _arguments [^\n]*'--tasks\[[^\]]*\]:value: '/);
    assert.match(zsh, /\(stage\) _arguments [^\n]*'--target\[[^\]]*\]:value:_files'/);
    assert.match(fish, /__fish_seen_subcommand_from adopt' -l mode -x -a 'append overwrite'/);
    assert.match(fish, /__fish_seen_subcommand_from stage' -l task -x -d/);
    assert.match(fish, /__fish_seen_subcommand_from stage' -l target -r -d/);
    for (const sub of ['status', 'commit-task', 'commit-job', 'abort', 'recover']) {
      assert.doesNotMatch(zsh, new RegExp(`\\(${sub}\\) _arguments [^\\n]*_files' ;;`), sub);
      assert.match(fish, new RegExp(`__fish_seen_subcommand_from ${sub}' -f\n`), sub);
    }
    assert.match(zsh, /\(stage\) _arguments [^\n]*'\*:file:_files' ;;/);
    assert.match(zsh, /\(completion\) _arguments [^\n]*'1:value:\(bash zsh fish\)' ;;/);
    assert.match(fish, /__fish_seen_subcommand_from completion' -f -a 'bash zsh fish'/);
    assert.equal((await runMain(['completion', 'tcsh'])).code, 2);
  });
});
