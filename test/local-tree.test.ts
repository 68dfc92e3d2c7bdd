// The order in which a local tree's directories are removed (src/store/local-tree.ts): in turns
// by parent, every path exactly once, whatever the shape (one parent of many, many of one).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { byParentInTurns } from '../src/store/local-tree.js';

test('paths come in turns by parent: the first child of each parent, then the second, …', () => {
  const paths = ['/s/a/1', '/s/a/2', '/s/a/3', '/s/b/1', '/s/c/1', '/s/c/2'];
  assert.deepEqual(byParentInTurns(paths), ['/s/a/1', '/s/b/1', '/s/c/1', '/s/a/2', '/s/c/2', '/s/a/3']);
  assert.deepEqual(byParentInTurns([]), []);
});

test('a skewed level (20,000 parents of one child beside one parent of 20,000) keeps every path once', () => {
  const paths = Array.from({ length: 20_000 }, (_, i) => `/s/one-${i}/x`);
  for (let i = 0; i < 20_000; i++) paths.push(`/s/many/${i}`);
  const out = byParentInTurns(paths);
  assert.equal(out.length, paths.length);
  assert.deepEqual([...out].sort(), [...paths].sort());
  // The lone children all come in the first turn, the big parent's in its turns after.
  assert.equal(out[20_001], '/s/many/1');
});
