// The YAML config files: staging root, limits and the stores' settings. Three layers, each key
// taken from the first that has it: the file given by --config (else STAGECOMMIT_CONFIG), the
// user's ($XDG_CONFIG_HOME/stagecommit/config.yaml, else ~/.config/…), the system's
// (/etc/stagecommit/config.yaml). A key no layer knows is bad input, named with its closest match.

import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UsageError } from '../errors.js';
import { yamlLib } from '../manifest/codec.js';
import { closest } from '../util/closest.js';

export interface Config {
  readonly stagingRoot?: string;
  readonly concurrency: number;
  readonly leaseTtlSeconds: number;
  /** The merged document, for the stores' own sections (`s3`, `webhdfs`). */
  readonly raw: Record<string, unknown>;
  /** The files read, most important first. */
  readonly files: readonly string[];
}

const DEFAULTS = { concurrency: 32, leaseTtlSeconds: 120 };
/**
 * A lease's TTL is how long a killed driver's job waits to be taken over, and how long a step that
 * finds the lease watches it unchanged: an hour at most (a timer cannot hold much more either).
 */
const MAXIMA = { concurrency: 100_000, leaseTtlSeconds: 3600 };
export const SYSTEM_CONFIG = '/etc/stagecommit/config.yaml';

/**
 * Every key a config file may hold; a nested object is a section. `*` under a section takes any
 * name (the name services a user defines).
 */
const KNOWN: Record<string, unknown> = {
  stagingRoot: true,
  concurrency: true,
  leaseTtlSeconds: true,
  s3: {
    endpoint: true,
    region: true,
    pathStyle: true,
    maxAttempts: true,
    requestTimeoutMs: true,
    multipartCopyThresholdBytes: true,
    multipartCopyPartBytes: true,
    uploadPartBytes: true,
    pendingUploadMinBytes: true,
  },
  webhdfs: {
    user: true,
    delegation: true,
    retries: true,
    retryBaseMs: true,
    requestTimeoutMs: true,
    caFile: true,
    kerberos: { principal: true, keytab: true },
    basePath: true,
    basicAuth: { user: true, passwordFile: true },
    nameservices: { '*': true },
  },
};

type Env = Readonly<Record<string, string | undefined>>;

/** The user's config file: under $XDG_CONFIG_HOME (an absolute path), else ~/.config. */
export function userConfigFile(env: Env): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'stagecommit', 'config.yaml');
}

export function loadConfig(
  explicit: string | undefined,
  env: Env = process.env,
  systemFile: string = SYSTEM_CONFIG,
): Config {
  const layers: { file: string; doc: Record<string, unknown> }[] = [];
  if (explicit !== undefined) layers.push({ file: explicit, doc: readLayer(explicit, true)! });
  for (const file of [userConfigFile(env), systemFile]) {
    const doc = readLayer(file, false);
    if (doc) layers.push({ file, doc });
  }
  for (const l of layers) checkKeys(l.doc, KNOWN, '', l.file);
  const raw = layers.reduceRight<Record<string, unknown>>((merged, l) => merge(merged, l.doc), {});
  const where = (key: string) => layers.find((l) => l.doc[key] !== undefined)?.file ?? 'config';
  const num = (key: 'concurrency' | 'leaseTtlSeconds'): number => {
    const v = raw[key];
    if (v === undefined) return DEFAULTS[key];
    const max = MAXIMA[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > max)
      throw new UsageError({
        reason: 'config-value-invalid',
        file: where(key),
        key,
        must: `a whole number from 1 to ${max}`,
      });
    return v;
  };
  const stagingRoot = raw.stagingRoot;
  if (stagingRoot !== undefined && typeof stagingRoot !== 'string')
    throw new UsageError({
      reason: 'config-value-invalid',
      file: where('stagingRoot'),
      key: 'stagingRoot',
      must: 'a path or URI',
    });
  return {
    stagingRoot,
    concurrency: num('concurrency'),
    leaseTtlSeconds: num('leaseTtlSeconds'),
    raw,
    files: layers.map((l) => l.file),
  };
}

/** One file's mapping; a default file that does not exist is no layer (null). */
function readLayer(file: string, required: boolean): Record<string, unknown> | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if (!required && (e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new UsageError({
      reason: 'config-unreadable',
      file,
      error: (e as Error).message.split('\n')[0]!,
      given: required,
    });
  }
  let doc: unknown;
  try {
    doc = yamlLib().parse(text);
  } catch (e) {
    throw new UsageError({ reason: 'config-not-yaml', file, error: (e as Error).message.split('\n')[0]! });
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new UsageError({ reason: 'config-not-mapping', file });
  return doc as Record<string, unknown>;
}

function checkKeys(doc: Record<string, unknown>, known: Record<string, unknown>, prefix: string, file: string): void {
  if ('*' in known) return;
  for (const [key, value] of Object.entries(doc)) {
    const spec = known[key];
    if (spec === undefined) {
      const names = Object.keys(known);
      const near = closest(key, names);
      throw new UsageError({
        reason: 'config-key-unknown',
        file,
        key: `${prefix}${key}`,
        section: prefix ? prefix.slice(0, -1) : null,
        near: near ? `${prefix}${near}` : null,
        known: names,
      });
    }
    if (typeof spec === 'object' && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      checkKeys(value as Record<string, unknown>, spec as Record<string, unknown>, `${prefix}${key}.`, file);
    }
  }
}

/** Sections merge key by key; anything else is replaced by the more important layer. */
function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    const isMap = (x: unknown): x is Record<string, unknown> =>
      x !== null && typeof x === 'object' && !Array.isArray(x);
    out[k] = isMap(b) && isMap(v) ? merge(b, v) : v;
  }
  return out;
}
