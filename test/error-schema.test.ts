// The `--json` error document's reasons: schemas/error.json and docs/json.md list, per kind, the
// reasons the code's closed unions declare (src/messages/), no more and no fewer.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  DOCS_FILE,
  docsWithReasons,
  reasonsByKind,
  SCHEMA_FILE,
  schemaWithReasons,
  type ReasonsByKind,
} from '../testing/error-reasons.js';
import { schemas } from '../testing/schemas.js';

const FIX = "run 'npm run reasons' to make them again from src/messages/";
let read: ReasonsByKind | undefined;
const reasons = (): ReasonsByKind => (read ??= reasonsByKind());

test("the schema's reason enums are the code's reasons, per kind", () => {
  const schema = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as Record<string, unknown>;
  assert.deepEqual(schema, schemaWithReasons(schema, reasons()), FIX);
  const kinds = (schema as { properties: { error: { properties: { kind: { enum: string[] } } } } }).properties.error
    .properties.kind.enum;
  assert.deepEqual([...reasons().keys()].sort(), [...kinds].sort(), 'every kind has its reasons');
});

test('docs/json.md lists every reason of every kind, one line each', () => {
  const docs = readFileSync(DOCS_FILE, 'utf8');
  assert.equal(docs, docsWithReasons(docs, reasons()), FIX);
  for (const [kind, rs] of reasons()) {
    assert.ok(rs.length > 0, kind);
    assert.equal(new Set(rs.map((r) => r.reason)).size, rs.length, `${kind}: a reason declared twice`);
    for (const r of rs) assert.notEqual(r.doc, '', `${kind} ${r.reason}: its variant has no doc comment`);
  }
});

test("a document whose reason is another kind's is not valid; one of its own kind is", () => {
  const validate = schemas().get('error')!;
  const doc = (kind: string, reason: string) => ({
    ok: false,
    error: { kind, reason, message: 'm', exitCode: 2, retryable: false, detail: { reason } },
  });
  assert.ok(validate(doc('UsageError', 'no-job-given')), JSON.stringify(validate.errors));
  assert.equal(validate(doc('UsageError', 'lease-held')), false);
  assert.equal(validate(doc('UsageError', 'no-such-reason')), false);
});
