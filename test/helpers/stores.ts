// The stores every suite runs on: one parametrised list, so a store joins every suite at once.

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { LocalStore } from '../../src/store/local.js';
import type { Store } from '../../src/store/types.js';

export interface StoreSandbox {
  /** The store, unwrapped (for checking outcomes, not for the code under test). */
  readonly store: Store;
  /** A fresh, empty directory in the store (a store path). */
  readonly base: string;
  /** The URI a user would type for a store path. */
  uri(p: string): string;
  /** Environment for the CLI (config, credentials). */
  readonly env: Record<string, string>;
  close(): Promise<void>;
}

export interface StoreFixture {
  readonly name: string;
  sandbox(): Promise<StoreSandbox>;
}

export const localFixture: StoreFixture = {
  name: 'local',
  async sandbox() {
    const base = await mkdtemp(path.join(os.tmpdir(), 'stagecommit-test-'));
    const store = new LocalStore();
    return { store, base, uri: (p) => p, env: {}, close: () => rm(base, { recursive: true, force: true }) };
  },
};

export function storeFixtures(): StoreFixture[] {
  const only = process.env.STAGECOMMIT_TEST_STORES?.split(',');
  const all = [localFixture];
  return only ? all.filter((f) => only.includes(f.name)) : all;
}
