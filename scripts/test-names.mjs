#!/usr/bin/env node
// Checks the names of the tests in test/*.ts: each test(), it() and describe() title is at most 100
// characters as the runner displays it, and no two of them in one file are the same. Fails listing
// every name that breaks either rule. An interpolation counts as its longest value where the source
// tells it (a store fixture's name, a constant, a loop over an array literal), else as its own text.
// `--stats` also prints the median and longest name; `--list` prints every name with its length.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const MAX = 100;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TEST_CALLS = new Set(['test', 'it', 'describe', 'suite']);
const MODIFIERS = new Set(['skip', 'only', 'todo']);

const program = ts.createProgram({
  rootNames: ts.sys.readDirectory(path.join(root, 'test'), ['.ts']).filter((f) => f.endsWith('.test.ts')),
  options: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, strict: true, noEmit: true },
});
const checker = program.getTypeChecker();
const storeNames = fixtureNames();

/** The names the store fixtures give themselves: every string in a `name:` of testing/stores.ts. */
function fixtureNames() {
  const file = program.getSourceFile(path.join(root, 'testing', 'stores.ts'));
  const names = [];
  const visit = (node) => {
    if (ts.isPropertyAssignment(node) && node.name.getText(file) === 'name') {
      const strings = (n) => (ts.isStringLiteral(n) ? names.push(n.text) : ts.forEachChild(n, strings));
      strings(node.initializer);
    }
    ts.forEachChild(node, visit);
  };
  if (file) visit(file);
  if (!names.length) throw new Error('test-names: found no store fixture names in testing/stores.ts');
  return names;
}

/** A value that cannot be told from the source, and a choice among values (a loop's variable). */
const UNKNOWN = Symbol('unknown');
class OneOf {
  constructor(values) {
    this.values = values.flatMap((v) => (v instanceof OneOf ? v.values : [v]));
  }
}
const oneOf = (values) => (values.length === 1 ? values[0] : new OneOf(values));
const each = (v, f) => (v instanceof OneOf ? oneOf(v.values.map(f)) : f(v));

/** Is this expression a store fixture (`fx` in `for (const fx of storeFixtures())`, or a fixture constant)? */
function isFixture(expr) {
  const type = checker.getTypeAtLocation(expr);
  return type.getSymbol()?.getName() === 'StoreFixture' || type.aliasSymbol?.getName() === 'StoreFixture';
}

/** The elements a loop or an array method goes through, as one choice. */
function elementsOf(expr) {
  return each(evaluate(expr), (a) => (Array.isArray(a) ? oneOf(a) : UNKNOWN));
}

/** The value of the variable a declaration binds: a constant's, or the elements of the loop or callback it is in. */
function bound(decl) {
  if (ts.isBindingElement(decl)) {
    const pattern = decl.parent;
    const whole = bound(pattern.parent);
    const key = ts.isArrayBindingPattern(pattern)
      ? pattern.elements.indexOf(decl)
      : (decl.propertyName ?? decl.name).getText();
    return each(whole, (v) => (v !== UNKNOWN && v !== null && typeof v === 'object' && key in v ? v[key] : UNKNOWN));
  }
  if (ts.isVariableDeclaration(decl)) {
    if (ts.isForOfStatement(decl.parent.parent)) return elementsOf(decl.parent.parent.expression);
    if (decl.parent.flags & ts.NodeFlags.Const && decl.initializer) return evaluate(decl.initializer);
  }
  if (ts.isParameter(decl) && decl.parent.parameters[0] === decl) {
    const call = decl.parent.parent;
    const method = ts.isCallExpression(call) && ts.isPropertyAccessExpression(call.expression) && call.expression;
    if (method && ['map', 'forEach', 'filter', 'flatMap'].includes(method.name.text))
      return elementsOf(method.expression);
  }
  return UNKNOWN;
}

const evaluating = new Set();
/**
 * What an expression of a test name can be, as far as the source says: strings (a template is its
 * longest rendering), numbers, arrays, objects, a choice among them (OneOf), or UNKNOWN.
 */
function evaluate(expr) {
  if (evaluating.has(expr)) return UNKNOWN;
  evaluating.add(expr);
  try {
    const v = evaluateOnce(expr);
    return v === UNKNOWN ? literalType(checker.getTypeAtLocation(expr)) : v;
  } finally {
    evaluating.delete(expr);
  }
}

function evaluateOnce(expr) {
  if (ts.isParenthesizedExpression(expr) || ts.isAsExpression(expr) || ts.isNonNullExpression(expr))
    return evaluate(expr.expression);
  if (ts.isStringLiteral(expr) || ts.isNoSubstitutionTemplateLiteral(expr)) return expr.text;
  if (ts.isNumericLiteral(expr)) return Number(expr.text);
  if (ts.isTemplateExpression(expr))
    return expr.templateSpans.reduce((s, span) => s + show(span.expression) + span.literal.text, expr.head.text);
  if (ts.isBinaryExpression(expr) && expr.operatorToken.kind === ts.SyntaxKind.PlusToken)
    return show(expr.left) + show(expr.right);
  if (ts.isConditionalExpression(expr)) return oneOf([evaluate(expr.whenTrue), evaluate(expr.whenFalse)]);
  if (ts.isArrayLiteralExpression(expr)) {
    const out = [];
    for (const e of expr.elements) {
      if (!ts.isSpreadElement(e)) out.push(evaluate(e));
      else {
        const spread = evaluate(e.expression);
        if (!Array.isArray(spread)) return UNKNOWN;
        out.push(...spread);
      }
    }
    return out;
  }
  if (ts.isObjectLiteralExpression(expr)) {
    const out = {};
    for (const p of expr.properties) if (ts.isPropertyAssignment(p)) out[p.name.getText()] = evaluate(p.initializer);
    return out;
  }
  if (ts.isPropertyAccessExpression(expr)) {
    if (expr.name.text === 'name' && isFixture(expr.expression)) return oneOf(storeNames);
    const key = expr.name.text;
    return each(evaluate(expr.expression), (o) => (o !== null && typeof o === 'object' && key in o ? o[key] : UNKNOWN));
  }
  if (ts.isIdentifier(expr)) {
    const decl = checker.getSymbolAtLocation(expr)?.valueDeclaration;
    return decl ? bound(decl) : UNKNOWN;
  }
  if (ts.isCallExpression(expr)) return evaluateCall(expr);
  return UNKNOWN;
}

