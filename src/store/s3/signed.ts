// Signed S3 requests without the SDK's per-command middleware, for the requests a commit makes
// once per file (CopyObject, CompleteMultipartUpload) and those `stage` makes per file or part
// (PutObject, CreateMultipartUpload, UploadPart: the bytes streamed from the file, never buffered
// whole nor hashed by the SDK first). The SDK spends ~1.5 ms of CPU on each
// command (serde, endpoint rules, retry bookkeeping); on a 2-core machine shared with the
// server that halves the rate of a 2,000-file commit (bench/s3-commit.ts). What stays the
// SDK's: the credential chain and the endpoint rules (resolved once per bucket). The signature
// (sigv4.ts) and the HTTP exchange (transport.ts, with the SDK's deadlines) are our own.
// Retries follow the SDK's standard mode: throttling, 5xx and broken connections, with
// jittered exponential backoff.

import type { S3Client } from '@aws-sdk/client-s3';
import { admitChange } from '../fence.js';
import { credentialProblem } from './keys.js';
import { canonicalQuery, encodeSegment, SigV4 } from './sigv4.js';
import { SourceChanged, Transport, type Deadlines, type StreamedBody } from './transport.js';

export interface SignedRequest {
  readonly method: 'GET' | 'PUT' | 'POST' | 'DELETE' | 'HEAD';
  readonly bucket: string;
  readonly key: string;
  readonly query?: Record<string, string>;
  readonly headers?: Record<string, string>;
  readonly body?: string | StreamedBody;
  /**
   * The root element a successful answer carries, whole (CopyObjectResult, …). A 200 without it
   * (an empty body, a connection closed early, a proxy's page) is not a success: it is retried as
   * a server failure, since S3 sends a long copy's 200 before its result. `etag`: the answer has
   * no body and must carry an ETag header (PutObject, UploadPart).
   */
  readonly expect: string | { readonly etag: true };
}

export interface SignedResponse {
  readonly status: number;
  readonly body: string;
  readonly etag?: string;
}

/** An S3 error shaped as the SDK's are (name = S3 error code, $metadata.httpStatusCode), so one mapping serves both. */
export class S3ResponseError extends Error {
  readonly $metadata: { httpStatusCode: number };
  constructor(
    code: string,
    message: string,
    status: number,
    /** The region S3 says the bucket is in (x-amz-bucket-region), sent with a redirect. */
    readonly bucketRegion?: string,
  ) {
    super(message || code);
    this.name = code;
    this.$metadata = { httpStatusCode: status };
  }
}

/**
 * The bucket's own region when an answer is a redirect to it, as the SDK's followRegionRedirects
 * reads one: a 301 (PermanentRedirect), or a 400 IllegalLocationConstraintException, carrying
 * x-amz-bucket-region.
 */
export function redirectRegion(e: unknown): string | undefined {
  if (!(e instanceof S3ResponseError) || !e.bucketRegion) return undefined;
  const status = e.$metadata.httpStatusCode;
  return status === 301 || (status === 400 && e.name === 'IllegalLocationConstraintException')
    ? e.bucketRegion
    : undefined;
}

interface Endpoint {
  readonly protocol: string;
  readonly hostname: string;
  readonly port?: number;
  /** The bucket's path prefix: "/bucket" with path-style addressing, "" with virtual hosts. */
  readonly basePath: string;
  readonly signer: SigV4;
}

const RETRYABLE_CODES = new Set([
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'RequestTimeout',
  'RequestTimeTooSkewed',
  'InternalError',
  'ServiceUnavailable',
]);
const BASE_DELAY_MS = 100;
const MAX_DELAY_MS = 20_000;

