// Server-side copy of objects larger than CopyObject takes: UploadPartCopy in parts.

import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  UploadPartCopyCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { copySource } from './keys.js';

/** Copies one object above CopyObject's 5 GiB limit with UploadPartCopy; an aborted copy leaves no upload behind. */
export async function multipartCopy(
  client: S3Client,
  s: { bucket: string; key: string },
  d: { bucket: string; key: string },
  size: number,
  partSizeSetting: number,
): Promise<void> {
  const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: d.bucket, Key: d.key }));
  try {
    const partSize = Math.max(5 * 1024 ** 2, partSizeSetting);
    const parts: { ETag: string; PartNumber: number }[] = [];
    for (let start = 0, n = 1; start < size; start += partSize, n++) {
      const end = Math.min(size, start + partSize) - 1;
      const r = await client.send(
        new UploadPartCopyCommand({
          Bucket: d.bucket,
          Key: d.key,
          UploadId,
          PartNumber: n,
          CopySource: copySource(s.bucket, s.key),
          CopySourceRange: `bytes=${start}-${end}`,
        }),
      );
      parts.push({ ETag: r.CopyPartResult!.ETag!, PartNumber: n });
    }
    await client.send(
      new CompleteMultipartUploadCommand({ Bucket: d.bucket, Key: d.key, UploadId, MultipartUpload: { Parts: parts } }),
    );
  } catch (e) {
    await client
      .send(new AbortMultipartUploadCommand({ Bucket: d.bucket, Key: d.key, UploadId }))
      .catch(() => undefined);
    throw e;
  }
}
