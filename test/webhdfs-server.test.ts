// The test WebHDFS server against Hadoop's rules (WebHDFS.md, filesystem.md), with raw HTTP —
// not through our client — and then our client against it: failover, refusals, encoding.

import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import {
  createServer as createHttpServer,
  request as httpRequest,
  type RequestListener,
  type ServerResponse,
} from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { WebHdfsCluster } from '../testing/webhdfs-server.js';
import { WebHdfsStore } from '../src/store/webhdfs/webhdfs-store.js';
import { StoreError } from '../src/errors.js';
import { isTempName } from '../src/store/temp-names.js';
import { withFence, type StoreFence } from '../src/store/fence.js';

let dir: string;
let cluster: WebHdfsCluster;
let nn: string;

async function op(method: string, p: string, query: string, body?: string): Promise<Response> {
  return fetch(`${nn}/webhdfs/v1${p}?user.name=spec&${query}`, { method, body, redirect: 'manual' });
}

/** CREATE as the spec describes it: a 307 from the name node, then the bytes to the data node. */
async function create(p: string, data: string, overwrite = false): Promise<Response> {
  const r = await op('PUT', p, `op=CREATE&overwrite=${overwrite}`);
  assert.equal(r.status, 307);
  return fetch(r.headers.get('location')!, { method: 'PUT', body: data });
}

/**
 * A proxy before the first name node that spoils the answers of the ops in `cut` (a count each):
 * a RENAME is done upstream and its answer lost (the connection cut); others are cut mid-body.
 */
