// The reasons of each error kind as the code declares them (the closed unions of src/messages/),
// read with the TypeScript compiler: the schema's enums and the docs' list are made from them
// (`npm run reasons`), and test/error-schema.test.ts fails when either falls behind.

import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ERRORS_TS = path.join(ROOT, 'src', 'api', 'errors.ts');
export const SCHEMA_FILE = path.join(ROOT, 'schemas', 'error.json');
export const DOCS_FILE = path.join(ROOT, 'docs', 'json.md');
const BEGIN = '<!-- reasons: made by `npm run reasons` from src/messages/; do not edit by hand -->';
const END = '<!-- reasons end -->';

export interface Reason {
  readonly reason: string;
  /** The variant's doc comment, on one line ('' where it has none). */
  readonly doc: string;
  /** Its fields besides the reason. */
  readonly fields: readonly string[];
}

/** Each kind's reasons, in the order the code declares them. */
export type ReasonsByKind = ReadonlyMap<string, readonly Reason[]>;

export function reasonsByKind(): ReasonsByKind {
  const program = ts.createProgram([ERRORS_TS], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const file = program.getSourceFile(ERRORS_TS)!;
  const alias = file.statements.find(
    (s): s is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(s) && s.name.text === 'ErrorDocError',
  )!;
  const out = new Map<string, Reason[]>();
  for (const member of unionOf(checker.getTypeAtLocation(alias.name))) {
    const kind = literalOf(checker.getTypeOfSymbol(member.getProperty('kind')!));
    const reasons: Reason[] = [];
    for (const detail of unionOf(checker.getTypeOfSymbol(member.getProperty('detail')!))) {
      const fields = detail
        .getProperties()
        .map((p) => p.name)
        .filter((n) => n !== 'reason');
      for (const [reason, doc] of documentedLiterals(checker, detail.getProperty('reason')!))
        reasons.push({ reason, doc, fields });
    }
    out.set(kind, reasons);
  }
  return out;
}

function unionOf(t: ts.Type): readonly ts.Type[] {
  return t.isUnion() ? t.types : [t];
}

function literalOf(t: ts.Type): string {
  if (!t.isStringLiteral()) throw new Error(`not a string literal: ${String(t.flags)}`);
  return t.value;
}

/**
 * The string literals a `reason` property may be, each with its doc comment: the comment of the
 * union member the property is in, or, where the property's type is itself a union of literals
 * (StoreErrorReason), the comment of each literal there.
 */
function documentedLiterals(checker: ts.TypeChecker, reason: ts.Symbol): [string, string][] {
  const decl = reason.declarations![0] as ts.PropertySignature;
  const type = checker.getTypeOfSymbol(reason);
  if (!type.isUnion()) return [[literalOf(type), commentBefore(decl.parent)]];
  const ref = decl.type!;
  const target = ts.isTypeReferenceNode(ref) ? checker.getSymbolAtLocation(ref.typeName)?.declarations?.[0] : null;
  const union = target && ts.isTypeAliasDeclaration(target) && ts.isUnionTypeNode(target.type) ? target.type : null;
  if (!union) return type.types.map((t) => [literalOf(t), ''] as [string, string]);
  return union.types.map((n) => [literalOf(checker.getTypeFromTypeNode(n)), commentBefore(n)] as [string, string]);
}

/** The `/** … *\/` comment just before a union member (before its `|`), on one line. */
function commentBefore(node: ts.Node): string {
  const parent = node.parent;
  if (!ts.isUnionTypeNode(parent)) return '';
  const text = node.getSourceFile().text;
  const i = parent.types.indexOf(node as ts.TypeNode);
  const from = i === 0 ? parent.pos : parent.types[i - 1]!.end;
  const between = text.slice(from, node.getStart());
  const docs = [...between.matchAll(/\/\*\*([\s\S]*?)\*\//g)];
  const last = docs[docs.length - 1]?.[1];
  return last === undefined
    ? ''
    : last
        .replace(/^\s*\*/gm, ' ')
        .replace(/\s+/g, ' ')
        .trim();
}

/** schemas/error.json with each kind's reasons as an enum (of `reason` and of `detail.reason`). */
export function schemaWithReasons(schema: Record<string, unknown>, reasons: ReasonsByKind): Record<string, unknown> {
  const error = (schema.properties as Record<string, Record<string, unknown>>).error!;
  const { allOf: _old, ...rest } = error;
  const byKind = [...reasons].map(([kind, rs]) => {
    const oneOf = { enum: rs.map((r) => r.reason) };
    return {
      if: { properties: { kind: { const: kind } } },
      then: { properties: { reason: oneOf, detail: { type: 'object', properties: { reason: oneOf } } } },
    };
  });
  const retryable = error.allOf ? (error.allOf as unknown[])[0] : { if: rest.if, then: rest.then, else: rest.else };
  const { if: _if, then: _then, else: _else, ...plain } = rest;
  return {
    ...schema,
    properties: {
      ...(schema.properties as object),
      error: { ...plain, allOf: [retryable, ...byKind] },
    },
  };
}

/** The docs' list of reasons: one heading per kind, one line per reason. */
export function reasonsDoc(reasons: ReasonsByKind): string {
  const lines = [BEGIN];
  for (const [kind, rs] of reasons) {
    lines.push('', `**${kind}**`, '');
    for (const r of rs) {
      const fields = r.fields.length ? ` (${r.fields.map((f) => `\`${f}\``).join(' ')})` : '';
      lines.push(`- \`${r.reason}\`${fields}${r.doc ? `: ${r.doc}` : ''}`);
    }
  }
  lines.push('', END);
  return lines.join('\n');
}

/** docs/json.md with its list of reasons made again. */
export function docsWithReasons(docs: string, reasons: ReasonsByKind): string {
  const start = docs.indexOf(BEGIN);
  const end = docs.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${DOCS_FILE} has no reasons section (${BEGIN} … ${END})`);
  return docs.slice(0, start) + reasonsDoc(reasons) + docs.slice(end + END.length);
}

/** `npm run reasons`: writes the enums into the schema and the list into the docs. */
if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes('--write')) {
  const reasons = reasonsByKind();
  const schema = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as Record<string, unknown>;
  writeFileSync(SCHEMA_FILE, JSON.stringify(schemaWithReasons(schema, reasons), null, 2) + '\n');
  writeFileSync(DOCS_FILE, docsWithReasons(readFileSync(DOCS_FILE, 'utf8'), reasons));
}
