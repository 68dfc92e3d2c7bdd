// WebHDFS settings from the config file's `webhdfs:` section, the cluster's HADOOP_CONF_DIR and
// Hadoop's environment variables.

import { readFileSync } from 'node:fs';
import { UsageError } from '../../errors.js';
import { defaultFs, HTTP_PORT, HTTPS_PORT, readHadoopConf, webHdfsUrls, type HadoopConfEnv } from './hadoop-conf.js';
import { httpFetch, httpFetchWithCa } from './http-fetch.js';
import type { WebHdfsSettings } from './webhdfs-store.js';

export interface WebHdfsEnv {
  readonly HADOOP_USER_NAME?: string;
  readonly HADOOP_TOKEN?: string;
  readonly HADOOP_TOKEN_FILE_LOCATION?: string;
  readonly USER?: string;
  readonly HADOOP_CONF_DIR?: string;
}

/** Ports the name node's RPC server uses by default (Hadoop 2/3, old tutorials): never WebHDFS. */
const RPC_PORTS = new Set(['8020', '9000', '54310']);

/**
 * `hdfs://host:port/…` and `webhdfs://…` speak HTTP to that name node (port 9870 by default),
 * `swebhdfs://…` HTTPS (9871). An authority listed under `webhdfs.nameservices`, or a name service
 * (or RPC address) in HADOOP_CONF_DIR's hdfs-site.xml, maps to its name nodes' HTTP addresses,
 * tried in order with failover on StandbyException; `hdfs:///…` is fs.defaultFS's.
 */
export async function webHdfsSettings(
  scheme: string,
  authority: string,
  config: unknown,
  env: WebHdfsEnv,
): Promise<WebHdfsSettings> {
  const c = section(config);
  // `${env.NAME}` in the XML may name any variable: the whole environment is passed on.
  const conf = env.HADOOP_CONF_DIR ? await readHadoopConf(env.HADOOP_CONF_DIR, env as HadoopConfEnv) : null;
  const { name, nameNodes } = resolveNameNodes(scheme, authority, c.values, conf);
  const mine = new Set(nameNodes.map(canonicalUrl));
  // Another spelling of a location on this cluster: a URI whose name nodes include one of ours.
  const sameCluster = (s: string, a: string): boolean => {
    try {
      return resolveNameNodes(s, a, c.values, conf).nameNodes.some((u) => mine.has(canonicalUrl(u)));
    } catch {
      return false;
    }
  };
  const caFile = c.str('caFile');
  const fetchWithCa = caFile ? fetchTrusting(caFile) : undefined;
  const delegation = c.str('delegation') ?? env.HADOOP_TOKEN ?? (await tokenFromFile(env, name, nameNodes));
  const kerberos = delegation ? undefined : kerberosSettings(c.values.kerberos, conf);
  const basePath = checkBasePath(c.str('basePath'));
  const basicAuth = basicAuthHeader(c.values.basicAuth, nameNodes);
  if (basicAuth && kerberos) throw new UsageError({ reason: 'basic-auth-with-kerberos' });
  return {
    ...(basePath ? { basePath } : {}),
    ...(basicAuth ? { basicAuth } : {}),
    nameNodes,
    uriPrefix: `${scheme}://${authority}`,
    sameCluster,
    user: c.str('user') ?? env.HADOOP_USER_NAME ?? env.USER,
    ...(delegation ? { delegation } : {}),
    ...(kerberos ? { spnego: new (await import('./spnego.js')).Spnego(kerberos) } : {}),
    retries: c.num('retries', 4),
    retryBaseMs: c.num('retryBaseMs', 200),
    requestTimeoutMs: c.num('requestTimeoutMs', 60_000),
    fetch: guardRpcPorts(fetchWithCa ?? httpFetch),
  };
}

/** The config file's `webhdfs:` section, with readers that name the setting a bad value is in. */
interface Section {
  readonly values: Record<string, unknown>;
  num(key: string, def: number): number;
  str(key: string): string | undefined;
}

