// Bulk deletes on S3: DeleteObjects in evened batches of up to 1,000 keys, several at once; keys
// that an XML body cannot carry go one by one.

import { DeleteObjectCommand, DeleteObjectsCommand, type S3Client } from '@aws-sdk/client-s3';
import { StoreError } from '../../errors.js';
import { forEachLimit } from '../../util/pool.js';

/** DeleteObjects requests in flight for one bulk delete. */
const DELETE_BATCHES_AT_ONCE = 4;
/** Single DeleteObject requests in flight for keys that DeleteObjects cannot name. */
const SINGLE_DELETES_AT_ONCE = 16;

/**
 * Characters XML 1.0 forbids even as references (most C0 controls, U+FFFE/FFFF), and the ones
 * an XML parser may normalise (tab, CR, LF). An outside writer can name a key with one (S3 allows
 * any UTF-8); DeleteObjects would then be refused as MalformedXML on every retry, or name another
 * key, so such keys are deleted with a request of their own.
 */
const NOT_IN_XML = /[\u0000-\u001F\uFFFE\uFFFF]/;

export interface DeleteContext {
  client: S3Client;
  toUri(p: string): string;
  /** Maps an SDK error to a StoreError naming the operation and paths. */
  fail(e: unknown, op: string, paths: string[]): StoreError;
}

/**
 * The server deletes a batch's keys one by one, so batches are evened out and sent together
 * (RGW then uses more than one thread for them). Per-key errors other than NoSuchKey fail.
 */
export async function deleteKeys(cx: DeleteContext, bucket: string, keys: readonly string[], what: string): Promise<void> {
  const plain = keys.filter((k) => !NOT_IN_XML.test(k));
  const odd = plain.length === keys.length ? [] : keys.filter((k) => NOT_IN_XML.test(k));
  const count = Math.ceil(plain.length / 1000);
  const size = Math.ceil(plain.length / Math.max(1, count));
  const batches = Array.from({ length: count }, (_, i) => plain.slice(i * size, (i + 1) * size));
  await forEachLimit(batches, DELETE_BATCHES_AT_ONCE, async (batch) => {
    let r;
    try {
      r = await cx.client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }));
    } catch (e) {
      throw cx.fail(e, 'delete', [what]);
    }
    const errors = (r.Errors ?? []).filter((x) => x.Code !== 'NoSuchKey');
    if (errors.length) {
      const first = errors[0]!;
      throw new StoreError('io', 'delete', [cx.toUri(`/${bucket}/${first.Key}`)], `${errors.length} key(s) not deleted, first: ${first.Code}: ${first.Message}`);
    }
  });
  await forEachLimit(odd, SINGLE_DELETES_AT_ONCE, async (Key) => {
    try {
      await cx.client.send(new DeleteObjectCommand({ Bucket: bucket, Key }));
    } catch (e) {
      throw cx.fail(e, 'delete', [`/${bucket}/${Key}`]);
    }
  });
}
