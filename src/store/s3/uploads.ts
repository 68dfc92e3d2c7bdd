// Uploads on S3: whole files (put), and multipart uploads begun at a file's final key and left
// pending (invisible) until the job commit completes them, as Hadoop S3A's magic committer does;
// listed and aborted by key.

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { StoreError } from '../../errors.js';
import { counted } from '../counting.js';
import type { PendingUpload, PutSource, ReadyUpload } from '../types.js';
import { forEachLimit } from '../../util/pool.js';
import { xmlText, type SignedRequests } from './signed.js';
import { status } from './keys.js';

type Fail = (e: unknown, op: string, paths: string[]) => StoreError;
type Split = (p: string) => { bucket: string; key: string };

/** The ETag S3 gives an object made by completing these parts: md5 of the parts' md5s, "-N". */
export function multipartEtag(etags: readonly string[]): string {
  const h = createHash('md5');
  for (const e of etags) h.update(Buffer.from(e.replace(/"/g, ''), 'hex'));
  return `${h.digest('hex')}-${etags.length}`;
}

export class S3Uploads {
  constructor(
    private readonly client: S3Client,
    private readonly signed: SignedRequests,
    private readonly split: Split,
    private readonly fail: Fail,
    private readonly partSize: number,
  ) {}

  /** One file, uploaded whole (in parts above the part size): visible when done. */
  async put(dst: string, source: PutSource): Promise<void> {
    const { bucket, key } = this.split(dst);
    try {
      const body = counted('localPath' in source ? createReadStream(source.localPath) : source.stream, source.onBytes);
      const { Upload } = await import('@aws-sdk/lib-storage'); // loaded only by steps that upload
      const up = new Upload({
        client: this.client,
        params: { Bucket: bucket, Key: key, Body: body },
        partSize: this.partSize,
        queueSize: 4,
        leavePartsOnError: false,
      });
      await up.done();
    } catch (e) {
      throw this.fail(e, 'put', [dst]);
    }
  }

  async begin(path: string): Promise<string> {
    const { bucket, key } = this.split(path);
    try {
      const r = await this.client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
      return r.UploadId!;
    } catch (e) {
      throw this.fail(e, 'put', [path]);
    }
  }

  /** Sends a local file as the upload's parts (4 at a time); returns their ETags in order. */
  async uploadParts(
    path: string,
    uploadId: string,
    localPath: string,
    size: number,
    onBytes?: (sent: number) => void,
  ): Promise<string[]> {
    const { bucket, key } = this.split(path);
    const count = Math.max(1, Math.ceil(size / this.partSize));
    const etags = new Array<string>(count);
    let sent = 0;
    const fh = await open(localPath, 'r');
    try {
      await forEachLimit(
        Array.from({ length: count }, (_, i) => i),
        4,
        async (i) => {
          const start = i * this.partSize;
          const body = Buffer.alloc(Math.min(this.partSize, size - start));
          const { bytesRead } = await fh.read(body, 0, body.length, start);
          if (bytesRead !== body.length)
            throw new StoreError(
              'io',
              'put',
              [localPath],
              `changed while it was uploaded (read ${bytesRead} of ${body.length} bytes at ${start})`,
            );
          try {
            const r = await this.client.send(
              new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: i + 1, Body: body }),
            );
            etags[i] = r.ETag!;
            sent += body.length;
            onBytes?.(sent);
          } catch (e) {
            throw this.fail(e, 'put', [path]);
          }
        },
      );
    } finally {
      await fh.close();
    }
    return etags;
  }

  /**
   * Completes a pending upload: one request. Idempotent: when the upload is gone (an earlier run
   * completed it), the key must already hold exactly its bytes (size and multipart ETag).
   */
  async complete(u: ReadyUpload): Promise<void> {
    const { bucket, key } = this.split(u.path);
    try {
      const parts = u.etags
        .map((etag, i) => `<Part><ETag>${xmlText(etag)}</ETag><PartNumber>${i + 1}</PartNumber></Part>`)
        .join('');
      const body = `<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${parts}</CompleteMultipartUpload>`;
      const sent = await this.signed.send({
        method: 'POST',
        bucket,
        key,
        query: { uploadId: u.uploadId },
        headers: { 'content-type': 'application/xml' },
        body,
        expect: 'CompleteMultipartUploadResult',
      });
      if (!sent) {
        await this.client.send(
          new CompleteMultipartUploadCommand({
            Bucket: bucket,
            Key: key,
            UploadId: u.uploadId,
            MultipartUpload: { Parts: u.etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
          }),
        );
      }
      return;
    } catch (e) {
      if (status(e) !== 404) throw this.fail(e, 'complete', [u.path]);
    }
    const want = multipartEtag(u.etags);
    let got: { size?: number; etag?: string } | null = null;
    try {
      const h = await this.client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      got = { size: h.ContentLength, etag: h.ETag?.replace(/"/g, '') };
    } catch (e) {
      if (status(e) !== 404) throw this.fail(e, 'complete', [u.path]);
    }
    if (got && got.size === u.size && got.etag === want) return;
    throw this.fail(
      Object.assign(
        new Error(
          `upload ${u.uploadId} is gone and the key ${got ? `holds other bytes (ETag ${got.etag}, ${got.size} bytes)` : 'does not exist'}: the staged file was lost (aborted by someone else?)`,
        ),
        { name: 'NoSuchUpload' },
      ),
      'complete',
      [u.path],
    );
  }

  /** Multipart uploads never completed under a prefix. */
  async list(dir: string): Promise<PendingUpload[]> {
    const { bucket, key } = this.split(dir);
    const out: PendingUpload[] = [];
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    try {
      do {
        const r = await this.client.send(
          new ListMultipartUploadsCommand({
            Bucket: bucket,
            Prefix: key === '' ? '' : key + '/',
            KeyMarker: keyMarker,
            UploadIdMarker: uploadIdMarker,
          }),
        );
        for (const u of r.Uploads ?? [])
          out.push({ path: `/${bucket}/${u.Key}`, uploadId: u.UploadId!, initiatedMs: u.Initiated?.getTime() ?? 0 });
        keyMarker = r.IsTruncated ? r.NextKeyMarker : undefined;
        uploadIdMarker = r.IsTruncated ? r.NextUploadIdMarker : undefined;
      } while (keyMarker);
    } catch (e) {
      throw this.fail(e, 'list', [dir]);
    }
    return out;
  }

  /** Aborting an upload that is gone (completed or aborted already) is success. */
  async abort(u: Pick<PendingUpload, 'path' | 'uploadId'>): Promise<void> {
    const { bucket, key } = this.split(u.path);
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: u.uploadId }));
    } catch (e) {
      if (status(e) !== 404) throw this.fail(e, 'delete', [u.path]);
    }
  }
}
