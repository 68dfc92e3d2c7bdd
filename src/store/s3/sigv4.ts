// AWS Signature Version 4 for the signed requests (signed.ts), computed synchronously with
// node:crypto: one SHA-256 of the canonical request and one HMAC per request, the signing key
// derived once per day, region and secret. The SDK's signer does the same in a chain of awaited
// hashes and costs about 0.2 ms of CPU a request, which on a 2-core machine shared with the
// server is time the server does not get (bench/s3-commit.ts). The payload is never hashed:
// every request says UNSIGNED-PAYLOAD, as the SDK's S3 client does over TLS.
// Reference: https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html

import { createHash, createHmac } from 'node:crypto';

export interface Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface ToSign {
  readonly method: string;
  /** The request path exactly as sent, each segment already encoded (S3 paths are not encoded twice). */
  readonly path: string;
  /** Query parameters, unencoded. */
  readonly query: Readonly<Record<string, string>>;
  /** Header names in lower case; every one of them is signed. */
  readonly headers: Readonly<Record<string, string>>;
  /** The payload's hash as signed; by default the x-amz-content-sha256 header, else UNSIGNED-PAYLOAD. */
  readonly payloadHash?: string;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';

/**
 * RFC 3986 encoding of one path segment or query component, as SigV4 canonicalises it (encodeURIComponent leaves !'()*
 * alone).
 */
export function encodeSegment(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The query string in SigV4's canonical form (sorted by encoded name), which is also a valid query to send. */
export function canonicalQuery(query: Readonly<Record<string, string>>): string {
  return Object.entries(query)
    .map(([k, v]) => [encodeSegment(k), encodeSegment(v)] as const)
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

export class SigV4 {
  private key: { day: string; secret: string; value: Buffer } | null = null;

  constructor(
    private readonly region: string,
    private readonly service: string,
  ) {}

  /**
   * The headers to add to `req` (x-amz-date, x-amz-security-token when the credentials carry
   * one, authorization), signed at `now`.
   */
  sign(req: ToSign, creds: Credentials, now: Date): Record<string, string> {
    const amzDate = now
      .toISOString()
      .replace(/[-:]/g, '')
      .replace(/\.\d{3}/, ''); // 20261201T190000Z
    const day = amzDate.slice(0, 8);
    const added: Record<string, string> = { 'x-amz-date': amzDate };
    if (creds.sessionToken) added['x-amz-security-token'] = creds.sessionToken;
    const headers = { ...req.headers, ...added };
    const names = Object.keys(headers).sort();
    const canonicalHeaders = names.map((n) => `${n}:${headers[n]!.trim().replace(/\s+/g, ' ')}\n`).join('');
    const signedHeaders = names.join(';');
    const payload = req.payloadHash ?? headers['x-amz-content-sha256'] ?? 'UNSIGNED-PAYLOAD';
    const canonical = `${req.method}\n${req.path}\n${canonicalQuery(req.query)}\n${canonicalHeaders}\n${signedHeaders}\n${payload}`;
    const scope = `${day}/${this.region}/${this.service}/aws4_request`;
    const toSign = `${ALGORITHM}\n${amzDate}\n${scope}\n${createHash('sha256').update(canonical).digest('hex')}`;
    const signature = createHmac('sha256', this.signingKey(day, creds.secretAccessKey)).update(toSign).digest('hex');
    added.authorization = `${ALGORITHM} Credential=${creds.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
    return added;
  }

  private signingKey(day: string, secret: string): Buffer {
    if (this.key?.day === day && this.key.secret === secret) return this.key.value;
    let k: Buffer = createHmac('sha256', `AWS4${secret}`).update(day).digest();
    for (const part of [this.region, this.service, 'aws4_request']) k = createHmac('sha256', k).update(part).digest();
    this.key = { day, secret, value: k };
    return k;
  }
}
