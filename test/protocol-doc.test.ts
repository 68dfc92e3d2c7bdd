// docs/protocol.md is the one spec the code cites: every section reference in the sources, tests,
// benchmarks, docs and README names one of its headings, in one form (`protocol.md §5.9`), every
// link into it names a heading, and nothing cites the design brief or an internal review instead.

import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ExitCode } from '../src/errors.js';
import { EXIT_MEANINGS } from '../src/cli/help.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOC = 'docs/protocol.md';
/** Where the project's own text is: every file under these, and the README. */
const DIRS = ['src', 'test', 'testing', 'bench', 'docs', 'examples', 'scripts'];
const TEXT = /\.(?:[cm]?[jt]s|md|sh|json|ya?ml|txt)$/;
/** Spelled as an escape so that this file holds no section sign of its own. */
const SECTION = '\u00a7';
const NUMBER = /^(\d+(?:\.\d+)*)/;

interface SourceFile {
  readonly rel: string;
  readonly lines: readonly string[];
}

async function projectFiles(): Promise<SourceFile[]> {
  const rels = ['README.md'];
  for (const dir of DIRS) {
    const entries = await readdir(path.join(ROOT, dir), { withFileTypes: true, recursive: true }).catch(() => []);
    for (const e of entries) {
      if (!e.isFile() || !TEXT.test(e.name)) continue;
      const rel = path.relative(ROOT, path.join(e.parentPath, e.name)).split(path.sep).join('/');
      if (!rel.split('/').includes('node_modules')) rels.push(rel);
    }
  }
  return Promise.all(
    rels.sort().map(async (rel) => ({ rel, lines: (await readFile(path.join(ROOT, rel), 'utf8')).split('\n') })),
  );
}

/** GitHub's anchor for a heading: lower case, punctuation but '-' dropped, spaces to '-'. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

interface Headings {
  /** Section numbers ('5.9') to their headings. */
  readonly numbers: Map<string, string>;
  readonly anchors: Set<string>;
  readonly duplicates: string[];
}

function headingsOf(doc: SourceFile): Headings {
  const numbers = new Map<string, string>();
  const anchors = new Set<string>();
  const duplicates: string[] = [];
  let fenced = false;
  for (const line of doc.lines) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = !fenced && /^#{1,6} (.+)$/.exec(line);
    if (!m) continue;
    anchors.add(slug(m[1]!));
    const n = NUMBER.exec(m[1]!);
    if (!n) continue;
    const number = n[1]!;
    if (numbers.has(number)) duplicates.push(number);
    numbers.set(number, m[1]!);
  }
  return { numbers, anchors, duplicates };
}

/** Each section reference on a line and where it stands: its number ('5.9'), or '' for a sign without one. */
function referencesIn(line: string): { at: number; number: string }[] {
  const out: { at: number; number: string }[] = [];
  for (let at = line.indexOf(SECTION); at >= 0; at = line.indexOf(SECTION, at + 1)) {
    const number = NUMBER.exec(line.slice(at + 1))?.[1] ?? '';
    out.push({ at, number: number.replace(/\.$/, '') });
  }
  return out;
}

const files = await projectFiles();
const doc = files.find((f) => f.rel === DOC);
assert.ok(doc, `${DOC} is in the repository`);
const { numbers, anchors, duplicates } = headingsOf(doc);

describe('docs/protocol.md and what cites it', () => {
  test('its sections have unique numbers, and the invariants run from 5.1 to 5.19 without a gap', () => {
    assert.deepEqual(duplicates, [], 'no section number is used twice');
    for (let i = 1; i <= 19; i++) assert.ok(numbers.has(`5.${i}`), `invariant 5.${i} has its heading`);
  });

  test('every section reference names one of its headings, and elsewhere reads protocol.md and the number', () => {
    const problems: string[] = [];
    for (const f of files) {
      f.lines.forEach((line, i) => {
        const refs = referencesIn(line);
        if (refs.length === 0) return;
        const where = `${f.rel}:${i + 1}`;
        const cited = line.indexOf('protocol.md');
        if (f.rel !== DOC && (cited < 0 || cited > refs[0]!.at))
          problems.push(`${where}: a section reference that does not name protocol.md first: ${line.trim()}`);
        for (const r of refs) {
          if (r.number === '') problems.push(`${where}: a section sign without a number: ${line.trim()}`);
          else if (!numbers.has(r.number)) problems.push(`${where}: ${SECTION}${r.number} is no heading of ${DOC}`);
        }
      });
    }
    assert.deepEqual(problems, []);
  });

  test('every link into protocol.md names one of its headings', () => {
    const problems: string[] = [];
    for (const f of files.filter((x) => x.rel.endsWith('.md'))) {
      const own = f.rel === DOC;
      f.lines.forEach((line, i) => {
        for (const m of line.matchAll(/\]\(([^)#\s]*)#([^)\s]+)\)/g)) {
          const [, file, anchor] = m;
          const target = own && file === '' ? DOC : path.posix.join(path.posix.dirname(f.rel), file!);
          if (target !== DOC) continue;
          if (!anchors.has(anchor!)) problems.push(`${f.rel}:${i + 1}: #${anchor} is no heading of ${DOC}`);
        }
      });
    }
    assert.deepEqual(problems, []);
  });

  test('no file cites the design brief or an internal review name', () => {
    const brief = /\bDESIGN(?:\.md\b| ?\u00a7)/;
    const review = /\b(?:helper-\d+|closing-\d+|session \d+)/i;
    const problems: string[] = [];
    for (const f of files) {
      f.lines.forEach((line, i) => {
        if (brief.test(line)) problems.push(`${f.rel}:${i + 1}: cites the design brief: ${line.trim()}`);
        const name = review.exec(line);
        if (name) problems.push(`${f.rel}:${i + 1}: names an internal review (${name[0]}): say the invariant kept`);
      });
    }
    assert.deepEqual(problems, []);
  });

  test("the README's exit codes, --help's and the errors' are the same codes", () => {
    const readme = files.find((f) => f.rel === 'README.md')!;
    const start = readme.lines.indexOf('## Exit codes');
    assert.ok(start >= 0, 'README has an Exit codes section');
    const rows: string[] = [];
    for (const line of readme.lines.slice(start + 1)) {
      if (line.startsWith('## ')) break;
      const m = /^\| ([\d, ]+) \|/.exec(line);
      if (m) rows.push(m[1]!.trim());
    }
    const codes = Object.values(ExitCode).map(String);
    assert.deepEqual(rows, [...codes, '130, 143']);
    assert.deepEqual(Object.keys(EXIT_MEANINGS), codes);
  });
});
