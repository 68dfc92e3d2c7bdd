#!/usr/bin/env node
// Points git at scripts/hooks (the commit-msg check) for this clone. Run by `npm run setup-hooks`
// and by the prepare step; where there is nothing to set up (CI, a tarball without .git, git not
// installed) it says nothing and succeeds, so `npm ci` never fails on it.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const git = (...args) => spawnSync('git', ['-C', root, ...args], { encoding: 'utf8' });
const explicit = process.argv.includes('--explicit');

if (process.env.CI && !explicit) process.exit(0);
const top = git('rev-parse', '--show-toplevel');
if (top.status !== 0 || path.resolve(top.stdout.trim()) !== root) {
  if (explicit) console.error('setup-hooks: not a git clone of stagecommit: no hooks to set up');
  process.exit(0);
}
const set = git('config', 'core.hooksPath', 'scripts/hooks');
if (set.status !== 0) {
  console.error(`setup-hooks: could not set core.hooksPath: ${set.stderr.trim()}`);
  process.exit(explicit ? 1 : 0);
}
if (explicit) console.error('setup-hooks: git now runs scripts/hooks (commit-msg: subjects of at most 72 characters)');
