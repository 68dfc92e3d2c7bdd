// Bulk deletes on S3: DeleteObjects in evened batches of up to 1,000 keys, several at once; keys
// that an XML body cannot carry go one by one.

import { DeleteObjectCommand, DeleteObjectsCommand, type S3Client } from '@aws-sdk/client-s3';
import { StoreError } from '../../errors.js';
import { forEachLimit } from '../../util/pool.js';

/** DeleteObjects requests in flight for one bulk delete. */
const DELETE_BATCHES_AT_ONCE = 8;
/**
 * Keys below which a batch is not split further. RGW deletes a batch's keys one after another, so
 * 2,000 keys go faster as 8 batches of 250 than as 2 of 1,000 (bench/s3-commit.ts: 1.3–1.6 s
 * against 1.5–1.7 s), for 6 more requests.
 */
const MIN_SPLIT_BATCH = 250;
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
 * (RGW then uses more than one thread for them): up to 8 of at least 250 keys each, or as many
 * of up to 1,000 as the keys need. Per-key errors other than NoSuchKey fail.
 */
/** `what`: the path a failure names (a directory deleted whole), else the batch's first key. */
export async function deleteKeys(
  cx: DeleteContext,
  bucket: string,
  keys: readonly string[],
  what: string | null,
): Promise<void> {
  const plain = keys.filter((k) => !NOT_IN_XML.test(k));
  const odd = plain.length === keys.length ? [] : keys.filter((k) => NOT_IN_XML.test(k));
  const count = Math.max(
    Math.ceil(plain.length / 1000),
    Math.min(DELETE_BATCHES_AT_ONCE, Math.floor(plain.length / MIN_SPLIT_BATCH)),
  );
  const size = Math.ceil(plain.length / Math.max(1, count));
  const batches = Array.from({ length: count }, (_, i) => plain.slice(i * size, (i + 1) * size));
  await forEachLimit(batches, DELETE_BATCHES_AT_ONCE, async (batch) => {
    let r;
    try {
      r = await cx.client.send(
        new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }),
      );
    } catch (e) {
      throw cx.fail(e, 'delete', [what ?? `/${bucket}/${batch[0]}`]);
    }
    const errors = (r.Errors ?? []).filter((x) => x.Code !== 'NoSuchKey');
    if (errors.length) {
      const first = errors[0]!;
      throw new StoreError(
        'io',
        'delete',
        [cx.toUri(`/${bucket}/${first.Key}`)],
        `${errors.length} key(s) not deleted, first: ${first.Code}: ${first.Message}`,
      );
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
