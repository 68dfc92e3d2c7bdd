// How S3 names things and reports errors: bucket and key of a store path, a copy source, an SDK error's status and name.

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