function section(config: unknown): Section {
  if (config !== undefined && (config === null || typeof config !== 'object' || Array.isArray(config))) {
    throw new UsageError({
      reason: 'config-invalid',
      setting: 'webhdfs',
      must: 'be a mapping (user, nameservices, retries, caFile, …)',
    });
  }
  const values = (config ?? {}) as Record<string, unknown>;
  const bad = (key: string, must: string) =>
    new UsageError({ reason: 'config-invalid', setting: `webhdfs.${key}`, must });
  return {
    values,
    num(key, def) {
      const v = values[key];
      if (v === undefined) return def;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw bad(key, 'be a whole number');
      return v;
    },
    str(key) {
      const v = values[key];
      if (v !== undefined && typeof v !== 'string') throw bad(key, 'be a string');
      return v;
    },
  };
}

/** httpFetch trusting the certificate authorities in `caFile` (`webhdfs.caFile`). */
function fetchTrusting(caFile: string): typeof fetch {
  let ca: string;
  try {
    ca = readFileSync(caFile, 'utf8');
  } catch (e) {
    const error = (e as Error).message;
    throw new UsageError({ reason: 'config-file-unreadable', setting: 'webhdfs.caFile', file: caFile, error });
  }
  return httpFetchWithCa(ca);
}

function checkBasePath(basePath: string | undefined): string | undefined {
  if (basePath !== undefined && !/^\/\S*[^/]$/.test(basePath))
    throw new UsageError({
      reason: 'config-invalid',
      setting: 'webhdfs.basePath',
      must: 'be a path such as /webhdfs/v1 or /gateway/default/webhdfs/v1 (no trailing /)',
    });
  return basePath;
}

/**
 * The delegation token for this cluster from the token storage file HADOOP_TOKEN_FILE_LOCATION
 * names (as Hadoop's own clients read it), when it holds one.
 */
async function tokenFromFile(env: WebHdfsEnv, name: string, nameNodes: readonly string[]): Promise<string | undefined> {
  const file = env.HADOOP_TOKEN_FILE_LOCATION;
  if (!file) return undefined;
  const { readTokenFile, tokenFor, encodeToken } = await import('./tokens.js');
  const tokens = await readTokenFile(file);
  const token = tokenFor(tokens, name, nameNodes);
  return token ? encodeToken(token) : undefined;
}

/**
 * Kerberos (SPNEGO) when the config says so (`webhdfs.kerberos: true`, or a mapping with
 * `principal` and `keytab`), or the cluster's core-site.xml has hadoop.security.authentication=kerberos.
 */
function kerberosSettings(
  value: unknown,
  conf: { get(name: string): string | undefined } | null,
): { principal?: string; keytab?: string } | undefined {
  if (value === false) return undefined;
  if (value === undefined)
    return conf?.get('hadoop.security.authentication')?.trim().toLowerCase() === 'kerberos' ? {} : undefined;
  if (value === true) return {};
  const bad = () =>
    new UsageError({
      reason: 'config-invalid',
      setting: 'webhdfs.kerberos',
      must: "be true (the ticket cache, after kinit) or a mapping with 'principal' and 'keytab'",
    });
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw bad();
  const { principal, keytab } = value as Record<string, unknown>;
  if (
    (principal !== undefined && typeof principal !== 'string') ||
    (keytab !== undefined && typeof keytab !== 'string')
  )
    throw bad();
  if (keytab && !principal) throw new UsageError({ reason: 'keytab-without-principal' });
  return { ...(principal ? { principal } : {}), ...(keytab ? { keytab } : {}) };
}

/**
 * `webhdfs.basicAuth: {user, passwordFile}` (a Knox gateway's LDAP user) as an Authorization
 * header; only over TLS, since basic auth sends the password as it is.
 */
