// The stores every suite runs on: one parametrised list, so a store joins every suite at once.

import { lstat, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { after, before } from 'node:test';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../src/store/local.js';
import { MemoryStore, type MemoryStoreKind } from '../src/store/memory.js';
import type { Store } from '../src/store/types.js';

export interface StoreSandbox {
  /** A handle or printed URI → the path inside the store. */
  pathOf(uri: string): string;
  /** The store, unwrapped (for checking outcomes, not for the code under test). */
  readonly store: Store;
  /** A fresh, empty directory in the store (a store path). */
  readonly base: string;
  /** The URI a user would type for a store path. */
  uri(p: string): string;
  /** Stores with multipart uploads: begin one at a path and leave it incomplete. */
  startUpload?(p: string): Promise<void>;
  /**
   * Stores whose directories have times: sets the modification time of everything under a path, itself included (S3
   * cannot).
   */
  backdate?(p: string, mtimeMs: number): Promise<void>;
  /** Environment for the CLI (config, credentials). */
  readonly env: Record<string, string>;
  /** How many entries one listing request returns, where listings are paged. */
  readonly listPage?: number;
  close(): Promise<void>;
}

export interface StoreFixture {
  readonly name: string;
  /** Lives in this process only: no CLI child can open it (in-process suites only). */
  readonly inProcess?: boolean;
  sandbox(): Promise<StoreSandbox>;
}

/** The in-memory store, as a filesystem or as an object store: fast, for step-level suites. */
function memoryFixture(kind: MemoryStoreKind): StoreFixture {
  return {
    name: kind === 'filesystem' ? 'memory' : 'memory-object',
    inProcess: true,
    async sandbox() {
      const store = new MemoryStore(kind);
      const base = '/sandbox';
      await store.mkdirs(base);
      const uri = (p: string) => store.toUri(p);
      return {
        store,
        base,
        uri,
        pathOf: (u) => u.replace(/^memory:\/\//, ''),
        env: {},
        listPage: undefined,
        close: async () => {},
      };
    },
  };
}
export const memoryFixtures: readonly StoreFixture[] = [memoryFixture('filesystem'), memoryFixture('object')];

export const localFixture: StoreFixture = {
  name: 'local',
  async sandbox() {
    const base = await mkdtemp(path.join(os.tmpdir(), 'stagecommit-test-'));
    const store = new LocalStore();
    return {
      store,
      base,
      uri: (p) => p,
      pathOf: (u) => u,
      backdate: (p, ms) => backdateTree(p, ms),
      env: {},
      close: () => rm(base, { recursive: true, force: true }),
    };
  },
};

/** Sets the times of a local tree, deepest first (a change below would touch the directory again). */
async function backdateTree(p: string, mtimeMs: number): Promise<void> {
  const st = await lstat(p);
  if (st.isDirectory()) for (const n of await readdir(p)) await backdateTree(path.join(p, n), mtimeMs);
  await utimes(p, mtimeMs / 1000, mtimeMs / 1000);
}

/** S3 on the Ceph RGW that `npm test` starts (scripts/rgw.sh): a fresh bucket per sandbox. */
export const s3Fixture: StoreFixture = {
  name: 's3',
  async sandbox() {
    const endpoint = process.env.STAGECOMMIT_TEST_S3_ENDPOINT;
    if (!endpoint)
      throw new Error('STAGECOMMIT_TEST_S3_ENDPOINT is not set: run the tests with npm test, which starts Ceph RGW');
    const { S3Store } = await import('../src/store/s3/s3-store.js');
    const { s3Settings } = await import('../src/store/s3/settings.js');
    const { CreateBucketCommand, CreateMultipartUploadCommand } = await import('@aws-sdk/client-s3');
    // Files of 4 bytes and more are staged as pending uploads, so every suite covers both ways.
    const settings = await s3Settings(
      {
        multipartCopyThresholdBytes: 6 * 1024 * 1024,
        multipartCopyPartBytes: 5 * 1024 * 1024,
        pendingUploadMinBytes: 4,
      },
      process.env,
    );
    const store = new S3Store(settings);
    const bucket = `sc-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    await store.client.send(new CreateBucketCommand({ Bucket: bucket }));
    const configFile = path.join(os.tmpdir(), `${bucket}.yaml`);
    await writeFile(
      configFile,
      's3:\n  multipartCopyThresholdBytes: 6291456\n  multipartCopyPartBytes: 5242880\n  pendingUploadMinBytes: 4\n',
    );
    return {
      store,
      base: `/${bucket}/sandbox`,
      listPage: 1000,
      uri: (p) => `s3:/${p}`,
      pathOf: (u) => u.replace(/^s3:\//, ''),
      startUpload: async (p) => {
        await store.client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: p.slice(bucket.length + 2) }));
      },
      env: { STAGECOMMIT_CONFIG: configFile },
      close: async () => {
        await store.delete(`/${bucket}`, true);
        await rm(configFile, { force: true });
      },
    };
  },
};

/**
 * HDFS over WebHDFS on the project's own server (testing/webhdfs-server.ts): an HA pair whose
 * first name node is standby, so every client fails over; listings paged by 7.
 */
/**
 * HDFS on the project's WebHDFS server; with `kerberos`, a secured one: SPNEGO verified by GSSAPI
 * against the KDC scripts/kdc.sh runs (the tests' ticket cache is tester's, after kinit).
 */
function hdfsFixtureOf(name: string, kerberos: boolean): StoreFixture {
  return {
    name,
    async sandbox() {
      const { WebHdfsCluster } = await import('./webhdfs-server.js');
      const { WebHdfsStore } = await import('../src/store/webhdfs/webhdfs-store.js');
      const { Spnego } = await import('../src/store/webhdfs/spnego.js');
      const dir = await mkdtemp(path.join(os.tmpdir(), 'stagecommit-hdfs-'));
      const cluster = await new WebHdfsCluster({ root: dir, listLimit: 7, spnego: kerberos }).start(2);
      cluster.active = 1;
      const configFile = path.join(dir, '..', `${path.basename(dir)}.yaml`);
      await writeFile(
        configFile,
        `webhdfs:\n  ${kerberos ? 'kerberos: true' : 'user: tester'}\n  retryBaseMs: 20\n  nameservices:\n    testcluster: [${cluster.nameNodeUrls.join(', ')}]\n`,
      );
      const store = new WebHdfsStore({
        nameNodes: cluster.nameNodeUrls,
        uriPrefix: 'hdfs://testcluster',
        ...(kerberos ? { spnego: new Spnego({}) } : { user: 'tester' }),
        retries: 4,
        retryBaseMs: 20,
      });
      await store.mkdirs('/sandbox');
      return {
        store,
        base: '/sandbox',
        listPage: 7,
        uri: (p) => `hdfs://testcluster${p}`,
        pathOf: (u) => u.replace(/^hdfs:\/\/testcluster/, ''),
        // The test name node keeps its namespace in a local directory, and reports its times.
        backdate: (p, ms) => backdateTree(path.join(dir, path.posix.normalize('/' + p)), ms),
        env: { STAGECOMMIT_CONFIG: configFile },
        close: async () => {
          await cluster.stop();
          await rm(dir, { recursive: true, force: true });
          await rm(configFile, { force: true });
        },
      };
    },
  };
}