const ENTITY = /&(?:#(\d+)|#x([0-9a-fA-F]+)|(amp|lt|gt|quot|apos));/g;
const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** XML character data with its references (named and numeric) resolved. */
export function xmlDecode(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(ENTITY, (_, dec?: string, hex?: string, name?: string) =>
    name
      ? NAMED[name]!
      : String.fromCodePoint(dec !== undefined ? Number.parseInt(dec, 10) : Number.parseInt(hex!, 16)),
  );
}

/** The text of the first element `name` in an S3 answer, references resolved; '' when absent. */
export function tag(xml: string, name: string): string {
  const m = new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(xml);
  return m ? xmlDecode(m[1]!) : '';
}

/** XML text with its five special characters escaped. */
export function xmlText(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

/** Whether a failed request may be sent again: not when the credentials are missing or refused. */
export function retryable(e: unknown): boolean {
  if (credentialProblem(e) !== null || e instanceof SourceChanged) return false;
  if (e instanceof S3ResponseError)
    return e.$metadata.httpStatusCode >= 500 || e.$metadata.httpStatusCode === 429 || RETRYABLE_CODES.has(e.name);
  // Anything else came from the connection (reset, refused, timed out): the request may be sent again.
  return true;
}

export class SignedRequests {
  private readonly endpoints = new Map<string, Promise<Endpoint | null>>();
  private readonly transport: Transport;

  constructor(
    private readonly client: S3Client,
    private readonly maxAttempts: number,
    deadlines: Deadlines,
    private readonly onRequest: () => void,
  ) {
    this.transport = new Transport(deadlines);
  }

  /**
   * Sends one request, retried like the SDK's standard mode. Resolves to null when this bucket
   * needs what only the SDK does (S3 Express sessions, SigV4a): the caller then uses the SDK.
   * An answer of 200 that carries an <Error> (CopyObject and CompleteMultipartUpload do this) is an error.
   */
  async send(req: SignedRequest): Promise<SignedResponse | null> {
    let ep = await this.endpoint(req.bucket);
    if (!ep) return null;
    let redirected = false;
    for (let attempt = 1; ; attempt++) {
      const cut = req.method === 'GET' || req.method === 'HEAD' ? undefined : admitChange(`/${req.bucket}/${req.key}`);
      try {
        return await this.once(ep, req, cut);
      } catch (e) {
        if (cut?.aborted) throw cut.reason;
        // A bucket in another region: its region from now on for this bucket, once per request.
        const region = redirected ? undefined : redirectRegion(e);
        if (region) {
          redirected = true;
          attempt--;
          const moved = this.resolve(req.bucket, region);
          this.endpoints.set(req.bucket, moved);
          ep = await moved;
          if (!ep) return null;
          continue;
        }
        if (attempt >= this.maxAttempts || !retryable(e)) throw e;
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** attempt)));
      }
    }
  }

  private async once(ep: Endpoint, req: SignedRequest, signal?: AbortSignal): Promise<SignedResponse> {
    const path = `${ep.basePath}/${req.key.split('/').map(encodeSegment).join('/')}`;
    const body = req.body ?? '';
    const query = req.query ?? {};
    const headers: Record<string, string> = {
      host: ep.port ? `${ep.hostname}:${ep.port}` : ep.hostname,
      'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
      'content-length': String(typeof body === 'string' ? Buffer.byteLength(body) : body.length),
      ...req.headers,
    };
    const cfg = this.client.config;
    // The SDK learns the server's clock skew from its own answers; signatures here use it too.
    const now = new Date(Date.now() + ((cfg as { systemClockOffset?: number }).systemClockOffset ?? 0));
    Object.assign(headers, ep.signer.sign({ method: req.method, path, query, headers }, await cfg.credentials(), now));
    this.onRequest();
    const qs = canonicalQuery(query);
    const answer = await this.transport.send({
      protocol: ep.protocol,
      hostname: ep.hostname,
      port: ep.port,
      method: req.method,
      path: qs ? `${path}?${qs}` : path,
      headers,
      body,
      signal,
    });
    const status = answer.status;
    const text = answer.body;
    const errorDoc = /^\s*(<\?xml[^>]*\?>\s*)?<Error>/.test(text);
    if (status >= 300 || errorDoc) {
      const code = tag(text, 'Code') || (status === 404 ? 'NotFound' : `HTTP${status}`);
      // A 200 with an <Error> inside is a server failure after the headers went out: retried as a 500.
      throw new S3ResponseError(code, tag(text, 'Message'), status >= 300 ? status : 500, answer.bucketRegion);
    }
    if (typeof req.expect !== 'string') {
      if (!answer.etag)
        throw new S3ResponseError('IncompleteAnswer', `the answer to ${req.method} ${path} carries no ETag`, 500);
      return { status, body: text, etag: answer.etag };
    }
    if (!text.includes(`<${req.expect}`) || !text.includes(`</${req.expect}>`)) {
      throw new S3ResponseError(
        'IncompleteAnswer',
        `the answer to ${req.method} ${path} is not a whole <${req.expect}> (${text.length} bytes${text ? `: ${JSON.stringify(text.slice(0, 60))}` : ''})`,
        500,
      );
    }
    return { status, body: text };
  }

  /** The bucket's endpoint by the SDK's own rules, once per bucket. */
  private endpoint(bucket: string): Promise<Endpoint | null> {
    let ep = this.endpoints.get(bucket);
    if (!ep) {
      ep = this.resolve(bucket);
      this.endpoints.set(bucket, ep);
      ep.catch(() => this.endpoints.delete(bucket));
    }
    return ep;
  }

  /**
   * The endpoint by the SDK's rules from the settings' one resolution (settings.ts resolveS3): the
   * client is given the endpoint, or told to find none, so both paths reach the same host.
   */
  private async resolve(bucket: string, bucketRegion?: string): Promise<Endpoint | null> {
    const cfg = this.client.config;
    const custom = cfg.isCustomEndpoint && cfg.endpoint ? await cfg.endpoint() : undefined;
    const region = bucketRegion ?? (await cfg.region());
    const resolved = cfg.endpointProvider({
      Bucket: bucket,
      Region: region,
      UseFIPS: await cfg.useFipsEndpoint(),
      UseDualStack: await cfg.useDualstackEndpoint(),
      ForcePathStyle: cfg.forcePathStyle,
      Accelerate: cfg.useAccelerateEndpoint,
      ...(custom
        ? { Endpoint: `${custom.protocol}//${custom.hostname}${custom.port ? `:${custom.port}` : ''}${custom.path}` }
        : {}),
    });
    const scheme = (
      resolved.properties?.authSchemes as { name?: string; signingRegion?: string; signingName?: string }[] | undefined
    )?.[0];
    if (scheme && scheme.name !== 'sigv4') return null;
    const url = resolved.url;
    const signer = new SigV4(scheme?.signingRegion ?? region, scheme?.signingName ?? 's3');
    return {
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      basePath: url.pathname.replace(/\/+$/, ''),
      signer,
    };
  }
}
