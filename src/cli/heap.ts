// The V8 heap of a CLI process that commits many files.

import { createRequire } from 'node:module';

/** From this many files a commit's output tree is worth a tighter heap (about 11 MB of it at 100,000). */
export const MANY_FILES = 100_000;

let tightened = false;

/**
 * A commit of a million files holds its output tree, about 100 MB. V8 lets the heap grow to
 * about three times what its last full collection kept before it collects again: 330 MB at the
 * peak. Growing by half instead peaks at 260 MB (protocol.md §9.2 asks for at most 300), for about 5%
 * more time. Set only once a job is known to be large, before its tree is built: once a V8 flag
 * changes, Node compiles each of its own modules loaded afterwards from source, which at start-up
 * cost every command 19 ms. Not over a growth the user gave node, nor when node was told to
 * freeze its flags (V8 would abort the process). Such a run writes no code cache (v8FlagsChanged):
 * what it compiled carries the changed flags, and a normal start would reject it.
 * Returns whether it set the flag.
 */
export function tightenHeapFor(files: number, execArgv: readonly string[] = process.execArgv): boolean {
  if (tightened || files < MANY_FILES) return false;
  if (execArgv.some((a) => /^--(?:heap[-_]growing[-_]percent|freeze[-_]flags[-_]after[-_]init)\b/.test(a)))
    return false;
  tightened = true;
  (createRequire(import.meta.url)('node:v8') as typeof import('node:v8')).setFlagsFromString(
    '--heap-growing-percent=50',
  );
  return true;
}

/** Whether this process changed a V8 flag (bin/load-cli.js then keeps no code cache of it). */
export function v8FlagsChanged(): boolean {
  return tightened;
}
