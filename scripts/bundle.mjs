#!/usr/bin/env node
// `npm run build`, second half: bundles the CLI and the library with esbuild into dist/bundle/,
// what the installed package runs. Start-up is dominated by loading many small modules (the AWS
// SDK alone is hundreds); one file per entry loads in one read. Code that only some steps need
// (the S3 and WebHDFS stores, ora) stays behind dynamic imports, in chunks loaded on first use.
import { build } from 'esbuild';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// Chunk names carry a hash: an earlier build's chunks would stay beside these (and be packed).
rmSync(path.join(root, 'dist', 'bundle'), { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { cli: 'src/cli/main.ts', index: 'src/index.ts' },
  outdir: 'dist/bundle',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Prefer the dependencies' ES module builds: they bundle without CommonJS wrappers.
  mainFields: ['module', 'main'],
  // CommonJS inside an ES module bundle still calls require() for Node's built-ins.
  banner: { js: "import { createRequire as __scRequire } from 'node:module'; const require = __scRequire(import.meta.url);" },
  chunkNames: 'chunks/[name]-[hash]',
  legalComments: 'eof',
  logLevel: 'warning',
});
