// The published JSON Schemas (schemas/*.json, shipped in the package): every `--json` document a
// test run of the CLI prints is checked against its command's schema (testing/cli.ts and main.ts).

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

export const SCHEMA_DIR = fileURLToPath(new URL('../../schemas/', import.meta.url));

let compiled: Map<string, ValidateFunction> | undefined;

/** Each schema file's name (without .json) → its compiled validator. */
export function schemas(): Map<string, ValidateFunction> {
  if (compiled) return compiled;
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  const names = readdirSync(SCHEMA_DIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -'.json'.length));
  for (const n of names) ajv.addSchema(JSON.parse(readFileSync(path.join(SCHEMA_DIR, `${n}.json`), 'utf8')), n);
  compiled = new Map(names.filter((n) => n !== 'common').map((n) => [n, ajv.getSchema(n)!]));
  return compiled;
}

/** Global options and the ones that take a value (the command is the first word after them). */
const GLOBAL_FLAGS = new Set(['--json', '-q', '--quiet', '-v', '--verbose', '--allow-unsigned-job']);

/**
 * Which schema a command line's `--json` output follows: the command's, `version` for --version,
 * `help` for --help and `help CMD`, `error` for an unknown command. Null: no --json, no document.
 */
export function schemaFor(args: readonly string[]): string | null {
  const end = args.indexOf('--');
  const opts = end < 0 ? args : args.slice(0, end);
  if (!opts.includes('--json')) return null;
  if (opts.some((a) => a === '--help' || a === '-h')) return 'help';
  for (let i = 0; i < opts.length; i++) {
    const a = opts[i]!;
    if (a === '--version' || a === '-V') return 'version';
    if (a === '--config') i++;
    else if (GLOBAL_FLAGS.has(a) || a.startsWith('--config=')) continue;
    else if (a.startsWith('-')) return 'error';
    else return schemas().has(a) && a !== 'error' && a !== 'version' ? a : 'error';
  }
  return 'error';
}

/**
 * Throws unless a finished CLI run's stdout is one document that its schema accepts, `ok` true on
 * exit 0 and an error document with the exit code otherwise. Runs killed by a signal, or stopped
 * by one (130, 143), print what they had, and are not checked.
 */
export function checkJsonOutput(args: readonly string[], code: number | null, stdout: string): void {
  const name = schemaFor(args);
  if (name === null || code === null || code >= 128) return;
  const where = `stagecommit ${args.join(' ')} (exit ${code})`;
  let doc: unknown;
  try {
    doc = JSON.parse(stdout);
  } catch {
    throw new Error(`${where}: stdout is not one JSON document: ${stdout.slice(0, 500)}`);
  }
  const validate = schemas().get(code === 0 ? name : 'error')!;
  if (!validate(doc)) {
    const errors = (validate.errors ?? []).map(
      (e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`,
    );
    throw new Error(
      `${where}: --json output does not match schemas/${name}.json: ${errors.slice(0, 8).join('; ')}; the document: ${stdout.slice(0, 600)}`,
    );
  }
  const d = doc as { ok?: unknown; error?: { exitCode?: unknown } };
  if (code === 0 && d.ok !== true) throw new Error(`${where}: exit 0 with a document whose ok is not true`);
  if (code !== 0 && d.error?.exitCode !== code)
    throw new Error(`${where}: the error document says exitCode ${String(d.error?.exitCode)}`);
}
