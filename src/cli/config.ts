// The YAML config file (--config, STAGECOMMIT_CONFIG): staging root and limits; store settings
// for the remote stores live here too.

import { readFileSync } from 'node:fs';
import { UsageError } from '../errors.js';
import { yamlLib } from '../manifest/codec.js';

export interface Config {
  readonly stagingRoot?: string;
  readonly concurrency: number;
  readonly leaseTtlSeconds: number;
  readonly raw: Record<string, unknown>;
}

const DEFAULTS = { concurrency: 32, leaseTtlSeconds: 120 };

export function loadConfig(file: string | undefined): Config {
  if (!file) return { ...DEFAULTS, raw: {} };
  let doc: unknown;
  try {
    doc = yamlLib().parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new UsageError(`cannot read config ${file}: ${(e as Error).message.split('\n')[0]}; fix the file or leave out --config`);
  }
  if (doc === null || doc === undefined) return { ...DEFAULTS, raw: {} };
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new UsageError(`config ${file} is not a YAML mapping: see the README for its keys`);
  const d = doc as Record<string, unknown>;
  const num = (key: string, def: number): number => {
    const v = d[key];
    if (v === undefined) return def;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new UsageError(`config ${file}: '${key}' must be a positive whole number`);
    return v;
  };
  const stagingRoot = d.stagingRoot;
  if (stagingRoot !== undefined && typeof stagingRoot !== 'string') throw new UsageError(`config ${file}: 'stagingRoot' must be a path or URI`);
  return { stagingRoot, concurrency: num('concurrency', DEFAULTS.concurrency), leaseTtlSeconds: num('leaseTtlSeconds', DEFAULTS.leaseTtlSeconds), raw: d };
}
