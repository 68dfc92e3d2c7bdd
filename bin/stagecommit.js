#!/usr/bin/env node
// Entry point: more threads for parallel file moves, then the CLI.
process.env.UV_THREADPOOL_SIZE ??= '16';
const { main } = await import('../dist/src/cli/main.js');
const code = await main(process.argv.slice(2), { cwd: process.cwd(), env: process.env, stdin: process.stdin });
process.exitCode = code;
