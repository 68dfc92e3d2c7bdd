#!/usr/bin/env node
// Entry point: more threads for parallel file moves, quiet about the AWS SDK's notice that
// future releases will need Node 22 (Node 20 is supported today), calm about a closed stdout,
// then the CLI.
process.env.UV_THREADPOOL_SIZE ??= '128';
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = (warning, ...rest) => {
  if (String(warning).startsWith('NodeVersionSupportWarning')) return;
  emitWarning(warning, ...rest);
};
// A reader that stops early (`| head`) closes the pipe: what the step would still print is
// dropped, and the step ends as it would have, with its own exit code and no stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e) => {
    if (e.code !== 'EPIPE') throw e;
  });
}
// A checkout runs what `tsc` built (always current while developing); the installed package has
// only the bundle (`npm run build`, scripts/bundle.mjs), which starts faster. STAGECOMMIT_BUNDLE=1
// runs the bundle in a checkout too, as installed (the benchmarks time that).
const built = new URL('../dist/src/cli/main.js', import.meta.url);
const { existsSync } = await import('node:fs');
const tscOutput = existsSync(built) && process.env.STAGECOMMIT_BUNDLE !== '1';
const argv = process.argv.slice(2);
let main = null;
let saveCodeCache = () => {};
if (tscOutput) ({ main } = await import(built.href));
else {
  const { loadCli } = await import('./load-cli.js');
  const { fileURLToPath } = await import('node:url');
  const loaded = loadCli(fileURLToPath(new URL('../dist/bundle/cli.cjs', import.meta.url)), argv, process.env);
  ({ main } = loaded.cli);
  saveCodeCache = loaded.save;
}
const code = await main(argv, { cwd: process.cwd(), env: process.env, stdin: process.stdin });
process.exitCode = code;
// The step has ended: a request still in flight (a read that a store holds unanswered after the
// step stopped on its lease) must not keep the process, and the exit code, for minutes. The
// result comes first: the clock starts once stdout and stderr have handed over all they hold,
// however slowly their readers read.
const flushed = (stream) => new Promise((resolve) => stream.write('', () => resolve()));
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
// After the result: the first run of a new bundle keeps the code it compiled for the next ones.
saveCodeCache();
setTimeout(() => process.exit(code), 2000).unref();
