#!/usr/bin/env node
// `npm run build`, second half: bundles the CLI and the library with esbuild into dist/bundle/,
// what the installed package runs. Start-up is dominated by loading many small modules (the AWS
// SDK alone is hundreds); one file per entry loads in one read.
// - The library (index.js) is an ES module; code that only some callers need (the S3 and WebHDFS
//   stores, ora) stays behind dynamic imports, in chunks loaded on first use.
// - The CLI (cli.cjs) is one CommonJS file with everything in it, so that bin/load-cli.js can hand
//   V8 the code it compiled on an earlier run (Node 20 has no compile cache for ES modules): its
//   modules are still evaluated only when first used, and the S3 SDK is only parsed, not compiled,
//   by a step on another store.
import { build } from 'esbuild';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// Chunk names carry a hash: an earlier build's chunks would stay beside these (and be packed).
rmSync(path.join(root, 'dist', 'bundle'), { recursive: true, force: true });
const common = {
  absWorkingDir: root,
  outdir: 'dist/bundle',
  bundle: true,
  platform: 'node',
  target: 'node20',
  // Prefer the dependencies' ES module builds: they bundle without CommonJS wrappers.
  mainFields: ['module', 'main'],
  legalComments: 'eof',
  logLevel: 'warning',
};
await build({
  ...common,
  entryPoints: { index: 'src/index.ts' },
  splitting: true,
  format: 'esm',
  // CommonJS inside an ES module bundle still calls require() for Node's built-ins.
  banner: {
    js: "import { createRequire as __scRequire } from 'node:module'; const require = __scRequire(import.meta.url);",
  },
  chunkNames: 'chunks/[name]-[hash]',
});

/**
 * A dependency's `import('node:http')` would stay a dynamic import in CommonJS output, which code
 * compiled by vm.Script cannot make: it becomes a module of the bundle that requires the built-in.
 */
const builtinsRequired = {
  name: 'builtins-required',
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) =>
      args.kind === 'dynamic-import' ? { path: args.path, namespace: 'builtin' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'builtin' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};
await build({
  ...common,
  entryPoints: { cli: 'src/cli/main.ts' },
  format: 'cjs',
  outExtension: { '.js': '.cjs' },
  // The loader passes the bundle's own URL in: version.ts finds package.json from it.
  define: { 'import.meta.url': '__scMetaUrl' },
  plugins: [builtinsRequired],
  // Less to read and parse on every start (names are kept: stack traces stay readable), and ASCII
  // only, the licences in a file beside it (cli.cjs.LEGAL.txt), so that it reads as latin1.
  minifyWhitespace: true,
  minifySyntax: true,
  charset: 'ascii',
  legalComments: 'external',
});
const cli = readFileSync(path.join(root, 'dist', 'bundle', 'cli.cjs'), 'utf8');
const left = /\bimport\(\s*["'`]/.exec(cli.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, ''));
if (left)
  throw new Error(
    `dist/bundle/cli.cjs still makes a dynamic import (${cli.slice(left.index, left.index + 60)}): vm.Script cannot run it`,
  );
