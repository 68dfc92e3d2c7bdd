// The ListObjectsV2 reader: keys byte for byte (entities named and numeric, raw control
// characters), sizes and times, common prefixes, continuation, and answers that are not listings.
// Real listings from RGW go through it in the store contract suite; these are the edges a
// server may write that RGW does not.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseListPage } from '../src/store/s3/listing.js';
import { xmlDecode } from '../src/store/s3/signed.js';

const page = (body: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys>${body}</ListBucketResult>`;
const object = (key: string, size = 3, at = '2026-12-01T10:00:00.000Z') =>
  `<Contents><Key>${key}</Key><LastModified>${at}</LastModified><ETag>&quot;abc&quot;</ETag><Size>${size}</Size><StorageClass>STANDARD</StorageClass></Contents>`;

describe('ListObjectsV2 pages', () => {
  test('keys come back as written: entities, numeric references, raw control characters', () => {
    const p = parseListPage(
      page(
        object('p/a&amp;b&lt;c&gt;&quot;d&apos;') +
          object('p/cr&#13;lf&#xA;tab&#9;') +
          object('p/ctl\u0001raw\ttab') +
          object('p/日本 ünï') +
          '<IsTruncated>false</IsTruncated>',
      ),
    );
    assert.deepEqual(
      p.objects.map((o) => o.key),
      ['p/a&b<c>"d\'', 'p/cr\rlf\ntab\t', 'p/ctl\u0001raw\ttab', 'p/日本 ünï'],
    );
    assert.equal(p.next, undefined);
  });

  test('sizes, modification times and ETags are read per object', () => {
    const p = parseListPage(
      page(object('p/x', 1234, '2026-01-02T03:04:05.678Z') + object('p/y', 0) + '<IsTruncated>false</IsTruncated>'),
    );
    assert.deepEqual(p.objects[0], {
      key: 'p/x',
      size: 1234,
      mtimeMs: Date.parse('2026-01-02T03:04:05.678Z'),
      etag: '"abc"',
    });
    assert.equal(p.objects[1]!.size, 0);
  });

  test('common prefixes, and the token of the next page when truncated', () => {
    const p = parseListPage(
      page(
        `<IsTruncated>true</IsTruncated><ContinuationToken>old</ContinuationToken><NextContinuationToken>1/a+b&amp;=</NextContinuationToken>${object('p/f')}<CommonPrefixes><Prefix>p/dt=1/</Prefix></CommonPrefixes><CommonPrefixes><Prefix>p/a&amp;b/</Prefix></CommonPrefixes>`,
      ),
    );
    assert.deepEqual(p.prefixes, ['p/dt=1/', 'p/a&b/']);
    assert.equal(p.next, '1/a+b&=');
    assert.deepEqual(
      p.objects.map((o) => o.key),
      ['p/f'],
    );
  });

  test('an empty listing has no objects and no next page', () => {
    assert.deepEqual(parseListPage(page('<IsTruncated>false</IsTruncated>')), {
      objects: [],
      prefixes: [],
      next: undefined,
    });
  });

  test('answers that are not whole listings are errors, never an empty or shorter listing', () => {
    assert.throws(
      () => parseListPage('<?xml version="1.0"?><Error><Code>AccessDenied</Code></Error>'),
      /not a ListObjectsV2 answer/,
    );
    assert.throws(() => parseListPage(page('<IsTruncated>true</IsTruncated>')), /no NextContinuationToken/);
    assert.throws(
      () => parseListPage(page('<IsTruncated>false</IsTruncated><Contents><Size>3</Size></Contents>')),
      /without <Key>/,
    );
    assert.throws(
      () => parseListPage(page('<IsTruncated>false</IsTruncated>' + object('p/a')).replace('</Contents>', '')),
      /unclosed <Contents>/,
    );
    assert.throws(() => parseListPage(page(object('p/a'))), /no <IsTruncated>/);
    // Cut short at an element boundary: without the end of the document it is not a last page.
    const whole = page('<IsTruncated>false</IsTruncated>' + object('p/a') + object('p/b'));
    assert.throws(() => parseListPage(whole.slice(0, whole.lastIndexOf('<Contents>'))), /ends before/);
  });

  test('text without references is returned as it is', () => {
    assert.equal(xmlDecode('plain & simple'), 'plain & simple');
    assert.equal(xmlDecode('&#128512;'), '😀');
  });
});
