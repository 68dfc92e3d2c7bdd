// A cluster's own Hadoop client config (the directory HADOOP_CONF_DIR names): `core-site.xml`
// for `fs.defaultFS`, `hdfs-site.xml` for name services, their HA name nodes and the name
// nodes' HTTP(S) addresses, which is where WebHDFS answers.

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { UsageError } from '../../errors.js';

export type HadoopConf = ReadonlyMap<string, string>;

const FILES = ['core-site.xml', 'hdfs-site.xml'];
/** Hadoop's defaults for the name node's HTTP and HTTPS ports (3.x). */
export const HTTP_PORT = 9870;
export const HTTPS_PORT = 9871;

/** Reads the properties of core-site.xml and hdfs-site.xml (either may be absent); later files win. */
export async function readHadoopConf(dir: string): Promise<HadoopConf> {
  const { XMLParser } = await import('fast-xml-parser');
  const parser = new XMLParser({
    ignoreAttributes: true,
    isArray: (name) => name === 'property',
    parseTagValue: false,
    trimValues: true,
  });
  const props = new Map<string, string>();
  let found = 0;
  for (const name of FILES) {
    const file = path.join(dir, name);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') continue;
      throw new UsageError(`cannot read ${file} (HADOOP_CONF_DIR): ${(e as Error).message}`);
    }
    found++;
    let doc: { configuration?: { property?: { name?: unknown; value?: unknown }[] } };
    try {
      doc = parser.parse(text, true);
    } catch (e) {
      throw new UsageError(`${file} (HADOOP_CONF_DIR) is not valid XML: ${(e as Error).message.split('\n')[0]}`);
    }
    for (const p of doc.configuration?.property ?? []) {
      if (typeof p.name === 'string') props.set(p.name, typeof p.value === 'string' ? p.value : String(p.value ?? ''));
    }
  }
  if (found === 0)
    throw new UsageError(
      `HADOOP_CONF_DIR=${dir} holds neither core-site.xml nor hdfs-site.xml: point it at the cluster's client config, or unset it`,
    );
  return props;
}

/** `fs.defaultFS` as scheme and authority, when it names an HDFS file system. */
export function defaultFs(conf: HadoopConf): { scheme: string; authority: string } | null {
  const m = /^([a-z]+):\/\/([^/]+)\/?$/i.exec(conf.get('fs.defaultFS') ?? conf.get('fs.default.name') ?? '');
  if (!m || !['hdfs', 'webhdfs', 'swebhdfs'].includes(m[1]!.toLowerCase())) return null;
  return { scheme: m[1]!.toLowerCase(), authority: m[2]! };
}

const list = (v: string | undefined): string[] =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** An address setting as host:port; a wildcard host (0.0.0.0) means the host the RPC address names. */
function address(value: string | undefined, host: string): string | null {
  if (!value) return null;
  const m = /^(.*):(\d+)$/.exec(value.trim());
  if (!m) return null;
  return `${m[1] === '0.0.0.0' || m[1] === '' ? host : m[1]}:${m[2]}`;
}

/**
 * The WebHDFS base URLs for an authority, from the config: a name service's HA name nodes in
 * `dfs.ha.namenodes.<ns>` order, or a name node named by its RPC address (what `fs.defaultFS`
 * holds, `hdfs://nn:8020`). Null when the config does not know the authority.
 */
export function webHdfsUrls(conf: HadoopConf, authority: string, tls: boolean): string[] | null {
  const key = tls ? 'dfs.namenode.https-address' : 'dfs.namenode.http-address';
  const scheme = tls ? 'https' : 'http';
  const port = tls ? HTTPS_PORT : HTTP_PORT;
  if (list(conf.get('dfs.nameservices')).includes(authority)) {
    const nns = list(conf.get(`dfs.ha.namenodes.${authority}`));
    const hostOf = (rpc: string | undefined) => (rpc ? rpc.replace(/:\d+$/, '') : authority);
    if (nns.length === 0) {
      const rpc = conf.get(`dfs.namenode.rpc-address.${authority}`);
      return [`${scheme}://${address(conf.get(`${key}.${authority}`), hostOf(rpc)) ?? `${hostOf(rpc)}:${port}`}`];
    }
    const urls = nns.map((nn) => {
      const rpc = conf.get(`dfs.namenode.rpc-address.${authority}.${nn}`);
      const http =
        address(conf.get(`${key}.${authority}.${nn}`), hostOf(rpc)) ?? (rpc ? `${hostOf(rpc)}:${port}` : null);
      if (!http)
        throw new UsageError(
          `hdfs-site.xml (HADOOP_CONF_DIR) lists name node '${nn}' of '${authority}' but neither ${key}.${authority}.${nn} nor dfs.namenode.rpc-address.${authority}.${nn}`,
        );
      return `${scheme}://${http}`;
    });
    return urls;
  }
  // A single name node, named by its RPC address (fs.defaultFS, dfs.namenode.rpc-address).
  const host = authority.replace(/:\d+$/, '');
  const rpc = conf.get('dfs.namenode.rpc-address') ?? defaultFs(conf)?.authority;
  if (rpc === authority || (rpc && !authority.includes(':') && rpc.replace(/:\d+$/, '') === authority)) {
    return [`${scheme}://${address(conf.get(key), host) ?? `${host}:${port}`}`];
  }
  return null;
}
