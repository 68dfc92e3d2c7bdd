// S3 settings from the config file's `s3:` section, the environment and the shared AWS files.

import type { S3ClientConfig } from '@aws-sdk/client-s3';
import os from 'node:os';
import path from 'node:path';
import { UsageError } from '../../errors.js';
import type { Deadlines } from './transport.js';

export interface S3Settings {
  readonly client: S3ClientConfig;
  /** Region, endpoint and addressing as resolved, and whence. */
  readonly resolved: S3Resolved;
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

export const DEFAULT_S3: Omit<S3Settings, 'client' | 'deadlines' | 'resolved'> = {
  multipartCopyThreshold: 5 * 1024 ** 3,
  multipartCopyPartSize: 512 * 1024 ** 2,
  multipartUploadPartSize: 16 * 1024 ** 2,
  pendingUploadMinBytes: 1024 ** 2,
};

/** The environment variables that matter, passed in by the command-line layer. */
export interface S3Env {
  readonly AWS_ENDPOINT_URL?: string;
  readonly AWS_ENDPOINT_URL_S3?: string;
  readonly AWS_IGNORE_CONFIGURED_ENDPOINT_URLS?: string;
  readonly AWS_REGION?: string;
  readonly AWS_DEFAULT_REGION?: string;
  readonly AWS_PROFILE?: string;
  readonly AWS_CONFIG_FILE?: string;
  readonly AWS_SHARED_CREDENTIALS_FILE?: string;
  readonly HOME?: string;
}

function num(section: Record<string, unknown>, key: string, def: number): number {
  const v = section[key];
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
    throw new UsageError({ reason: 'config-invalid', setting: `s3.${key}`, must: 'be a positive whole number' });
  return v;
}

/** Where each resolved setting came from, for messages and tests. */
export interface S3Resolved {
  readonly region: string;
  readonly regionFrom: string;
  readonly endpoint?: string;
  readonly endpointFrom?: string;
  readonly pathStyle: boolean;
  readonly profile: string;
}

/**
 * One resolution of region, endpoint and addressing style for every request of a step, the SDK's
 * and the signed path's alike, from the sources the AWS CLI and SDKs read. Each setting is taken
 * from the first source that has it:
 * - endpoint: `s3.endpoint`, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's `services`
 *   section (`s3 = endpoint_url = …`), the profile's `endpoint_url`; none of the variables or
 *   files when AWS_IGNORE_CONFIGURED_ENDPOINT_URLS (or the profile's
 *   ignore_configured_endpoint_urls) is true. None at all: AWS, by the SDK's endpoint rules.
 * - region: `s3.region`, AWS_REGION, AWS_DEFAULT_REGION, the profile's `region` (the
 *   credentials file's before the config file's, as the SDK reads it), else us-east-1.
 * - addressing: `s3.pathStyle`, the profile's `s3 = addressing_style = path|virtual`, else
 *   path-style with a custom endpoint (what Ceph and MinIO need), virtual hosts on AWS.
 * Our config file comes first: it is the deliberate choice for this tool, where the variables and
 * profiles are often set for a whole shell.
 */
export async function resolveS3(config: Record<string, unknown>, env: S3Env): Promise<S3Resolved> {
  const str = (key: string): string | undefined => {
    const v = config[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'string')
      throw new UsageError({ reason: 'config-invalid', setting: `s3.${key}`, must: 'be a string' });
    return v;
  };
  const profileName = env.AWS_PROFILE || 'default';
  const { profile, services } = await sharedProfile(profileName, env);
  const truthy = (v: string | undefined) => v !== undefined && v.toLowerCase() === 'true';
  const ignoreConfigured =
    truthy(env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS) || truthy(profile['ignore_configured_endpoint_urls']);
  const endpoints: [string | undefined, string][] = [
    [str('endpoint'), "config 's3.endpoint'"],
    ...(ignoreConfigured
      ? []
      : ([
          [env.AWS_ENDPOINT_URL_S3, 'AWS_ENDPOINT_URL_S3'],
          [env.AWS_ENDPOINT_URL, 'AWS_ENDPOINT_URL'],
          [services?.['s3.endpoint_url'], `the services section '${profile['services']}' of profile '${profileName}'`],
          [profile['endpoint_url'], `endpoint_url of profile '${profileName}'`],
        ] as [string | undefined, string][])),
  ];
  const regions: [string | undefined, string][] = [
    [str('region'), "config 's3.region'"],
    [env.AWS_REGION, 'AWS_REGION'],
    [env.AWS_DEFAULT_REGION, 'AWS_DEFAULT_REGION'],
    [profile['region'], `region of profile '${profileName}'`],
    ['us-east-1', 'the default'],
  ];
  const [endpoint, endpointFrom] = endpoints.find(([v]) => v) ?? [];
  const [region, regionFrom] = regions.find(([v]) => v)!;
  if (endpoint !== undefined) checkEndpoint(endpoint, endpointFrom!);
  const style = profile['s3.addressing_style'];
  const pathStyle =
    config.pathStyle !== undefined
      ? config.pathStyle === true
      : style === 'path' || style === 'virtual'
        ? style === 'path'
        : endpoint !== undefined;
  return {
    region: region!,
    regionFrom,
    ...(endpoint ? { endpoint, endpointFrom: endpointFrom! } : {}),
    pathStyle,
    profile: profileName,
  };
}

function checkEndpoint(endpoint: string, from: string): void {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new UsageError({ reason: 's3-endpoint-invalid', endpoint, from, problem: 'not-url' });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError({ reason: 's3-endpoint-invalid', endpoint, from, problem: 'not-http' });
}

/**
 * The profile's settings from the shared config and credentials files, read by the SDK's own
 * loader (the credentials file's values first, as the SDK takes a region), and its `services`
 * section. A profile naming a services section that is not there is bad input, as in the SDK.
 */
async function sharedProfile(
  name: string,
  env: S3Env,
): Promise<{ profile: Record<string, string | undefined>; services?: Record<string, string | undefined> }> {
  const { loadSharedConfigFiles } = await import('@smithy/core/config');
  const home = env.HOME || os.homedir();
  const configFilepath = env.AWS_CONFIG_FILE || path.join(home, '.aws', 'config');
  const filepath = env.AWS_SHARED_CREDENTIALS_FILE || path.join(home, '.aws', 'credentials');
  const { configFile, credentialsFile } = await loadSharedConfigFiles({ filepath, configFilepath, ignoreCache: true });
  // A profile named in AWS_PROFILE that neither file has is a typo, not "no credentials" (exit 1).
  if (env.AWS_PROFILE && !configFile[name] && !credentialsFile[name])
    throw new UsageError({
      reason: 'aws-profile-missing',
      profile: name,
      configFile: configFilepath,
      credentialsFile: filepath,
    });
  const profile = { ...configFile[name], ...credentialsFile[name] };
  const section = profile['services'];
  if (section === undefined) return { profile };
  const services = configFile[`services.${section}`];
  if (!services)
    throw new UsageError({ reason: 'aws-services-missing', profile: name, section, configFile: configFilepath });
  return { profile, services };
}

/**
 * S3 settings for a store: the config file's `s3:` section over the AWS environment and shared
 * files (resolveS3). Credentials come from the SDK's usual chain (environment, profile,
 * credential_process, SSO, web identity, instance roles).
 */
export async function s3Settings(config: unknown, env: S3Env, warn?: (message: string) => void): Promise<S3Settings> {
  if (config !== undefined && (config === null || typeof config !== 'object' || Array.isArray(config))) {
    throw new UsageError({
      reason: 'config-invalid',
      setting: 's3',
      must: 'be a mapping (endpoint, region, pathStyle, …)',
    });
  }
  const s = (config ?? {}) as Record<string, unknown>;
  const resolved = await resolveS3(s, env);
  // A server that accepts and never answers must not hang a step: the socket's idle time is bounded.
  const deadlines = { connectionTimeout: 10_000, requestTimeout: num(s, 'requestTimeoutMs', 120_000) };
  return {
    deadlines,
    resolved,
    client: {
      region: resolved.region,
      // With no endpoint resolved here, the SDK must not find one of its own in the same sources.
      ...(resolved.endpoint ? { endpoint: resolved.endpoint } : { ignoreConfiguredEndpointUrls: true }),
      ...(env.AWS_PROFILE ? { profile: env.AWS_PROFILE } : {}),
      forcePathStyle: resolved.pathStyle,
      followRegionRedirects: true,
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
