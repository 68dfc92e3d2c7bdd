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
const { main } = await import('../dist/src/cli/main.js');
const code = await main(process.argv.slice(2), { cwd: process.cwd(), env: process.env, stdin: process.stdin });
process.exitCode = code;
