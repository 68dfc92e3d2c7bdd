// A cluster's own Hadoop client config (the directory HADOOP_CONF_DIR names): `core-site.xml`
// for `fs.defaultFS`, `hdfs-site.xml` for name services, their HA name nodes and the name
// nodes' HTTP(S) addresses, which is where WebHDFS answers.

import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError } from '../../errors.js';

const FILES = ['core-site.xml', 'hdfs-site.xml'];
/** Hadoop's defaults for the name node's HTTP and HTTPS ports (3.x). */
export const HTTP_PORT = 9870;
export const HTTPS_PORT = 9871;
/** Substitutions in one value before it is taken as a loop, as Hadoop's Configuration stops. */
const MAX_SUBST = 20;
/** Includes inside includes: deeper is taken as a loop. */
const MAX_INCLUDE_DEPTH = 16;
/** Includes in all (files including one file twice, level after level, would read 2^16 files). */
const MAX_INCLUDES = 1000;

/**
 * What `${…}` may name besides other properties: the environment (`${env.NAME}`) and the two Java
 * system properties a client config uses.
 */
export interface HadoopConfEnv {
  readonly [name: string]: string | undefined;
}

interface Prop {
  readonly value: string;
  /** The file it was read from, for messages. */
  readonly file: string;
}

/**
 * The properties of a cluster's client config, read as Hadoop's Configuration reads them: later
 * files override earlier ones unless a property was marked final, and a value is expanded when it
 * is asked for (`get`): `${name}` by another property, `${env.NAME}`, `${env.NAME:-default}` and
 * `${env.NAME-default}` by the environment, `${user.name}` and `${user.home}` (the Java system
 * properties a client config uses) by the user's name and home. A value that still holds a
 * `${…}` nothing defines, or needs more than 20 substitutions, is bad input naming the property,
 * its file and the variable (Hadoop would pass the literal text on, to fail later as a host name).
 */
export class HadoopConf {
  constructor(
    private readonly props: ReadonlyMap<string, Prop>,
    private readonly env: HadoopConfEnv,
  ) {}

  /** A map of properties as if read from `file` (tests, the config file's own settings). */
  static of(values: Record<string, string>, env: HadoopConfEnv = {}, file = 'hdfs-site.xml'): HadoopConf {
    return new HadoopConf(new Map(Object.entries(values).map(([k, v]) => [k, { value: v, file }])), env);
  }

  get(name: string): string | undefined {
    const prop = this.props.get(name);
    if (prop === undefined) return undefined;
    const unbound = (v: string) =>
      new UsageError({ reason: 'hadoop-conf-unbound', file: prop.file, name, value: prop.value, variable: v });
    let value = prop.value;
    for (let n = 0; n < MAX_SUBST; n++) {
      const m = VARIABLE.exec(value);
      if (!m) return value;
      const v = m[1]!;
      const found = this.lookup(v);
      if (found === undefined) throw unbound(v);
      // A value that names itself stays as written in Hadoop; here it can only be a mistake.
      if (found.includes(m[0])) throw unbound(v);
      value = value.slice(0, m.index) + found + value.slice(m.index + m[0].length);
    }
    throw new UsageError({
      reason: 'hadoop-conf-substitution-loop',
      file: prop.file,
      name,
      value: prop.value,
      limit: MAX_SUBST,
    });
  }

  /** A variable's value: the environment for env.*, else a Java system property, else another property (raw). */
  private lookup(v: string): string | undefined {
    if (v.startsWith('env.') && v.length > 4) {
      const rest = v.slice(4);
      const colon = rest.indexOf(':-');
      const dash = rest.indexOf('-');
      if (colon >= 0 && (dash < 0 || colon < dash)) {
        const got = this.env[rest.slice(0, colon)];
        return got ? got : rest.slice(colon + 2);
      }
      if (dash >= 0) return this.env[rest.slice(0, dash)] ?? rest.slice(dash + 1);
      return this.env[rest];
    }
    if (v === 'user.name') return this.env.USER || os.userInfo().username;
    if (v === 'user.home') return this.env.HOME || os.homedir();
    return this.props.get(v)?.value;
  }
}

/** `${name}`: the leftmost, with no '}', '$' or space inside (Hadoop's pattern). */
const VARIABLE = /\$\{([^}$ ]+)\}/;

type Node = Record<string, unknown>;
type Parser = { parse(text: string): Node[] };

/** The element's name in a preserveOrder node (its one key besides attributes). */
function elementName(node: Node): string | undefined {
  return Object.keys(node).find((k) => k !== ':@' && k !== '#text');
}

