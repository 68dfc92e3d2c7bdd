// Runs the built CLI as a user would: a child process, its exit code, stdout and stderr.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ErrorDoc, ErrorDocError } from '../src/api/errors.js';
import { checkJsonOutput } from './schemas.js';

/** The command: bin/ of this checkout (under scripts/test.mjs it runs the bundle: STAGECOMMIT_BUNDLE=1). */
export const BIN = fileURLToPath(new URL('../../bin/stagecommit.js', import.meta.url));

export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  readonly env?: Record<string, string | undefined>;
  readonly input?: string | Buffer;
  readonly cwd?: string;
}

/** The CLI's environment: this process's, no colours, then `opts.env` (an undefined value removes a name). */
export function cliEnv(opts: CliOptions): Record<string, string> {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: '1', ...opts.env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return env as Record<string, string>;
}

/**
 * Starts the CLI; `result` settles when it exits (the child is there to signal it meanwhile). Its
 * `--json` output is checked against the published schema: a document that breaks it rejects.
 */
export function spawnCli(
  args: readonly string[],
  opts: CliOptions = {},
): { child: ChildProcess; result: Promise<CliResult> } {
  const env = cliEnv(opts);
  const child = spawn(process.execPath, [BIN, ...args], { env, cwd: opts.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  const result = new Promise<CliResult>((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      try {
        checkJsonOutput(args, code, stdout);
      } catch (e) {
        return reject(e as Error);
      }
      resolve({ code, signal, stdout, stderr });
    });
  });
  child.stdin!.end(opts.input ?? '');
  return { child, result };
}

export function cli(args: readonly string[], opts: CliOptions = {}): Promise<CliResult> {
  return spawnCli(args, opts).result;
}

/** Waits until `cond` holds (a barrier on what a store shows); fails after `limitMs`. */
export async function until(what: string, cond: () => Promise<boolean>, limitMs = 60_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Runs the CLI and fails with its stderr unless it exits 0; returns stdout trimmed. */
export async function ok(args: readonly string[], opts: CliOptions = {}): Promise<string> {
  const r = await cli(args, opts);
  if (r.code !== 0) throw new Error(`stagecommit ${args.join(' ')} exited ${r.code ?? r.signal}: ${r.stderr}`);
  return r.stdout.trim();
}

/** The error of a run made with --json that failed: its document's `error` (kind, reason, detail, …). */
export function errorOf(r: CliResult): ErrorDocError {
  const doc = JSON.parse(r.stdout) as ErrorDoc;
  if (doc.ok !== false) throw new Error(`not an error document: ${r.stdout}`);
  return doc.error;
}

/** What a failure is expected to be: its kind (when it matters), its reason and some of its fields. */
export type Failure = { readonly kind?: ErrorDocError['kind']; readonly reason: string } & Record<string, unknown>;

/**
 * Checks a run made with --json that failed: its exit code, its error's kind and reason, and the
 * fields of its `detail` that `want` names (the others are not compared). Returns the error.
 */
export function assertFailed(r: CliResult, code: number, want: Failure): ErrorDocError {
  assert.equal(r.code, code, r.stderr || r.stdout);
  const e = errorOf(r);
  const { kind, ...fields } = want;
  if (kind !== undefined) assert.equal(e.kind, kind, r.stdout);
  const detail = e.detail as Record<string, unknown>;
  assert.deepEqual(Object.fromEntries(Object.keys(fields).map((k) => [k, detail[k]])), fields, r.stdout);
  return e;
}
