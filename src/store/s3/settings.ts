// S3 settings from the config file's `s3:` section and the environment the AWS SDK knows.

import type { S3ClientConfig } from '@aws-sdk/client-s3';
import { UsageError } from '../../errors.js';
import type { Deadlines } from './transport.js';

export interface S3Settings {
  readonly client: S3ClientConfig;
  /** The SDK's and the signed requests' alike. */
  readonly deadlines: Deadlines;
  /** Files above this size are copied with UploadPartCopy in parts (S3's CopyObject stops at 5 GiB). */
  readonly multipartCopyThreshold: number;
  readonly multipartCopyPartSize: number;
  /** Uploads above this size go in parts. */
  readonly multipartUploadPartSize: number;
  /**
   * `stage FILE` sends files at least this large as multipart uploads to their final keys, left
   * pending until commit-job completes them (no copy); smaller files are copied at commit, which
   * is cheaper for them (bench/s3-commit.ts measures the crossover).
   */
  readonly pendingUploadMinBytes: number;
}

export const DEFAULT_S3: Omit<S3Settings, 'client' | 'deadlines'> = {
  multipartCopyThreshold: 5 * 1024 ** 3,
  multipartCopyPartSize: 512 * 1024 ** 2,
  multipartUploadPartSize: 16 * 1024 ** 2,
  pendingUploadMinBytes: 1024 ** 2,
};

/** The environment variables that matter, passed in by the command-line layer. */
export interface S3Env {
  readonly AWS_ENDPOINT_URL?: string;
  readonly AWS_ENDPOINT_URL_S3?: string;
  readonly AWS_REGION?: string;
  readonly AWS_DEFAULT_REGION?: string;
  readonly AWS_PROFILE?: string;
}

function num(section: Record<string, unknown>, key: string, def: number): number {
  const v = section[key];
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
    throw new UsageError(`config: 's3.${key}' must be a positive whole number`);
  return v;
}

/**
 * Endpoint: config `s3.endpoint`, else AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL. With a custom
 * endpoint, path-style addressing is the default (what Ceph and MinIO need) unless `s3.pathStyle`
 * says otherwise. Credentials come from the SDK's usual chain (environment, profile, …).
 */
export function s3Settings(config: unknown, env: S3Env, warn?: (message: string) => void): S3Settings {
  if (config !== undefined && (config === null || typeof config !== 'object' || Array.isArray(config))) {
    throw new UsageError("config: 's3' must be a mapping (endpoint, region, pathStyle, …)");
  }
  const s = (config ?? {}) as Record<string, unknown>;
  const str = (key: string): string | undefined => {
    const v = s[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw new UsageError(`config: 's3.${key}' must be a string`);
    return v;
  };
  const endpoint = str('endpoint') ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  const region = str('region') ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
  const pathStyle = s.pathStyle === undefined ? endpoint !== undefined : s.pathStyle === true;
  // A server that accepts and never answers must not hang a step: the socket's idle time is bounded.
  const deadlines = { connectionTimeout: 10_000, requestTimeout: num(s, 'requestTimeoutMs', 120_000) };
  return {
    deadlines,
    client: {
      region,
      ...(endpoint ? { endpoint } : {}),
      forcePathStyle: pathStyle,
      maxAttempts: num(s, 'maxAttempts', 6),
      requestHandler: { ...deadlines, throwOnRequestTimeout: true },
      ...(warn ? { logger: sdkLogger(warn) } : {}),
    },
    multipartCopyThreshold: num(s, 'multipartCopyThresholdBytes', DEFAULT_S3.multipartCopyThreshold),
    multipartCopyPartSize: num(s, 'multipartCopyPartBytes', DEFAULT_S3.multipartCopyPartSize),
    multipartUploadPartSize: num(s, 'uploadPartBytes', DEFAULT_S3.multipartUploadPartSize),
    pendingUploadMinBytes: num(s, 'pendingUploadMinBytes', DEFAULT_S3.pendingUploadMinBytes),
  };
}

/**
 * The SDK's warnings as the step's own: one line each, silenced by --quiet like ours (the SDK
 * would print its nine-line credential warning to the console whatever the flags).
 */
function sdkLogger(warn: (message: string) => void) {
  const quiet = () => {};
  return {
    debug: quiet,
    info: quiet,
    error: quiet,
    warn: (...parts: unknown[]) => {
      const text = parts.map(String).join(' ');
      if (/Multiple credential sources/.test(text)) {
        return warn(
          'AWS_PROFILE and AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are both set: the profile is used; unset one of them',
        );
      }
      warn(`AWS SDK: ${text.replace(/\s+/g, ' ').trim()}`);
    },
  };
}