function basicAuthHeader(value: unknown, nameNodes: readonly string[]): string | undefined {
  if (value === undefined) return undefined;
  const { user, passwordFile } = (value ?? {}) as Record<string, unknown>;
  if (typeof user !== 'string' || typeof passwordFile !== 'string' || !user || user.includes(':'))
    throw new UsageError({
      reason: 'config-invalid',
      setting: 'webhdfs.basicAuth',
      must: "be a mapping with 'user' (no ':') and 'passwordFile' (a file holding the password)",
    });
  const clear = nameNodes.find((u) => !u.startsWith('https:'));
  if (clear) throw new UsageError({ reason: 'basic-auth-in-clear', url: clear });
  let password: string;
  try {
    password = readFileSync(passwordFile, 'utf8').replace(/\r?\n$/, '');
  } catch (e) {
    throw new UsageError({
      reason: 'config-file-unreadable',
      setting: 'webhdfs.basicAuth.passwordFile',
      file: passwordFile,
      error: (e as Error).message,
    });
  }
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

type Conf = Parameters<typeof webHdfsUrls>[0];

/**
 * The name an authority comes to ('' is fs.defaultFS's) and its name nodes' base URLs: the config
 * file's name service, HADOOP_CONF_DIR's (a name service or an RPC address), else the authority
 * itself as an HTTP(S) address.
 */
function resolveNameNodes(
  scheme: string,
  authority: string,
  c: Record<string, unknown>,
  conf: Conf | null,
): { name: string; nameNodes: string[] } {
  const tls = scheme === 'swebhdfs';
  let name = authority;
  if (name === '') {
    const fs = conf && defaultFs(conf);
    if (!fs) {
      throw new UsageError({ reason: 'no-default-name-node', scheme, port: tls ? HTTPS_PORT : HTTP_PORT });
    }
    name = fs.authority;
  }
  const nameNodes = listedNameNodes(c, name) ??
    (conf && webHdfsUrls(conf, name, tls)) ?? [
      `${tls ? 'https' : 'http'}://${name.includes(':') ? name : `${name}:${tls ? HTTPS_PORT : HTTP_PORT}`}`,
    ];
  return { name, nameNodes };
}

/** A name node URL as protocol://host:port, the host lower-cased and the port written out. */
function canonicalUrl(u: string): string {
  try {
    const url = new URL(u);
    const port = url.port || (url.protocol === 'https:' ? '443' : '80');
    return `${url.protocol}//${url.hostname.toLowerCase()}:${port}`;
  } catch {
    return u;
  }
}

/** The config file's own list of name nodes for a name service, if it has one. */
function listedNameNodes(c: Record<string, unknown>, name: string): string[] | null {
  const services = (c.nameservices ?? {}) as Record<string, unknown>;
  const listed = services[name];
  if (listed === undefined) return null;
  if (
    !Array.isArray(listed) ||
    listed.length === 0 ||
    !listed.every((u) => typeof u === 'string' && /^https?:\/\//.test(u))
  ) {
    throw new UsageError({
      reason: 'config-invalid',
      setting: `webhdfs.nameservices.${name}`,
      must: 'list name node URLs, e.g. [http://nn1:9870, http://nn2:9870]',
    });
  }
  return listed as string[];
}

function rpcHint(hostPort: string, why: string): UsageError {
  return new UsageError({
    reason: 'name-node-rpc-port',
    hostPort,
    why,
    host: hostPort.replace(/:\d+$/, ''),
    httpPort: HTTP_PORT,
  });
}

/**
 * A name node URL that is really the RPC port fails at once with a hint, instead of retrying:
 * Hadoop's RPC server answers HTTP with a plain-text "… Hadoop IPC port …", and on its default
 * ports a refused or garbled answer means the same mistake.
 */
function guardRpcPorts(inner: typeof fetch): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    let res: Response;
    try {
      res = await inner(input, init);
    } catch (e) {
      if (RPC_PORTS.has(url.port))
        throw rpcHint(
          url.host,
          `does not answer HTTP (${(e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message}), and ${url.port} is the RPC port by default`,
        );
      throw e;
    }
    if (res.status === 404 && !(res.headers.get('content-type') ?? '').includes('json')) {
      const text = await res
        .clone()
        .text()
        .catch(() => '');
      if (/Hadoop IPC port/i.test(text)) throw rpcHint(url.host, 'is a Hadoop IPC (RPC) port');
    }
    return res;
  }) as typeof fetch;
}