async function faultyNameNode(cut: Record<string, number>) {
  const upstream = new URL(nn);
  const proxy = createHttpServer((req, res) => {
    const op = new URL(req.url!, 'http://x').searchParams.get('op') ?? '';
    const up = httpRequest(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (r) => {
        if ((cut[op] ?? 0) > 0) {
          cut[op]!--;
          if (op === 'RENAME') return void r.resume().on('end', () => res.socket?.destroy());
          res.writeHead(r.statusCode ?? 502, { ...r.headers, 'content-length': '500' });
          return void res.write('{"FileSt', () => res.socket?.destroy());
        }
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    req.pipe(up);
  });
  await new Promise<void>((res) => proxy.listen(0, '127.0.0.1', res));
  const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  return {
    cut,
    client: () =>
      new WebHdfsStore({ nameNodes: [url], uriPrefix: 'hdfs://c', user: 'etl', retries: 2, retryBaseMs: 5 }),
    close: async () => {
      proxy.closeAllConnections();
      await new Promise((res) => proxy.close(res));
    },
  };
}

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'webhdfs-spec-'));
  cluster = await new WebHdfsCluster({ root: dir, listLimit: 2 }).start(2);
  nn = cluster.nameNodeUrls[0]!;
});
after(async () => {
  await cluster.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('WebHDFS test server follows the specification', () => {
  test('CREATE and OPEN redirect (307) to a data node; overwrite=false refuses an existing file (403)', async () => {
    const first = await op('PUT', '/spec/a.txt', 'op=CREATE&overwrite=false');
    assert.equal(first.status, 307);
    const loc = new URL(first.headers.get('location')!);
    assert.notEqual(loc.port, new URL(nn).port, 'the data node is another address');
    assert.equal((await fetch(loc, { method: 'PUT', body: 'hello' })).status, 201);
    const again = await create('/spec/a.txt', 'other');
    assert.equal(again.status, 403);
    assert.equal(
      ((await again.json()) as { RemoteException: { exception: string } }).RemoteException.exception,
      'FileAlreadyExistsException',
    );
    const open = await op('GET', '/spec/a.txt', 'op=OPEN');
    assert.equal(open.status, 307);
    assert.equal(await (await fetch(open.headers.get('location')!)).text(), 'hello');
  });

  // As the name node's getBlockLocations answers.
  test("OPEN of a directory: 404 FileNotFoundException 'Path is not a file'", async () => {
    await op('PUT', '/opendir/d', 'op=MKDIRS');
    const r = await op('GET', '/opendir/d', 'op=OPEN');
    assert.equal(r.status, 404);
    const j = (await r.json()) as { RemoteException: { exception: string; message: string } };
    assert.equal(j.RemoteException.exception, 'FileNotFoundException');
    assert.match(j.RemoteException.message, /^Path is not a file: /);
  });

  test('GETFILESTATUS of a missing path: 404 with a RemoteException body', async () => {
    const r = await op('GET', '/nope', 'op=GETFILESTATUS');
    assert.equal(r.status, 404);
    const j = (await r.json()) as { RemoteException: { exception: string; javaClassName: string; message: string } };
    assert.deepEqual(
      [j.RemoteException.exception, j.RemoteException.javaClassName],
      ['FileNotFoundException', 'java.io.FileNotFoundException'],
    );
  });

  test('rename: onto an existing directory moves the source inside it; refusals answer {"boolean": false}', async () => {
    await create('/r/src/f', 'x');
    await op('PUT', '/r/dst', 'op=MKDIRS');
    const inside = await op('PUT', '/r/src', 'op=RENAME&destination=/r/dst');
    assert.deepEqual(await inside.json(), { boolean: true });
    assert.equal((await op('GET', '/r/dst/src/f', 'op=GETFILESTATUS')).status, 200, 'moved inside the directory');
    assert.deepEqual(
      await (await op('PUT', '/r/missing', 'op=RENAME&destination=/r/x')).json(),
      { boolean: false },
      'missing source',
    );
    await create('/r/file1', '1');
    await create('/r/file2', '2');
    assert.deepEqual(
      await (await op('PUT', '/r/file1', 'op=RENAME&destination=/r/file2')).json(),
      { boolean: false },
      'existing file',
    );
    assert.deepEqual(
      await (await op('PUT', '/r/file1', 'op=RENAME&destination=/r/no/parent/f')).json(),
      { boolean: false },
      'rename does not create parents',
    );
  });

  test('rename2 (renameoptions): NONE refuses an existing destination, OVERWRITE replaces a file', async () => {
    await create('/r2/a', 'a');
    await create('/r2/b', 'b');
    const none = await op('PUT', '/r2/a', 'op=RENAME&destination=/r2/b&renameoptions=NONE');
    assert.equal(none.status, 403);
    assert.equal(
      ((await none.json()) as { RemoteException: { exception: string } }).RemoteException.exception,
      'FileAlreadyExistsException',
    );
    assert.equal((await op('PUT', '/r2/a', 'op=RENAME&destination=/r2/b&renameoptions=OVERWRITE')).status, 200);
    const open = await op('GET', '/r2/b', 'op=OPEN');
    assert.equal(await (await fetch(open.headers.get('location')!)).text(), 'a');
  });

  // The data node opens the path once and sends that length, as WebHdfsHandler does.
  test('OPEN reads one version of a file whole while RENAME OVERWRITE replaces it', async () => {
    const versions = ['short\n', `${'long '.repeat(4000)}\n`];
    await create('/ov/f', versions[0]!);
    for (let round = 0; round < 60; round++) {
      const next = versions[(round + 1) % 2]!;
      await create('/ov/next', next, true);
      const at = (await op('GET', '/ov/f', 'op=OPEN')).headers.get('location')!;
      const reads = Array.from({ length: 8 }, (_, i) =>
        sleep(i % 4).then(() =>
          fetch(at).then(
            (r) => r.text(),
            (e: Error) => `failed: ${e.message}`,
          ),
        ),
      );
      const [, ...got] = await Promise.all([
        op('PUT', '/ov/next', 'op=RENAME&destination=/ov/f&renameoptions=OVERWRITE'),
        ...reads,
      ]);
      for (const read of got)
        assert.ok(
          versions.includes(read),
          `round ${round}: a read of ${read.length} bytes is neither version whole: ${read.slice(0, 40)}`,
        );
    }
  });

  test('DELETE of a missing path answers false; a non-empty directory needs recursive=true', async () => {
    assert.deepEqual(await (await op('DELETE', '/gone', 'op=DELETE')).json(), { boolean: false });
    await create('/d/x', 'x');
    assert.equal((await op('DELETE', '/d', 'op=DELETE&recursive=false')).status, 403);
    assert.deepEqual(await (await op('DELETE', '/d', 'op=DELETE&recursive=true')).json(), { boolean: true });
  });

  test('a recursive DELETE removes the tree in one step: a listing running meanwhile sees it whole or gone', async () => {
    const n = 300;
    assert.equal((await op('PUT', '/atomic', 'op=MKDIRS')).status, 200);
    for (let i = 0; i < n; i += 50) {
      const made = await Promise.all(Array.from({ length: 50 }, (_, j) => create(`/atomic/f${i + j}`, 'x')));
      assert.deepEqual([...new Set(made.map((r) => r.status))], [201]);
    }
    const seen: number[] = [];
    const listing = (async () => {
      for (;;) {
        const r = await op('GET', '/atomic', 'op=LISTSTATUS');
        if (r.status === 404) return;
        seen.push(((await r.json()) as { FileStatuses: { FileStatus: unknown[] } }).FileStatuses.FileStatus.length);
      }
    })();
    await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(await (await op('DELETE', '/atomic', 'op=DELETE&recursive=true')).json(), { boolean: true });
    await listing;
    assert.deepEqual([...new Set(seen)], [n], 'every listing saw the whole tree');
  });

  test('LISTSTATUS_BATCH pages with startAfter and remainingEntries', async () => {
    for (const n of ['a', 'b', 'c', 'd', 'e']) await create(`/l/${n}`, n);
    const names: string[] = [];
    let after = '';
    for (;;) {
      const j = (await (await op('GET', '/l', `op=LISTSTATUS_BATCH${after ? `&startAfter=${after}` : ''}`)).json()) as {
        DirectoryListing: {
          partialListing: { FileStatuses: { FileStatus: { pathSuffix: string }[] } };
          remainingEntries: number;
        };
      };
      const page = j.DirectoryListing.partialListing.FileStatuses.FileStatus;
      assert.ok(page.length <= 2);
      names.push(...page.map((s) => s.pathSuffix));
      if (j.DirectoryListing.remainingEntries === 0) break;
      after = page.at(-1)!.pathSuffix;
    }
    assert.deepEqual(names, ['a', 'b', 'c', 'd', 'e']);
  });

  test('a standby name node answers 403 StandbyException', async () => {
    const r = await fetch(`${cluster.nameNodeUrls[1]}/webhdfs/v1/?op=GETFILESTATUS&user.name=spec`);
    assert.equal(r.status, 403);
    assert.equal(
      ((await r.json()) as { RemoteException: { exception: string } }).RemoteException.exception,
      'StandbyException',
    );
  });

  test('a created file is visible, empty, before its bytes arrive', async () => {
    const slow = await new WebHdfsCluster({ root: path.join(dir, 'slow'), createDelayMs: 400 }).start(1);
    try {
      const base = slow.nameNodeUrls[0]!;
      const r = await fetch(`${base}/webhdfs/v1/claim?op=CREATE&overwrite=false&user.name=x`, {
        method: 'PUT',
        redirect: 'manual',
      });
      const writing = fetch(r.headers.get('location')!, { method: 'PUT', body: 'claim-bytes' });
      await new Promise((res) => setTimeout(res, 150));
      const st = (await (await fetch(`${base}/webhdfs/v1/claim?op=GETFILESTATUS&user.name=x`)).json()) as {
        FileStatus: { length: number };
      };
      assert.equal(st.FileStatus.length, 0);
      assert.equal((await writing).status, 201);
    } finally {
      await slow.stop();
    }
  });
});

describe('WebHDFS client against the server', () => {
  const client = (over: Partial<ConstructorParameters<typeof WebHdfsStore>[0]> = {}) =>
    new WebHdfsStore({
      nameNodes: cluster.nameNodeUrls,
      uriPrefix: 'hdfs://c',
      user: 'etl',
      retries: 2,
      retryBaseMs: 5,
      ...over,
    });

  /** A stand-in name node answering with `handler`, a client of it, and how to close it. */
  const standIn = async (handler: RequestListener, retries: number) => {
    const server = createHttpServer(handler);
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
    const store = client({ nameNodes: [`http://127.0.0.1:${(server.address() as AddressInfo).port}`], retries });
    const close = async () => {
      server.closeAllConnections();
      await new Promise((res) => server.close(res));
    };
    return { store, close };
  };

  test('fails over from a standby name node and remembers the active one', async () => {
    cluster.active = 1;
    const c = client();
    const before = cluster.log.length;
    await c.mkdirs('/ha/x');
    await c.mkdirs('/ha/y');
    const seen = cluster.log.slice(before).map((l) => l.node);
    assert.deepEqual(seen, [0, 1, 1], 'one standby answer, then the active node only');
    cluster.active = 0;
    assert.ok(await c.stat('/ha/x'), 'fails back when the other node becomes active');
  });

  test('a refused connection moves to the next name node', async () => {
    cluster.active = 0;
    const c = new WebHdfsStore({
      nameNodes: ['http://127.0.0.1:1', nn],
      uriPrefix: 'hdfs://c',
      user: 'etl',
      retries: 1,
      retryBaseMs: 5,
    });
    await c.mkdirs('/refused');
    assert.ok(await c.stat('/refused'));
  });

  test(
    'a name node that takes the connection and never answers is given up at the deadline, the next used',
    { timeout: 20_000 },
    async () => {
      cluster.active = 0;
      const held: import('node:net').Socket[] = [];
      const silent = createServer((sock) => void held.push(sock));
      await new Promise<void>((res) => silent.listen(0, '127.0.0.1', res));
      const hung = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      try {
        const c = new WebHdfsStore({
          nameNodes: [hung, nn],
          uriPrefix: 'hdfs://c',
          user: 'etl',
          retries: 1,
          retryBaseMs: 5,
          requestTimeoutMs: 300,
        });
        const t = Date.now();
        await c.mkdirs('/hung');
        assert.ok(await c.stat('/hung'));
        assert.ok(Date.now() - t >= 250, 'waited for the deadline');
        assert.ok(held.length >= 1, 'the silent node was asked first');
        // Alone, the silent node fails the call (with its retries) instead of hanging it.
        const alone = new WebHdfsStore({
          nameNodes: [hung],
          uriPrefix: 'hdfs://c',
          user: 'etl',
          retries: 1,
          retryBaseMs: 5,
          requestTimeoutMs: 200,
        });
        await assert.rejects(
          alone.stat('/hung'),
          (e: StoreError) => e.reason === 'io' && /no name node answered/.test(e.message),
        );
      } finally {
        for (const s of held) s.destroy();
        await new Promise((res) => silent.close(res));
      }
    },
  );

  // A create-if-absent sent again finds its own file.
  test('a data node that cuts the connection or answers 500: reads and whole-file writes are sent again', async () => {
    cluster.active = 0;
    const c = client();
    const left = async (d: string) => (await c.list(d)).map((e) => e.name).sort();
    await c.mkdirs('/dn');
    await c.writeFile('/dn/f', 'bytes-of-f');
    for (const fault of ['cut-before', 'cut-after', 'error-500'] as const) {
      cluster.dataNodeFaults.push(fault);
      assert.equal((await c.readFile('/dn/f'))?.toString(), 'bytes-of-f', `read after ${fault}`);
      cluster.dataNodeFaults.push(fault);
      await c.writeFile(`/dn/w-${fault}`, `w ${fault}`);
      assert.equal((await c.readFile(`/dn/w-${fault}`))?.toString(), `w ${fault}`);
      cluster.dataNodeFaults.push(fault);
      // cut-after: the file was made and the answer lost; the file holding our bytes is ours.
      assert.equal(await c.createExclusive(`/dn/x-${fault}`, `x ${fault}`), true, `create-if-absent after ${fault}`);
      assert.equal((await c.readFile(`/dn/x-${fault}`))?.toString(), `x ${fault}`);
    }
    // A lost answer over someone else's file is a lost race, as without the fault.
    cluster.dataNodeFaults.push('cut-before');
    assert.equal(await c.createExclusive('/dn/f', 'mine'), false);
    assert.equal((await c.readFile('/dn/f'))?.toString(), 'bytes-of-f');
    assert.deepEqual(
      await left('/dn'),
      ['f', 'w-cut-after', 'w-cut-before', 'w-error-500', 'x-cut-after', 'x-cut-before', 'x-error-500'],
      'no temp file left',
    );
    assert.equal(cluster.dataNodeFaults.length, 0, 'every fault was met');
  });

  // Never a bare "fetch failed".
  test('a data node that never answers: the step fails naming it and the cause, leaving no temp', async () => {
    cluster.active = 0;
    const c = client({ retries: 1 });
    await c.mkdirs('/dn2');
    await c.writeFile('/dn2/f', 'f');
    const named = (e: unknown) =>
      e instanceof StoreError &&
      e.reason === 'io' &&
      /the data node 127\.0\.0\.1:\d+ (gave no answer: (socket hang up|other side closed)|answered HTTP 500)/.test(
        e.message,
      ) &&
      !/^fetch failed/.test(e.message);
    cluster.dataNodeFaults.push('cut-before', 'cut-before');
    await assert.rejects(c.readFile('/dn2/f'), named);
    cluster.dataNodeFaults.push('error-500', 'error-500');
    await assert.rejects(c.writeFile('/dn2/g', 'g'), named);
    cluster.dataNodeFaults.push('cut-before');
    await assert.rejects(
      c.put('/dn2/s', { stream: Readable.from([Buffer.from('streamed')]) }),
      named,
      'a stream is not sent twice',
    );
    assert.deepEqual(
      (await c.list('/dn2')).map((e) => e.name),
      ['f'],
    );
  });

  // As a proxy without a back end does.
  test(
    'a name node that hangs up on accept: the next one is used; alone, the call fails naming the cause',
    { timeout: 20_000 },
    async () => {
      cluster.active = 0;
      const closer = createServer((sock) => void sock.destroy());
      await new Promise<void>((res) => closer.listen(0, '127.0.0.1', res));
      const gone = `http://127.0.0.1:${(closer.address() as AddressInfo).port}`;
      try {
        const c = new WebHdfsStore({
          nameNodes: [gone, nn],
          uriPrefix: 'hdfs://c',
          user: 'etl',
          retries: 1,
          retryBaseMs: 5,
        });
        await c.mkdirs('/hangup');
        assert.ok(await c.stat('/hangup'));
        const alone = new WebHdfsStore({
          nameNodes: [gone],
          uriPrefix: 'hdfs://c',
          user: 'etl',
          retries: 1,
          retryBaseMs: 5,
        });
        await assert.rejects(
          alone.stat('/hangup'),
          (e: StoreError) =>
            e.reason === 'io' &&
            /no name node answered \(http:\/\/127\.0\.0\.1:\d+\): (socket hang up|read ECONNRESET)/.test(e.message),
        );
        const refused = new WebHdfsStore({
          nameNodes: ['http://127.0.0.1:1'],
          uriPrefix: 'hdfs://c',
          user: 'etl',
          retries: 0,
          retryBaseMs: 5,
        });
        await assert.rejects(refused.stat('/x'), (e: StoreError) =>
          /no name node answered \(http:\/\/127\.0\.0\.1:1\): connect ECONNREFUSED 127\.0\.0\.1:1/.test(e.message),
        );
      } finally {
        await new Promise((res) => closer.close(res));
      }
    },
  );

  // The request fails once no byte moved for the deadline.
  test(
    'a data node that stops reading an upload: a write is sent again, a stream fails naming it',
    { timeout: 20_000 },
    async () => {
      cluster.active = 0;
      const c = client({ requestTimeoutMs: 300 });
      await c.mkdirs('/stall');
      cluster.dataNodeFaults.push('stall');
      await c.writeFile('/stall/f', 'f');
      assert.equal((await c.readFile('/stall/f'))?.toString(), 'f');
      cluster.dataNodeFaults.push('stall');
      await assert.rejects(
        c.put('/stall/s', { stream: Readable.from([Buffer.alloc(32 << 10)]) }),
        (e: unknown) =>
          e instanceof StoreError && /the data node .* gave no answer: stalled: no progress for 300 ms/.test(e.message),
      );
      assert.deepEqual(
        (await c.list('/stall')).map((e) => e.name),
        ['f'],
        'no temp left',
      );
      // Slow but moving (2 MiB at 640 KiB/s, far past the 300 ms deadline): never taken for a stall.
      cluster.dataNodeFaults.push('slow');
      const big = Buffer.alloc(2 << 20, 7);
      await c.put('/stall/slow', { stream: Readable.from([big]) });
      assert.equal(cluster.dataNodeFaults.length, 0, 'the slow data node took it');
      assert.ok((await c.readFile('/stall/slow'))?.equals(big));
      // A file that stops coming halfway: the same word, not a bare 'aborted'.
      cluster.dataNodeFaults.push('stall-after');
      await assert.rejects(
        client({ requestTimeoutMs: 300, retries: 0 }).readFile('/stall/slow'),
        (e: unknown) =>
          e instanceof StoreError &&
          /the data node's answer broke off: stalled: no progress for 300 ms$/.test(e.message),
      );
    },
  );

  test('a name node answer that breaks off is sent again; a rename done whose answer was lost is found done', async () => {
    cluster.active = 0;
    // The first GETFILESTATUS answer is cut after a few bytes; the first RENAME is done by the
    // name node, and its answer never reaches the client.
    const proxy = await faultyNameNode({ GETFILESTATUS: 1, RENAME: 1 });
    try {
      const c = proxy.client();
      await c.mkdirs('/lost');
      assert.ok(await c.stat('/lost'), 'the cut answer was sent again');
      await c.writeFile('/lost/m.yaml', 'manifest');
      assert.equal(proxy.cut.RENAME, 0, 'the rename answer was lost');
      assert.equal((await c.readFile('/lost/m.yaml'))?.toString(), 'manifest');
      assert.deepEqual(
        (await c.list('/lost')).map((e) => e.name),
        ['m.yaml'],
      );
    } finally {
      await proxy.close();
    }
  });

  // For a file, a directory and a put.
  test('every answer to a rename lost: a rename the name node did is found done; one it could not do fails', async () => {
    cluster.active = 0;
    const proxy = await faultyNameNode({ RENAME: Infinity });
    try {
      const c = proxy.client();
      await c.writeFile('/alllost/_commit.yaml', 'plan');
      assert.equal((await c.readFile('/alllost/_commit.yaml'))?.toString(), 'plan');
      await c.mkdirs('/alllost/attempt/dt=1');
      await c.rename('/alllost/attempt', '/alllost/task');
      assert.deepEqual((await c.list('/alllost')).map((e) => e.name).sort(), ['_commit.yaml', 'task']);
      await c.put('/alllost/task/f.csv', { stream: Readable.from([Buffer.from('a,b\n')]) });
      assert.equal((await c.readFile('/alllost/task/f.csv'))?.toString(), 'a,b\n');
      assert.deepEqual((await c.list('/alllost/task')).map((e) => e.name).sort(), ['dt=1', 'f.csv'], 'no temp left');
      // Nothing to rename: the lost answers prove nothing, and the call fails as it did.
      await assert.rejects(
        c.rename('/alllost/none', '/alllost/other'),
        (e: unknown) => e instanceof StoreError && /no name node answered/.test(e.message),
      );
      assert.equal(await c.stat('/alllost/other'), null);
    } finally {
      await proxy.close();
    }
  });

  // A proxy's page, '{}', a status without its fields.
  test("an answer that is not WebHDFS's fails naming what came, never as a crash", async () => {
    const answers = [
      '{}',
      '<html>502 Bad Gateway</html>',
      '{"FileStatus":{"pathSuffix":""}}',
      '{"boolean":"yes"}',
      '{"DirectoryListing":{"partialListing":{"FileStatuses":{"FileStatus":[{}]}},"remainingEntries":0}}',
    ];
    let next = '';
    const odd = createHttpServer(
      (_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end(next),
    );
    await new Promise<void>((res) => odd.listen(0, '127.0.0.1', res));
    try {
      const c = new WebHdfsStore({
        nameNodes: [`http://127.0.0.1:${(odd.address() as AddressInfo).port}`],
        uriPrefix: 'hdfs://c',
        user: 'etl',
        retries: 0,
        retryBaseMs: 5,
      });
      for (const a of answers) {
        next = a;
        for (const [op, call] of [
          ['stat', () => c.stat('/x')],
          ['list', () => c.list('/x')],
          ['mkdirs', () => c.mkdirs('/x')],
          ['delete', () => c.delete('/x', false)],
        ] as const) {
          await assert.rejects(
            call(),
            (e: unknown) =>
              e instanceof StoreError &&
              e.reason === 'io' &&
              e.message.startsWith(
                `${op} hdfs://c/x: the name node's answer (HTTP 200) is not the WebHDFS answer to ${op}: `,
              ) &&
              e.message.endsWith("check that the address is a name node's HTTP port"),
            `${op} of ${a}`,
          );
        }
      }
    } finally {
      odd.closeAllConnections();
      await new Promise((res) => odd.close(res));
    }
  });

  // A page is an error; {"boolean": false} says why.
  test('a 200 to RENAME or CREATE is no proof by itself: only an empty answer or a boolean is', async () => {
    let rename = '';
    let create = { status: 201, body: '' };
    const { store: c, close } = await standIn((req, res) => {
      const u = new URL(req.url!, 'http://x');
      const op = u.searchParams.get('op');
      if (op === 'GETFILESTATUS')
        return void res
          .writeHead(404, { 'content-type': 'application/json' })
          .end('{"RemoteException":{"exception":"FileNotFoundException","message":"no"}}');
      if (op === 'CREATE' && !u.searchParams.has('dn'))
        return void res.writeHead(307, { location: `http://127.0.0.1:${req.socket.localPort}${req.url}&dn=1` }).end();
      if (op === 'CREATE') return void req.resume().on('end', () => res.writeHead(create.status).end(create.body));
      res.writeHead(200, { 'content-type': 'application/json' }).end(rename);
    }, 0);
    try {
      for (const ok of ['', '{"boolean":true}']) {
        rename = ok;
        await c.rename('/a', '/b');
      }
      rename = '<html>Bad Gateway</html>';
      await assert.rejects(
        c.rename('/a', '/b'),
        (e: unknown) =>
          e instanceof StoreError &&
          e.reason === 'io' &&
          /is not the WebHDFS answer to rename: "<html>Bad Gateway<\/html>"/.test(e.message),
      );
      rename = '{"boolean":false}';
      await assert.rejects(
        c.rename('/a', '/b'),
        (e: unknown) =>
          e instanceof StoreError &&
          /the name node answered \{"boolean": false\}: the source does not exist/.test(e.message),
      );
      assert.equal(await c.createExclusive('/f', 'x'), true);
      create = { status: 200, body: '' };
      assert.equal(await c.createExclusive('/f', 'x'), true);
      create = { status: 200, body: '<html>proxy</html>' };
      await assert.rejects(
        c.createExclusive('/f', 'x'),
        (e: unknown) =>
          e instanceof StoreError &&
          /the data node's answer \(HTTP 200\) is not the WebHDFS answer to create: "<html>proxy<\/html>"/.test(
            e.message,
          ),
      );
    } finally {
      await close();
    }
  });

  // Keeps protocol.md §5.6: a driver whose lease may have lapsed sends no request: the fence is asked
  // before every try of a change, a temp's rename included; none goes after it throws, and one still
  // unanswered when it trips is cut off.
  test('the store fence is asked before every try of a change; when it trips, requests in flight are cut', async () => {
    const seen: string[] = [];
    const held: ServerResponse[] = [];
    const busy = await standIn((req, res) => {
      const op = new URL(req.url!, 'http://x').searchParams.get('op') ?? '';
      seen.push(op);
      if (op === 'DELETE') return void held.push(res); // never answered
      res
        .writeHead(503, { 'content-type': 'application/json' })
        .end('{"RemoteException":{"exception":"RetriableException","message":"busy"}}');
    }, 3);
    const fenced = (e: unknown) => e instanceof StoreError && e.message === 'fenced';
    try {
      const c = busy.store;
      let admitted = 0;
      const oneTry: StoreFence = {
        admit: () => {
          if (admitted++ > 0) throw new StoreError('io', 'renew lease', [], 'fenced');
          return undefined;
        },
      };
      await assert.rejects(
        withFence(oneTry, () => c.mkdirs('/g')),
        fenced,
      );
      assert.deepEqual(seen, ['MKDIRS'], 'the retries were never sent');
      // A delete the name node holds: the fence trips while it waits, and it ends with the fence's word.
      const trip = new AbortController();
      const pending = withFence({ admit: () => trip.signal }, () => c.delete('/g', true));
      while (held.length === 0) await sleep(5);
      trip.abort(new StoreError('io', 'renew lease', [], 'fenced'));
      await assert.rejects(pending, fenced);
    } finally {
      await busy.close();
    }
    // On the real server: the temp is written, then the fence stops its rename; the temp goes.
    cluster.active = 0;
    const c = client();
    let armed = false;
    const planFence: StoreFence = {
      admit: (p) => {
        if (armed && !isTempName(path.posix.basename(p))) throw new StoreError('io', 'renew lease', [], 'fenced');
        return undefined;
      },
    };
    await c.mkdirs('/guarded');
    armed = true;
    await assert.rejects(
      withFence(planFence, () => c.writeFile('/guarded/_commit.yaml', 'plan')),
      fenced,
    );
    assert.deepEqual(await c.list('/guarded'), [], 'no plan, no temp');
  });

  test('a rename that would clobber is an error naming source and destination, never a move inside', async () => {
    cluster.active = 0;
    const c = client();
    await c.mkdirs('/cl/dir');
    await c.createExclusive('/cl/a', 'a');
    await assert.rejects(
      c.rename('/cl/a', '/cl/dir'),
      (e: StoreError) => e.reason === 'exists' && /\/cl\/a -> hdfs:\/\/c\/cl\/dir/.test(e.message),
    );
    assert.equal(await c.stat('/cl/dir/a'), null);
    await assert.rejects(c.rename('/cl/none', '/cl/z'), (e: StoreError) => e.reason === 'not-found');
  });

  test('without rename2 (a gateway that lacks it) {"boolean": false} still becomes an error', async () => {
    const plain = await new WebHdfsCluster({ root: path.join(dir, 'plain'), noRename2: true }).start(1);
    try {
      const c = new WebHdfsStore({
        nameNodes: plain.nameNodeUrls,
        uriPrefix: 'hdfs://p',
        user: 'etl',
        retries: 0,
        retryBaseMs: 1,
      });
      await c.createExclusive('/a', 'a');
      await c.mkdirs('/d');
      await assert.rejects(c.rename('/a', '/d'), /destination exists/);
      await assert.rejects(c.rename('/missing', '/q'), /boolean": false\}: the source does not exist/);
      await c.rename('/a', '/b');
      assert.equal((await c.readFile('/b'))?.toString(), 'a');
    } finally {
      await plain.stop();
    }
  });

  test('paths with spaces, %, =, +, ?, # and unicode round-trip; user.name or delegation is sent', async () => {
    cluster.active = 0;
    const c = client();
    const p = '/enc/dt=2026 11%+?#/東京 ü.csv';
    await c.writeFile(p, 'bytes');
    assert.equal((await c.readFile(p))?.toString(), 'bytes');
    assert.deepEqual(
      (await c.list('/enc')).map((e) => e.name),
      ['dt=2026 11%+?#'],
    );
    const before = cluster.log.length;
    await client({ delegation: 'TOKEN123' }).stat(p);
    assert.deepEqual(
      cluster.log.slice(before).map((l) => [l.user, l.delegation]),
      [[null, 'TOKEN123']],
    );
    assert.ok(cluster.log.slice(0, before).some((l) => l.user === 'etl'));
  });

  test('create-if-absent: exactly one of several concurrent creates wins', async () => {
    cluster.active = 0;
    const c = client();
    const wins = await Promise.all(
      Array.from({ length: 8 }, (_, i) => c.createExclusive('/race/claim.yaml', `attempt ${i}`)),
    );
    assert.equal(wins.filter(Boolean).length, 1);
    assert.equal(await c.delete('/race/none', true), false, 'delete of a missing path is false, not an error');
  });
});