export const hdfsFixture = hdfsFixtureOf('hdfs', false);
/** Run when scripts/test.mjs started the KDC (STAGECOMMIT_TEST_STORES names hdfs-kerberos). */
export const hdfsKerberosFixture = hdfsFixtureOf('hdfs-kerberos', true);

/**
 * The stores STAGECOMMIT_TEST_STORES names (default: local). Suites that run the steps in this
 * process (`inProcess`) also get the in-memory stores, named or not: they cost milliseconds and
 * need nothing. Only in-process suites can run on them.
 *
 * `hdfs-kerberos` is the HDFS store over another transport (every request SPNEGO-signed), not
 * another store: the suites of how requests are made (`transport`: the store contract, the
 * library, the JSON documents, processes killed mid-request) run on it, and the protocol suites,
 * whose store calls are the same as on `hdfs`, do not run a second time.
 */
export function storeFixtures(opts: { inProcess?: boolean; transport?: boolean } = {}): StoreFixture[] {
  const only = (process.env.STAGECOMMIT_TEST_STORES ?? 'local').split(',');
  const real = [localFixture, s3Fixture, hdfsFixture, hdfsKerberosFixture];
  const all = [...real, ...memoryFixtures];
  const unknown = only.filter((n) => !all.some((f) => f.name === n));
  if (unknown.length) throw new Error(`STAGECOMMIT_TEST_STORES names unknown stores: ${unknown.join(', ')}`);
  const named = real.filter((f) => only.includes(f.name) && (opts.transport || f !== hdfsKerberosFixture));
  return opts.inProcess ? [...memoryFixtures, ...named] : named;
}

/**
 * One sandbox for the enclosing describe block: opened before its tests, closed after them.
 * `set` receives it; the returned function names a fresh directory in it for each call.
 */
export function useSandbox(fx: StoreFixture, set: (sb: StoreSandbox) => void, prefix = 't'): () => string {
  let sb: StoreSandbox | undefined;
  let n = 0;
  before(async () => {
    sb = await fx.sandbox();
    set(sb);
  });
  after(async () => {
    await sb?.close();
  });
  return () => path.posix.join(sb!.base, `${prefix}${++n}`);
}
