// The version the installed package says it is: read from its package.json at run time, so a
// release never needs a code change (the tsc output and the bundle sit at different depths).

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export function packageVersion(from: string = import.meta.url): string {
  let dir = path.dirname(fileURLToPath(from));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'stagecommit' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // no package.json here, or not ours: look one level up
    }
    const up = path.dirname(dir);
    if (up === dir) return 'unknown';
    dir = up;
  }
}
