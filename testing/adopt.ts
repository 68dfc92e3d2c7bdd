// The adopt suites' fixtures: an engine's leftover laid into a table, a tree's snapshot with
// sizes and times (dry runs must not change it), and the check that a table holds what the
// uninterrupted engine job would have left.

import assert from 'node:assert/strict';
import { posix } from 'node:path';
import type { Store } from '../src/store/types.js';
import type { EngineCase } from './engines.js';
import { cli, type CliResult } from './cli.js';
import { inProcess, okInProcess } from './main.js';
import type { StoreSandbox } from './stores.js';
import { readTree, writeTree, type Tree } from './tree.js';

/**
 * The CLI in a suite's sandbox (`sandbox()` gives it once the suite has made it): `run` as a
 * process, for the real step under test; `here` and `inproc` run main() in this process, for
 * setup, checks and dry runs; `realOrDry` picks by whether dry-run arguments are given.
 */
export function adoptRunners(sandbox: () => StoreSandbox) {
  const run = (args: string[]): Promise<CliResult> => cli(args, { env: sandbox().env });
  const here = (args: string[]): Promise<string> => okInProcess(args, { env: sandbox().env });
  const inproc = (args: string[]) => inProcess(args, { env: sandbox().env });
  const realOrDry = (dry: string[]) => (dry.length ? inproc : run);
  return { run, here, inproc, realOrDry };
}

/** Every file and directory under `base` with its size and modification time. */
export async function snapshot(store: Store, base: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const visit = async (dir: string, rel: string): Promise<void> => {
    for (const e of await store.list(dir, { details: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      out[r] = `${e.kind} ${e.size} ${e.mtimeMs}`;
      if (e.kind === 'dir') await visit(e.path, r);
    }
  };
  await visit(base, '');
  return out;
}

const isData = (k: string) => k.split('/').every((s) => !s.startsWith('_') && !s.startsWith('.'));
export const dataOf = (t: Tree) => Object.fromEntries(Object.entries(t).filter(([k]) => isData(k)));

/** The table `<root>/sales` as the killed engine job left it, leftover included. */
export async function table(
  sb: StoreSandbox,
  root: string,
  c: EngineCase,
): Promise<{ root: string; target: string; leftover: string }> {
  const target = posix.join(root, 'sales');
  await writeTree(sb.store, target, c.before);
  return { root, target, leftover: posix.join(target, c.leftover) };
}

/** The table holds what the uninterrupted engine job left: its data exactly, every checksum file it wrote. */
export async function assertFinished(sb: StoreSandbox, c: EngineCase, root: string, target: string): Promise<void> {
  const tree = await readTree(sb.store, target);
  assert.deepEqual(dataOf(tree), dataOf(c.after));
  for (const [k, v] of Object.entries(c.after)) assert.equal(tree[k], v, `${k} is in the table`);
  const leftovers = Object.keys(tree).filter((k) => /^(_temporary|\.spark-staging|\.hive-staging)/.test(k));
  assert.deepEqual(leftovers, [], 'the leftover is gone from the table');
  const staging = Object.keys(await readTree(sb.store, posix.join(root, '.stagecommit'))).filter(
    (k) => !k.startsWith('sales/_log/'),
  );
  assert.deepEqual(staging, [], 'no staging dir is left');
}

/** The leftover's own files (leftover-relative), as the engine case lays them out. */
export function leftoverFiles(c: EngineCase): Tree {
  return Object.fromEntries(
    Object.entries(c.before)
      .filter(([p]) => p.startsWith(c.leftover + '/'))
      .map(([p, v]) => [p.slice(c.leftover.length + 1), v]),
  );
}
