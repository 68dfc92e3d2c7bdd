// URIs → a store and a path in it. One store per scheme and authority; the protocol never
// sees the scheme.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError } from '../errors.js';
import { LocalStore } from './local.js';
import { realLocalPath } from './local-tree.js';
import type { Store } from './types.js';

/** s3a:// and s3n:// parse as 's3'. */
export type Scheme = 'file' | 's3' | 'hdfs' | 'webhdfs' | 'swebhdfs';

export interface ParsedUri {
  readonly scheme: Scheme;
  /** Bucket, or name node host:port / name service; '' for local files and for hdfs:///… (fs.defaultFS). */
  readonly authority: string;
  /** The path inside the store (absolute, '/'-separated). */
  readonly path: string;
}

const REMOTE = /^([a-z][a-z0-9+.-]*):\/\/([^/]*)(\/.*)?$/i;

/** Line breaks: a location holding one cannot be written on one manifest line, nor printed as one. */
const LINE_BREAK = /[\n\r\u2028\u2029]/;

export function parseUri(raw: string, cwd: string): ParsedUri {
  const parsed = parseLocation(raw, cwd);
  if (LINE_BREAK.test(raw) || LINE_BREAK.test(parsed.path)) {
    throw new UsageError({ reason: 'uri-line-break', uri: raw });
  }
  return parsed;
}

function parseLocation(raw: string, cwd: string): ParsedUri {
  if (raw === '') throw new UsageError({ reason: 'uri-empty' });
  if (raw.startsWith('file:')) {
    let p: string;
    try {
      // A URL parser reads a backslash as '/' (WHATWG); in a POSIX name it is a character like any other.
      p = fileURLToPath(raw.replace(/\\/g, '%5C'));
    } catch (e) {
      throw new UsageError({ reason: 'file-uri-invalid', uri: raw, error: (e as Error).message });
    }
    return { scheme: 'file', authority: '', path: normalize(p) };
  }
  const m = REMOTE.exec(raw);
  if (m) {
    const given = m[1]!.toLowerCase();
    // Hadoop's S3 connectors' schemes (what Spark jobs write) name the same objects.
    const scheme = given === 's3a' || given === 's3n' ? 's3' : given;
    if (scheme !== 's3' && scheme !== 'hdfs' && scheme !== 'webhdfs' && scheme !== 'swebhdfs') {
      throw new UsageError({ reason: 'uri-scheme-unsupported', uri: raw, scheme: given });
    }
    // hdfs:///path is the cluster's default file system (fs.defaultFS in HADOOP_CONF_DIR), as in Hadoop.
    if (!m[2] && scheme === 's3') throw new UsageError({ reason: 'uri-no-bucket', uri: raw, scheme: given });
    return { scheme, authority: m[2] ?? '', path: normalize(decodePath(raw, m[3] ?? '/')) };
  }
  // `hdfs:/wh/t` is Hadoop's spelling of a path on the default file system; `s3:/b/t`, `s3//b/t`
  // and the like are typos of a URI. Neither is a local relative path.
  const near =
    /^(s3[an]?|hdfs|webhdfs|swebhdfs):\/?(?!\/)(.*)$/i.exec(raw) ??
    /^(s3[an]?|hdfs|webhdfs|swebhdfs)\/\/(.*)$/i.exec(raw);
  if (near) {
    const given = near[1]!.toLowerCase();
    if (given === 'hdfs' && raw[5] === '/')
      return { scheme: 'hdfs', authority: '', path: normalize(decodePath(raw, near[2] ? `/${near[2]}` : '/')) };
    throw new UsageError({ reason: 'uri-missing-slashes', uri: raw, scheme: given });
  }
  return { scheme: 'file', authority: '', path: normalize(path.resolve(cwd, raw)) };
}

/** A URI's path with its percent-escapes decoded; a '%' that starts no escape is a usage error. */
function decodePath(raw: string, p: string): string {
  try {
    return decodeURIComponent(p);
  } catch {
    throw new UsageError({ reason: 'uri-bad-percent', uri: raw });
  }
}

/**
 * '/' is the only separator on every store: a backslash is part of a name (POSIX, HDFS, S3 keys), never a separator.
 */
function normalize(p: string): string {
  const n = path.posix.normalize(p);
  return n.length > 1 ? n.replace(/\/+$/, '') : n;
}

export function storeKey(u: ParsedUri): string {
  return `${u.scheme}://${u.authority}`;
}

/** What the stores need from outside: the config file and the environment, passed in. */
export interface StoreSettings {
  readonly config: Record<string, unknown>;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Where a store's warnings go (the step's own warnings: printed unless --quiet). */
  readonly warn?: (message: string) => void;
}

export interface Located {
  readonly store: Store;
  /** The path inside the store (S3: "/bucket/key"). */
  readonly path: string;
}

/** Opens stores by scheme (one per scheme and authority); remote stores load on first use. */
export class StoreOpener {
  private readonly cache = new Map<string, Promise<Store>>();
  constructor(private readonly settings: StoreSettings) {}

  /**
   * `followLink` false keeps a local path's last name as given (its parents resolved), for a step
   * that refuses a symbolic link given to it; every other local path is resolved whole.
   */
  async open(u: ParsedUri, followLink = true): Promise<Located> {
    const key = storeKey(u);
    let s = this.cache.get(key);
    if (!s) {
      s = this.create(u);
      this.cache.set(key, s);
    }
    const store = await s;
    // A job's identity is its location: a local path reached through a link is the path it resolves to.
    if (u.scheme === 'file') return { store, path: realLocalPath(u.path, followLink) };
    return { store, path: u.scheme === 's3' ? `/${u.authority}${u.path === '/' ? '' : u.path}` : u.path };
  }

  private async create(u: ParsedUri): Promise<Store> {
    switch (u.scheme) {
      case 'file':
        return new LocalStore();
      case 's3': {
        const [{ S3Store }, { s3Settings }] = await Promise.all([
          import('./s3/s3-store.js'),
          import('./s3/settings.js'),
        ]);
        return new S3Store(await s3Settings(this.settings.config.s3, this.settings.env, this.settings.warn));
      }
      case 'hdfs':
      case 'webhdfs':
      case 'swebhdfs': {
        const [{ WebHdfsStore }, { webHdfsSettings }] = await Promise.all([
          import('./webhdfs/webhdfs-store.js'),
          import('./webhdfs/settings.js'),
        ]);
        return new WebHdfsStore(
          await webHdfsSettings(u.scheme, u.authority, this.settings.config.webhdfs, this.settings.env),
        );
      }
    }
  }
}
