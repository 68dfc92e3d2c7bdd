// Hadoop delegation tokens from a token storage file (what HADOOP_TOKEN_FILE_LOCATION names and
// `hdfs fetchdt` writes): "HDTS", a format byte, then the credentials, either as Writables
// (format 0: counts and lengths as Hadoop VInts) or as one length-delimited protobuf
// CredentialsProto (format 1). A token is sent to WebHDFS as `delegation=` in Hadoop's URL
// string form: its Writable bytes in URL-safe base64 without padding.

import { readFile } from 'node:fs/promises';
import { UsageError } from '../../errors.js';

export interface HadoopToken {
  readonly alias: string;
  readonly identifier: Buffer;
  readonly password: Buffer;
  readonly kind: string;
  readonly service: string;
}

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}
  need(n: number): void {
    if (n < 0 || this.pos + n > this.buf.length)
      throw new Error(`ends early (at byte ${this.pos} of ${this.buf.length})`);
  }
  byte(): number {
    this.need(1);
    return this.buf[this.pos++]!;
  }
  bytes(n: number): Buffer {
    this.need(n);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  /** Hadoop's WritableUtils VInt: one byte from -112 to 127, else a length byte then big-endian bytes. */
  vint(): number {
    const first = (this.byte() << 24) >> 24;
    if (first >= -112) return first;
    const negative = first < -120;
    const len = negative ? -(first + 120) : -(first + 112);
    let v = 0n;
    for (let i = 0; i < len; i++) v = (v << 8n) | BigInt(this.byte());
    const n = Number(negative ? ~v : v);
    if (!Number.isSafeInteger(n)) throw new Error('a length is out of range');
    return n;
  }
  /** Protobuf base-128 varint. */
  varint(): number {
    let v = 0;
    for (let shift = 0; shift < 50; shift += 7) {
      const b = this.byte();
      v += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return v;
    }
    throw new Error('a varint is too long');
  }
  text(): string {
    return this.bytes(this.vint()).toString('utf8');
  }
}

function readWritable(r: Reader): HadoopToken[] {
  const tokens: HadoopToken[] = [];
  for (let n = r.vint(); n > 0; n--) {
    const alias = r.text();
    const identifier = r.bytes(r.vint());
    const password = r.bytes(r.vint());
    tokens.push({ alias, identifier, password, kind: r.text(), service: r.text() });
  }
  return tokens; // the secret keys that follow are not needed
}

/** Protobuf fields of one message: field number → values (bytes for length-delimited). */
function fields(buf: Buffer): Map<number, Buffer[]> {
  const r = new Reader(buf);
  const out = new Map<number, Buffer[]>();
  while (r.pos < buf.length) {
    const key = r.varint();
    const wire = key & 7;
    const field = Math.floor(key / 8);
    if (wire === 2) {
      const v = r.bytes(r.varint());
      out.set(field, [...(out.get(field) ?? []), v]);
    } else if (wire === 0) r.varint();
    else if (wire === 1) r.bytes(8);
    else if (wire === 5) r.bytes(4);
    else throw new Error(`protobuf wire type ${wire} is not expected here`);
  }
  return out;
}

function readProtobuf(r: Reader): HadoopToken[] {
  const message = r.bytes(r.varint());
  const tokens: HadoopToken[] = [];
  // CredentialsProto: tokens = 1 (CredentialsKVProto: alias = 1, token = 2 (TokenProto:
  // identifier = 1, password = 2, kind = 3, service = 4)).
  for (const kv of fields(message).get(1) ?? []) {
    const f = fields(kv);
    const token = f.get(2)?.[0];
    if (!token) continue;
    const t = fields(token);
    const one = (n: number) => t.get(n)?.[0] ?? Buffer.alloc(0);
    tokens.push({
      alias: (f.get(1)?.[0] ?? Buffer.alloc(0)).toString('utf8'),
      identifier: one(1),
      password: one(2),
      kind: one(3).toString('utf8'),
      service: one(4).toString('utf8'),
    });
  }
  return tokens;
}

export function parseTokenStorage(buf: Buffer): HadoopToken[] {
  const r = new Reader(buf);
  if (buf.length < 5 || r.bytes(4).toString('latin1') !== 'HDTS') throw new Error("it does not begin with 'HDTS'");
  const format = r.byte();
  if (format === 0) return readWritable(r);
  if (format === 1) return readProtobuf(r);
  throw new Error(`its format byte is ${format} (0: Writable and 1: protobuf are known)`);
}

export async function readTokenFile(file: string): Promise<HadoopToken[]> {
  let buf: Buffer;
  try {
    buf = await readFile(file);
  } catch (e) {
    throw new UsageError({ reason: 'token-file-unreadable', file, error: (e as Error).message });
  }
  try {
    return parseTokenStorage(buf);
  } catch (e) {
    throw new UsageError({ reason: 'token-file-invalid', file, error: (e as Error).message });
  }
}

function vintBytes(n: number): Buffer {
  if (n >= -112 && n <= 127) return Buffer.from([n & 0xff]);
  let v = BigInt(n < 0 ? ~n : n);
  const bytes: number[] = [];
  while (v > 0n) {
    bytes.unshift(Number(v & 0xffn));
    v >>= 8n;
  }
  const lead = (n < 0 ? -120 : -112) - bytes.length;
  return Buffer.from([lead & 0xff, ...bytes]);
}

function textBytes(s: string): Buffer {
  const b = Buffer.from(s, 'utf8');
  return Buffer.concat([vintBytes(b.length), b]);
}

/** A token's Writable bytes (identifier, password, kind, service). */
export function tokenWritable(t: Omit<HadoopToken, 'alias'>): Buffer {
  return Buffer.concat([
    vintBytes(t.identifier.length),
    t.identifier,
    vintBytes(t.password.length),
    t.password,
    textBytes(t.kind),
    textBytes(t.service),
  ]);
}

/** Hadoop's Token.encodeToUrlString. */
export function encodeToken(t: Omit<HadoopToken, 'alias'>): string {
  return tokenWritable(t).toString('base64url');
}

export { vintBytes as hadoopVInt, textBytes as hadoopText };

/** Kinds of tokens the name node's WebHDFS accepts as `delegation=`. */
const HDFS_KINDS = new Set(['HDFS_DELEGATION_TOKEN', 'WEBHDFS delegation', 'SWEBHDFS delegation']);

/**
 * The token for a name service or name node: its service names the authority (`ha-hdfs:<ns>`,
 * `host:port`, a name node's address), else the file's one HDFS token. Null when there is none.
 */
export function tokenFor(
  tokens: readonly HadoopToken[],
  authority: string,
  nameNodes: readonly string[],
): HadoopToken | null {
  const hdfs = tokens.filter((t) => HDFS_KINDS.has(t.kind));
  const hosts = new Set([authority, `ha-hdfs:${authority}`, ...nameNodes.map((u) => new URL(u).host)]);
  return hdfs.find((t) => hosts.has(t.service)) ?? (hdfs.length === 1 ? hdfs[0]! : null);
}
