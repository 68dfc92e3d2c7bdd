// Uploads on S3: whole files (put), and multipart uploads begun at a file's final key and left
// pending (invisible) until the job commit completes them, as Hadoop S3A's magic committer does;
// listed and aborted by key.

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { StoreError } from '../../errors.js';
import { counted } from '../counting.js';
import type { PendingUpload, PutSource, ReadyUpload } from '../types.js';
import { forEachLimit } from '../../util/pool.js';
import { tag, xmlText, type SignedRequests } from './signed.js';
import { SourceChanged, type StreamedBody } from './transport.js';
import { status } from './keys.js';

type Fail = (e: unknown, op: string, paths: string[]) => StoreError;

/**
 * Parts of one file in flight at once: 4, as the AWS SDK's Upload (queueSize) and rclone
 * (--s3-upload-concurrency) send. Files go up side by side besides (the config's concurrency).
 */
const PARTS_IN_FLIGHT = 4;
/** S3's limits: at most 10,000 parts, each at least 5 MiB but the last. */
const MAX_PARTS = 10_000;

/** The part size for a file: the configured one, raised for a file that would need more than 10,000 parts. */
export function partSizeFor(size: number, configured: number): number {
  return Math.max(configured, Math.ceil(size / MAX_PARTS));
}

/**
 * `length` bytes of a local file from `start`, streamed as they are read; `onSent` hears how many
 * of them the current attempt has sent (from 0 again when a request is retried).
 */
function fileRange(localPath: string, start: number, length: number, onSent: (n: number) => void): StreamedBody {
  let sent = 0;
  return {
    length,
    open: () => {
      sent = 0;
      return createReadStream(localPath, { start, end: start + Math.max(0, length - 1), highWaterMark: 256 * 1024 });
    },
    short: (read) => changed(localPath, start, length, read),
    onChunk: (n) => onSent((sent += n)),
  };
}

function changed(localPath: string, start: number, length: number, read: number): SourceChanged {
  return new SourceChanged(`${localPath} changed while it was uploaded (read ${read} of ${length} bytes at ${start})`);
}

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

  /**
   * One file, uploaded whole: visible when done. A local file up to the part size is one
   * PutObject streamed from the file; a larger one a multipart upload of parts streamed the same
   * way, aborted if it fails. A stream (the library's sources) goes through the SDK's Upload.
   */
  async put(dst: string, source: PutSource): Promise<void> {
    if ('localPath' in source) {
      const size = (await stat(source.localPath)).size;
      if (size > this.partSize) return this.putInParts(dst, source.localPath, size, source.onBytes);
      if (await this.putSigned(dst, source.localPath, size, source.onBytes)) return;
    }
    const { bucket, key } = this.split(dst);
    try {
      const body = counted('localPath' in source ? createReadStream(source.localPath) : source.stream, source.onBytes);
      const { Upload } = await import('@aws-sdk/lib-storage'); // loaded only by steps that upload
      const up = new Upload({
        client: this.client,
        params: { Bucket: bucket, Key: key, Body: body },
        partSize: this.partSize,
        queueSize: PARTS_IN_FLIGHT,
        leavePartsOnError: false,
      });
      await up.done();
    } catch (e) {
      throw this.fail(e, 'put', [dst]);
    }
  }

  /** PutObject of a local file, streamed; false when the bucket needs the SDK. */
  private async putSigned(
    dst: string,
    localPath: string,
    size: number,
    onBytes?: (n: number) => void,
  ): Promise<boolean> {
    const { bucket, key } = this.split(dst);
    const body = fileRange(localPath, 0, size, (n) => onBytes?.(n));
    try {
      return (await this.signed.send({ method: 'PUT', bucket, key, body, expect: { etag: true } })) !== null;
    } catch (e) {
      throw this.fail(e, 'put', [dst]);
    }
  }

  private async putInParts(dst: string, localPath: string, size: number, onBytes?: (n: number) => void): Promise<void> {
    const uploadId = await this.begin(dst);
    try {
      const etags = await this.uploadParts(dst, uploadId, localPath, size, onBytes);
      await this.complete({ path: dst, uploadId, size, etags });
    } catch (e) {
      await this.abort({ path: dst, uploadId }).catch(() => undefined);
      throw e;
    }
  }

  async begin(path: string): Promise<string> {
    const { bucket, key } = this.split(path);
    try {
      const sent = await this.signed.send({
        method: 'POST',
        bucket,
        key,
        query: { uploads: '' },
        expect: 'InitiateMultipartUploadResult',
      });
      const id = sent ? tag(sent.body, 'UploadId') : '';
      if (id) return id;
      const r = await this.client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
      return r.UploadId!;
    } catch (e) {
      throw this.fail(e, 'put', [path]);
    }
  }

  /**
   * Sends a local file as the upload's parts, each streamed from its range of the file, a few at
   * a time; returns their ETags in order. The part size is the configured one, raised so that no
   * file needs more than S3's 10,000 parts.
   */
  async uploadParts(
    path: string,
    uploadId: string,
    localPath: string,
    size: number,
    onBytes?: (sent: number) => void,
  ): Promise<string[]> {
    const { bucket, key } = this.split(path);
    const partSize = partSizeFor(size, this.partSize);
    const count = Math.max(1, Math.ceil(size / partSize));
    const etags = new Array<string>(count);
    let sent = 0;
    await forEachLimit(
      Array.from({ length: count }, (_, i) => i),
      PARTS_IN_FLIGHT,
      async (i) => {
        const start = i * partSize;
        const length = Math.min(partSize, size - start);
        const body = fileRange(localPath, start, length, (n) => onBytes?.(sent + n));
        const query = { partNumber: String(i + 1), uploadId };
        try {
          const r = await this.signed.send({ method: 'PUT', bucket, key, query, body, expect: { etag: true } });
          etags[i] = r
            ? r.etag!
            : await this.partViaSdk({ bucket, key, uploadId, partNumber: i + 1 }, localPath, start, length);
          sent += length;
          onBytes?.(sent);
        } catch (e) {
          throw this.fail(e, 'put', [path]);
        }
      },
    );
    return etags;
  }

  /** A part sent through the SDK (a bucket whose requests only it can sign), read into memory first. */
  private async partViaSdk(
    part: { bucket: string; key: string; uploadId: string; partNumber: number },
    localPath: string,
    start: number,
    length: number,
  ): Promise<string> {
    const { bucket, key, uploadId, partNumber } = part;
    const fh = await open(localPath, 'r');
    try {
      const body = Buffer.alloc(length);
      const { bytesRead } = await fh.read(body, 0, length, start);
      if (bytesRead !== length) throw changed(localPath, start, length, bytesRead);
      const r = await this.client.send(
        new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: body }),
      );
      return r.ETag!;
    } finally {
      await fh.close();
    }
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