function textOf(children: unknown): string {
  return ((children as Node[] | undefined) ?? [])
    .map((c) => (typeof c['#text'] === 'string' || typeof c['#text'] === 'number' ? String(c['#text']) : ''))
    .join('');
}

interface Reading {
  readonly props: Map<string, Prop>;
  readonly finals: Set<string>;
  readonly parser: Parser;
  includes: number;
}

/**
 * One file's properties in document order, its `xi:include`s read in place: a relative href is
 * taken from the including file's directory; an include that cannot be read uses its
 * `xi:fallback`'s content, and without one is bad input, as in Hadoop.
 */
async function readFileInto(r: Reading, file: string, depth: number, optional: boolean): Promise<boolean> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (optional && (code === 'ENOENT' || code === 'ENOTDIR')) return false;
    throw e;
  }
  let doc: Node[];
  try {
    doc = r.parser.parse(text);
  } catch (e) {
    throw new UsageError({ reason: 'hadoop-conf-not-xml', file, error: (e as Error).message.split('\n')[0]! });
  }
  const root = doc.find((n) => elementName(n) === 'configuration');
  if (root) await readElements(r, root.configuration as Node[], file, depth);
  return true;
}

async function readElements(r: Reading, nodes: Node[], file: string, depth: number): Promise<void> {
  for (const node of nodes) {
    const name = elementName(node);
    const attrs = (node[':@'] ?? {}) as Record<string, string>;
    if (name === 'property') setProperty(r, node.property as Node[], attrs, file);
    else if (name === 'include') await include(r, node.include as Node[], attrs, file, depth);
  }
}

function setProperty(r: Reading, children: Node[], attrs: Record<string, string>, file: string): void {
  const field = (key: string) => {
    const child = children.find((c) => elementName(c) === key);
    return child ? textOf(child[key]) : attrs[key];
  };
  const name = field('name')?.trim();
  if (!name) return;
  if (r.finals.has(name)) return; // a final property keeps its first value
  r.props.set(name, { value: field('value') ?? '', file });
  if (field('final')?.trim() === 'true') r.finals.add(name);
}

async function include(r: Reading, children: Node[], attrs: Record<string, string>, file: string, depth: number) {
  const href = attrs.href;
  if (!href) throw new UsageError({ reason: 'hadoop-include-no-href', file });
  const target = href.startsWith('file:')
    ? fileURLToPath(href)
    : path.isAbsolute(href)
      ? href
      : path.join(path.dirname(file), href);
  if (depth >= MAX_INCLUDE_DEPTH) throw new UsageError({ reason: 'hadoop-include-too-deep', file, href, depth });
  if (++r.includes > MAX_INCLUDES)
    throw new UsageError({ reason: 'hadoop-include-too-many', file, href, limit: MAX_INCLUDES });
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) && !href.startsWith('file:'))
    throw new UsageError({ reason: 'hadoop-include-url', file, href });
  let failure: Error;
  try {
    await readFileInto(r, target, depth + 1, false);
    return;
  } catch (e) {
    if (e instanceof UsageError) throw e;
    failure = e as Error;
  }
  const fallback = children.find((c) => elementName(c) === 'fallback');
  if (!fallback)
    throw new UsageError({
      reason: 'hadoop-include-unreadable',
      file,
      href,
      error: failure.message.split('\n')[0]!,
    });
  await readElements(r, fallback.fallback as Node[], file, depth);
}

/** Reads core-site.xml and hdfs-site.xml (either may be absent) with their includes; later files win. */
export async function readHadoopConf(dir: string, env: HadoopConfEnv = {}): Promise<HadoopConf> {
  const { XMLParser } = await import('fast-xml-parser');
  const parser = new XMLParser({
    preserveOrder: true,
    ignoreAttributes: false,
    attributeNamePrefix: '',
    removeNSPrefix: true,
    parseTagValue: false,
    parseAttributeValue: false,
    trimValues: true,
  }) as Parser;
  const r: Reading = { props: new Map(), finals: new Set(), parser, includes: 0 };
  let found = 0;
  for (const name of FILES) {
    const file = path.join(dir, name);
    try {
      if (await readFileInto(r, file, 0, true)) found++;
    } catch (e) {
      if (e instanceof UsageError) throw e;
      throw new UsageError({ reason: 'hadoop-conf-unreadable', file, error: (e as Error).message });
    }
  }
  if (found === 0) throw new UsageError({ reason: 'hadoop-conf-empty', dir });
  return new HadoopConf(r.props, env);
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
        throw new UsageError({ reason: 'hadoop-name-node-address', nameNode: nn, nameService: authority, key });
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
