// Hive escaping of partition values, and the checks that keep every path inside the target.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeManifest, encodeManifest } from '../src/manifest/codec.js';
import { decodeJob, encodeJob } from '../src/job/job.js';
import { decodePlan, encodePlan } from '../src/plan/plan-file.js';
import { checkRelativePath, escapePartitionValue, parsePartitionArg, partitionOfFile } from '../src/paths.js';

/** Hive's unescapePathName: how readers decode a partition directory name. */
function unescapePartitionValue(escaped: string): string {
  return escaped.replace(/%([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}

test('partition values are escaped as Hive FileUtils.escapePathName does', () => {
  assert.equal(escapePartitionValue('2026-11-30'), '2026-11-30');
  assert.equal(escapePartitionValue('a/b'), 'a%2Fb');
  assert.equal(escapePartitionValue('"#%\'*/:=?\\{[]^'), '%22%23%25%27%2A%2F%3A%3D%3F%5C%7B%5B%5D%5E');
  assert.equal(escapePartitionValue('\u0001\u001f\u007f'), '%01%1F%7F');
  assert.equal(escapePartitionValue('São Paulo 東京'), 'São Paulo 東京');
  assert.equal(escapePartitionValue(''), '__HIVE_DEFAULT_PARTITION__');
  assert.equal(escapePartitionValue(null), '__HIVE_DEFAULT_PARTITION__');
  assert.equal(escapePartitionValue('..'), '..', 'a value is one segment below col=, so .. cannot climb');
  for (const v of ['a/b', '50% off', 'x=y?', 'ok']) assert.equal(unescapePartitionValue(escapePartitionValue(v)), v);
});

test('--partition K=V: columns lower-cased, the first = splits, the value is raw', () => {
  assert.deepEqual(parsePartitionArg('DT=a=b'), { column: 'dt', value: 'a=b' });
  assert.deepEqual(parsePartitionArg('dt='), { column: 'dt', value: '' });
  assert.throws(() => parsePartitionArg('=x'), { detail: { reason: 'partition-invalid', partition: '=x' } });
  assert.throws(() => parsePartitionArg('d/t=x'), { detail: { reason: 'partition-column-invalid', column: 'd/t' } });
  assert.throws(() => parsePartitionArg('_dt=x'), { detail: { reason: 'partition-column-invalid', column: '_dt' } });
});

test('task file paths: no .., no absolute path, no empty name', () => {
  assert.equal(checkRelativePath('dt=1/a.csv'), 'dt=1/a.csv');
  const problems = { '../a': 'segment', 'a/../../b': 'segment', '/etc/passwd': 'absolute', 'a//b': 'segment' };
  for (const [bad, problem] of Object.entries({ ...problems, 'a/': 'segment', './a': 'segment', 'C:\\x': 'absolute' }))
    assert.throws(
      () => checkRelativePath(bad),
      { detail: { reason: 'relative-path-invalid', what: 'file path', path: bad, problem } },
      bad,
    );
});

test('files must sit under a full partition path of the job', () => {
  assert.equal(partitionOfFile('dt=1/region=eu/a', ['dt', 'region'], 'dt=1'), 'dt=1/region=eu');
  assert.equal(partitionOfFile('a', [], ''), '');
  const columns = ['dt', 'region'];
  assert.throws(() => partitionOfFile('dt=1/a', columns, ''), {
    detail: { reason: 'file-outside-partitions', path: 'dt=1/a', columns },
  });
  assert.throws(() => partitionOfFile('dt=1/a/b', columns, ''), {
    detail: { reason: 'file-partition-segment', path: 'dt=1/a/b', segment: 'a', column: 'region', columns },
  });
  assert.throws(() => partitionOfFile('dt=2/a', ['dt'], 'dt=1'), {
    detail: { reason: 'file-outside-static-partition', path: 'dt=2/a', staticPartition: 'dt=1' },
  });
});

/**
 * Read from its bytes as from its text (a plan is decoded from the bytes read): names beyond
 * ASCII, U+2028 in a list item; a cut or a flipped byte found the same.
 */
function expectReadFromBytes(): void {
  const wide = encodeManifest(
    { kind: 'k', version: 1, name: 'é ' },
    {
      files: [
        { path: 'dt=ü/a  b', size: 1 },
        { path: '日本', size: 2 },
      ],
    },
  );
  assert.deepEqual(decodeManifest(Buffer.from(wide), 'f'), decodeManifest(wide, 'f'));
  assert.throws(() => decodeManifest(Buffer.from(wide.slice(0, wide.indexOf('\nend:') + 1)), 'f'), {
    reason: 'no-end-line',
    file: 'f',
  });
  const flipped = Buffer.from(wide);
  flipped[flipped.indexOf('日')]! ^= 1;
  assert.throws(() => decodeManifest(flipped, 'f'), { detail: { reason: 'digest-mismatch', file: 'f' } });
  assert.throws(() => decodeManifest(Buffer.alloc(0), '/s/f.yaml'), { reason: 'empty', file: '/s/f.yaml' });
}

/** An aborted v2 job's publishedTasks: task ids, as a claim's file name is. */
function expectPublishedTasksChecked(): void {
  const aborted = {
    jobId: 'j',
    target: '/t',
    targetPath: '/t',
    staging: '/s',
    mode: 'append',
    algorithm: 'v2',
    partitionBy: [],
    staticPartition: [],
    logPosition: null,
    appAttempt: 0,
    state: 'aborted',
    stagedAtMs: 1,
    owner: { user: 'u', host: 'h', pid: 1 },
  } as const;
  assert.deepEqual(decodeJob(encodeJob({ ...aborted, publishedTasks: ['0', 'b'] }), 'f').publishedTasks, ['0', 'b']);
  assert.equal(decodeJob(encodeJob(aborted), 'f').publishedTasks, undefined);
  const bads: [unknown, string][] = [
    [['../x'], 'publishedTasks[0]'],
    [['01'], 'publishedTasks[0]'],
    [[3], 'publishedTasks[0]'],
    ['x', 'publishedTasks'],
  ];
  for (const [bad, field] of bads) {
    const doc = { ...decodeManifest(encodeJob(aborted), 'f'), publishedTasks: bad };
    assert.throws(
      () => decodeJob(encodeManifest(doc), '/s/_job.yaml'),
      { reason: 'bad-field', file: '/s/_job.yaml', field },
      JSON.stringify(bad),
    );
  }
}

// Hand-written YAML is read only where allowed.
test('manifests: long lists one JSON line each, a check line at the end, errors naming the field', () => {
  const text = encodeManifest({ kind: 'k', version: 1, name: 'x: y' }, { files: [{ path: 'a b', size: 1 }] });
  assert.match(text, /^files:\n {2}- \{"path":"a b","size":1\}$/m);
  assert.match(text, /\nend: \{"lines":5,"lists":\{"files":1\},"sha256":"[0-9a-f]{64}"\}\n$/);
  assert.deepEqual(decodeManifest(text, 'f'), {
    kind: 'k',
    version: 1,
    name: 'x: y',
    files: [{ path: 'a b', size: 1 }],
  });
  const handWritten = 'kind: k\nfiles:\n  - path: a\n    size: 2\n';
  assert.throws(() => decodeManifest(handWritten, '/s/f.yaml'), { reason: 'no-end-line', file: '/s/f.yaml' });
  assert.deepEqual(decodeManifest(handWritten, 'f', { allowUnsigned: true }).files, [{ path: 'a', size: 2 }]);
  assert.throws(() => decodeManifest('', '/s/_job.yaml'), { detail: { reason: 'empty', file: '/s/_job.yaml' } });
  // A U+2028 (which JSON and YAML keep inside a value) before 'end:' starts no line.
  assert.deepEqual(decodeManifest('kind: k\nname: "a\u2028end: b"\n', 'f', { allowUnsigned: true }), {
    kind: 'k',
    name: 'a\u2028end: b',
  });
  const sign = (body: string) =>
    encodeManifest(
      Object.fromEntries(
        body
          .trim()
          .split('\n')
          .map((l) => [l.split(': ')[0]!, JSON.parse(l.split(': ')[1]!)]),
      ),
    );
  assert.throws(
    () => decodeJob(sign('kind: "stagecommit/job"\nversion: 1\njobId: "j"\nstate: "weird"'), '/s/_job.yaml'),
    { reason: 'bad-field', file: '/s/_job.yaml', field: 'state' },
  );
  assert.throws(() => decodeJob(sign('kind: "stagecommit/job"\nversion: 9'), '/s/_job.yaml'), {
    reason: 'bad-field',
    field: 'version',
  });
  // JSON leaves U+2028 and U+2029 raw: a header value holding them reads back.
  assert.equal(
    decodeManifest(encodeManifest({ kind: 'k', version: 1, name: 'a\u2028b\u2029c' }), 'f').name,
    'a\u2028b\u2029c',
  );
  expectReadFromBytes();
  expectPublishedTasksChecked();
});

test('a plan read back: no more phases than ops, and old data parked only in the staging dir', () => {
  const plan = {
    jobId: 'j',
    appAttempt: 0,
    logEntry: null,
    createdAtMs: 1,
    files: 1,
    bytes: 1,
    tasks: ['0'],
    partitionsWritten: ['dt=1'],
    partitionsReplaced: ['dt=1'],
    filenames: [],
    phases: [
      [
        {
          op: 'swap' as const,
          path: 't:dt=1' as const,
          trash: 's:_trash/dt=1' as const,
          from: 's:_temporary/0/t/dt=1' as const,
          dir: true,
        },
      ],
    ],
  };
  const text = encodePlan(plan as never).toString('utf8');
  assert.equal(decodePlan(text, 'f').phases[0]![0]!.op, 'swap');
  const resigned = (change: (doc: Record<string, unknown>, ops: Record<string, unknown>[]) => void): string => {
    const { ops, ...doc } = decodeManifest(text, 'f') as Record<string, unknown> & { ops: Record<string, unknown>[] };
    change(doc, ops);
    return encodeManifest(doc, { ops });
  };
  assert.throws(
    () =>
      decodePlan(
        resigned((d) => void (d.phaseCount = 1099511627776)),
        '/s/_commit.yaml',
      ),
    { reason: 'bad-field', file: '/s/_commit.yaml', field: 'phaseCount' },
  );
  assert.throws(
    () =>
      decodePlan(
        resigned((_, ops) => void (ops[0]!.trash = 't:dt=9')),
        '/s/_commit.yaml',
      ),
    { reason: 'bad-field', file: '/s/_commit.yaml', field: 'ops[0]' },
  );
});
