// WebHDFS settings from the config file's `webhdfs:` section and Hadoop's environment variables.

import { readFileSync } from 'node:fs';
import { UsageError } from '../../errors.js';
import type { WebHdfsSettings } from './webhdfs-store.js';

export interface WebHdfsEnv {
  readonly HADOOP_USER_NAME?: string;
  readonly HADOOP_TOKEN?: string;
  readonly USER?: string;
}

/**
 * `hdfs://host:port/…` and `webhdfs://…` speak HTTP to that name node (port 9870 by default),
 * `swebhdfs://…` HTTPS (9871); an authority listed under `webhdfs.nameservices` is a logical
 * name service whose name nodes are tried in order, failing over on StandbyException.
 */
export async function webHdfsSettings(scheme: string, authority: string, config: unknown, env: WebHdfsEnv): Promise<WebHdfsSettings> {
  if (config !== undefined && (config === null || typeof config !== 'object' || Array.isArray(config))) {
    throw new UsageError("config: 'webhdfs' must be a mapping (user, nameservices, retries, caFile, …)");
  }
  const c = (config ?? {}) as Record<string, unknown>;
  const tls = scheme === 'swebhdfs';
  const services = (c.nameservices ?? {}) as Record<string, unknown>;
  let nameNodes: string[];
  const listed = services[authority];
  if (listed !== undefined) {
    if (!Array.isArray(listed) || listed.length === 0 || !listed.every((u) => typeof u === 'string' && /^https?:\/\//.test(u))) {
      throw new UsageError(`config: 'webhdfs.nameservices.${authority}' must list name node URLs, e.g. [http://nn1:9870, http://nn2:9870]`);
    }
    nameNodes = listed as string[];
  } else {
    const hostPort = authority.includes(':') ? authority : `${authority}:${tls ? 9871 : 9870}`;
    nameNodes = [`${tls ? 'https' : 'http'}://${hostPort}`];
  }
  const num = (key: string, def: number) => {
    const v = c[key];
    if (v === undefined) return def;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new UsageError(`config: 'webhdfs.${key}' must be a whole number`);
    return v;
  };
  const str = (key: string) => {
    const v = c[key];
    if (v !== undefined && typeof v !== 'string') throw new UsageError(`config: 'webhdfs.${key}' must be a string`);
    return v as string | undefined;
  };
  let fetchWithCa: typeof fetch | undefined;
  const caFile = str('caFile');
  if (caFile) {
    let ca: string;
    try {
      ca = readFileSync(caFile, 'utf8');
    } catch (e) {
      throw new UsageError(`config: 'webhdfs.caFile' ${caFile} cannot be read: ${(e as Error).message}`);
    }
    const undici = await import('undici');
    const dispatcher = new undici.Agent({ connect: { ca } });
    fetchWithCa = ((input: string, init?: RequestInit) => undici.fetch(input, { ...(init as object), dispatcher } as never)) as unknown as typeof fetch;
  }
  return {
    nameNodes,
    uriPrefix: `${scheme}://${authority}`,
    user: str('user') ?? env.HADOOP_USER_NAME ?? env.USER,
    delegation: str('delegation') ?? env.HADOOP_TOKEN,
    retries: num('retries', 4),
    retryBaseMs: num('retryBaseMs', 200),
    fetch: fetchWithCa,
  };
}
