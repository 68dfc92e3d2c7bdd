// The version the installed package says it is: read from its package.json at run time, so a
// release never needs a code change (the tsc output and the bundle sit at different depths).

import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The installed package's root and version, found upward from this file; null when none is ours. */
function findPackage(from: string): { root: string; version: string } | null {
  let dir = path.dirname(fileURLToPath(from));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'stagecommit' && typeof pkg.version === 'string') return { root: dir, version: pkg.version };
    } catch {
      // no package.json here, or not ours: look one level up
    }
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

export function packageVersion(from: string = import.meta.url): string {
  return findPackage(from)?.version ?? 'unknown';
}

/** What the install check found: the version, where the package is, the library loaded from there, the node. */
export interface VersionCheck {
  readonly version: string;
  readonly package: string;
  readonly library: string;
  readonly node: string;
}

/**
 * `stagecommit --version --verbose`, the install check that works from any directory: the
 * version, where the package is, and the library loaded from there (what `import 'stagecommit'`
 * gives a project that has it installed). Throws when the library does not load.
 */
export function versionCheck(from: string = import.meta.url): VersionCheck {
  const pkg = findPackage(from);
  if (!pkg) throw new Error('the stagecommit package.json was not found above the running code: reinstall it');
  const library = path.join(pkg.root, 'dist', 'bundle', 'index.js');
  // Loaded by a node of its own, as a project's `import` would (the CLI itself may run from a code cache, where a
  // dynamic import is not available).
  const probe = `const m = await import(${JSON.stringify(pathToFileURL(library).href)}); for (const n of ['stage', 'commitTask', 'commitJob']) if (typeof m[n] !== 'function') throw new Error('lacks ' + n);`;
  const loaded = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8' });
  if (loaded.status !== 0) {
    // node prints an uncaught error's name and message first, then its stack and its own version.
    const lines = (loaded.stderr || String(loaded.error ?? '')).trim().split('\n');
    const why = lines.find((l) => /^[\w.]*Error\b/.test(l)) ?? lines.filter((l) => l.trim()).pop() ?? 'no answer';
    throw new Error(`the library ${library} does not load (${why}): reinstall stagecommit`);
  }
  return { version: pkg.version, package: pkg.root, library, node: process.version };
}

/** The install check as text. */
export function versionReport(from: string = import.meta.url): string {
  const c = versionCheck(from);
  return [
    `stagecommit ${c.version}`,
    `package  ${c.package}`,
    `library  ${c.library} (loads: stage, commitTask, commitJob, …)`,
    `node     ${c.node}`,
  ].join('\n');
}