/** A few calls seen in test names: String(x), a.join(s), a.filter(f), a.map(f), and a local arrow function. */
function evaluateCall(call) {
  const callee = call.expression;
  if (ts.isIdentifier(callee) && callee.text === 'String' && call.arguments.length === 1)
    return each(evaluate(call.arguments[0]), (v) => (v === UNKNOWN ? v : String(v)));
  if (ts.isPropertyAccessExpression(callee)) {
    const method = callee.name.text;
    if (method === 'filter') return evaluate(callee.expression);
    if (method === 'map' && call.arguments[0] && ts.isArrowFunction(call.arguments[0])) {
      const body = call.arguments[0].body;
      return ts.isBlock(body) ? UNKNOWN : [evaluate(body)];
    }
    if (method === 'join') {
      const sep = call.arguments[0] ? evaluate(call.arguments[0]) : ',';
      return each(evaluate(callee.expression), (a) =>
        Array.isArray(a) && typeof sep === 'string' ? a.map((x) => longestText(x) ?? UNKNOWN).join(sep) : UNKNOWN,
      );
    }
  }
  if (ts.isIdentifier(callee)) {
    const decl = checker.getSymbolAtLocation(callee)?.valueDeclaration;
    const fn = decl && ts.isVariableDeclaration(decl) ? decl.initializer : undefined;
    if (fn && ts.isArrowFunction(fn) && !ts.isBlock(fn.body)) return evaluate(fn.body);
  }
  return UNKNOWN;
}

/** The value of a string or number literal type, or a choice among a union of them. */
function literalType(type) {
  const parts = type.isUnion() ? type.types : [type];
  if (parts.every((t) => t.isStringLiteral() || t.isNumberLiteral())) return oneOf(parts.map((t) => t.value));
  // A count the source cannot tell (rounds from the environment) is taken as up to 4 digits.
  if (parts.every((t) => t.flags & ts.TypeFlags.NumberLike)) return 1000;
  return UNKNOWN;
}

/** The longest text a value displays, or undefined if some of it cannot be told. */
function longestText(v) {
  if (v instanceof OneOf) {
    const texts = v.values.map(longestText);
    if (texts.some((t) => t === undefined)) return undefined;
    return texts.reduce((a, b) => (b.length > a.length ? b : a), '');
  }
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

/** An interpolation as displayed: its longest text, or its source text where that cannot be told. */
function show(expr) {
  return longestText(evaluate(expr)) ?? `\${${expr.getText()}}`;
}

/** The title argument of a test(), it() or describe() call, or undefined for any other call. */
function titleOf(call) {
  let callee = call.expression;
  if (ts.isPropertyAccessExpression(callee) && MODIFIERS.has(callee.name.text)) callee = callee.expression;
  if (!ts.isIdentifier(callee) || !TEST_CALLS.has(callee.text)) return undefined;
  const [first] = call.arguments;
  if (!first || ts.isFunctionLike(first) || ts.isObjectLiteralExpression(first)) return undefined;
  return first;
}

const names = [];
for (const file of program.getSourceFiles()) {
  if (!file.fileName.startsWith(path.join(root, 'test') + path.sep) || !file.fileName.endsWith('.test.ts')) continue;
  const visit = (node) => {
    const title = ts.isCallExpression(node) ? titleOf(node) : undefined;
    if (title) {
      const { line } = file.getLineAndCharacterOfPosition(title.getStart(file));
      names.push({
        file: path.relative(root, file.fileName),
        line: line + 1,
        shown: show(title),
        source: title.getText(file),
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
}

const problems = [];
for (const n of names)
  if (n.shown.length > MAX) problems.push(`${n.file}:${n.line}: ${n.shown.length} characters: ${n.shown}`);
const seen = new Map();
for (const n of names) {
  const key = `${n.file}\0${n.shown}`;
  const first = seen.get(key);
  if (first) problems.push(`${n.file}:${n.line}: same name as line ${first.line}: ${n.shown}`);
  else seen.set(key, n);
}

if (process.argv.includes('--stats')) {
  const lengths = names.map((n) => n.shown.length).sort((a, b) => a - b);
  const mid = lengths.length >> 1;
  const median = lengths.length % 2 ? lengths[mid] : (lengths[mid - 1] + lengths[mid]) / 2;
  const over = lengths.filter((l) => l > MAX).length;
  console.log(`test-names: ${names.length} names; median ${median}, longest ${lengths.at(-1)}, ${over} over ${MAX}`);
}
if (process.argv.includes('--list'))
  for (const n of names) console.log(`${n.file}:${n.line}\t${n.shown.length}\t${n.shown}`);
if (problems.length) {
  console.error(`test-names: ${problems.length} test names to fix (at most ${MAX} characters, unique in a file):`);
  for (const p of problems) console.error(`  ${p}`);
  process.exit(1);
}
