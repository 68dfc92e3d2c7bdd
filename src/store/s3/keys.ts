// How S3 names things and reports errors: bucket and key of a store path, a copy source, an SDK error's status and
// name.

/** "/bucket/a/b" → { bucket, key: "a/b" }. */
export function splitPath(p: string): { bucket: string; key: string } {
  const trimmed = p.replace(/^\/+/, '');
  const slash = trimmed.indexOf('/');
  return slash < 0 ? { bucket: trimmed, key: '' } : { bucket: trimmed.slice(0, slash), key: trimmed.slice(slash + 1) };
}

/** CopySource is encoded per path segment (RGW rejects encodeURI of a whole key with '?'). */
export function copySource(bucket: string, key: string): string {
  return `${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
}

export function status(e: unknown): number | undefined {
  return (e as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

export function errName(e: unknown): string {
  return (e as { name?: string; Code?: string })?.name ?? (e as { Code?: string })?.Code ?? '';
}

const DENIED: Record<string, string> = {
  InvalidAccessKeyId:
    'this server does not know the access key in use: check AWS_ACCESS_KEY_ID or the profile (AWS_PROFILE)',
  SignatureDoesNotMatch:
    'the secret key does not match the access key: check AWS_SECRET_ACCESS_KEY or the profile (AWS_PROFILE)',
};

/**
 * What the user must change when the credentials are missing, expired or refused, or null when
 * the failure is not about them. A HEAD's 403 has no body, so no S3 code: the hint is general.
 */
export function credentialProblem(e: unknown): string | null {
  const name = errName(e);
  if (name === 'CredentialsProviderError') {
    // The SDK's reason names the profile or the process that failed; it may span lines.
    const why = String((e as Error).message ?? '')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, 300);
    return `no AWS credentials could be loaded${why ? ` (${why})` : ''}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (a profile in ~/.aws/config), then run the step again`;
  }
  if (name === 'ExpiredToken' || name === 'TokenRefreshRequired')
    return `the credentials have expired (${name}): refresh them, then run the step again`;
  // A clock off by more than 15 minutes is the machine's, not the credentials': retried (the SDK corrects it).
  if (status(e) !== 403 || name === 'RequestTimeTooSkewed') return null;
  const code = /^(Unknown|HTTP403|403|)$/.test(name) ? '' : ` ${name}`;
  const why =
    DENIED[name] ??
    "the credentials in use may not do this here: check AWS_ACCESS_KEY_ID or AWS_PROFILE, and the bucket's policy";
  return `access denied (HTTP 403${code}): ${why}`;
}
