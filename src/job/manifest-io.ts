// Reading a manifest file from a store: decode and check it, and on stores that show a created
// file before its bytes arrive (WebHDFS), read a short or empty one again before calling it damaged.
// Keeps protocol.md §5.10 (a manifest checks itself) on stores that show files early (§7.1 R2).

import { setTimeout as sleep } from 'node:timers/promises';
import { CorruptManifestError } from '../errors.js';
import { readsMayCatchACreate } from '../store/operations.js';
import { isTempName } from '../store/temp-names.js';
import type { Store } from '../store/types.js';

const RETRIES = 8;

/**
 * Reads and decodes one manifest; null when the file does not exist. `onEmpty` answers for a
 * file with no bytes yet where the caller judges that itself (a lease: empty past its TTL is dead).
 */
export async function readManifestFile<T>(
  store: Store,
  path: string,
  decode: (content: Buffer, file: string) => T,
  opts: { onEmpty?: () => Promise<T> } = {},
): Promise<T | null> {
  const file = store.toUri(path);
  for (let i = 0; ; i++) {
    // Decoded from its bytes: a million-op plan (100 MB) never stands as a string beside them.
    const data = await readManifestBytes(store, path);
    if (data === null) return null;
    if (data.length === 0 && opts.onEmpty) return opts.onEmpty();
    const empty = data.length === 0;
    try {
      return decode(data, file);
    } catch (e) {
      if (!(e instanceof CorruptManifestError) || !readsMayCatchACreate(store)) throw e;
      if (i >= RETRIES) throw empty ? emptyCreate(file) : e;
    }
    await sleep(25 * Math.min(i + 1, 8));
  }
}

/**
 * A manifest's bytes, null when it does not exist; a directory in its place is damage like any other, not the store's
 * raw error.
 */
export async function readManifestBytes(store: Store, path: string): Promise<Buffer | null> {
  return store.readFile(path).catch(async (e: unknown) => {
    if ((await store.stat(path).catch(() => null))?.kind === 'dir') throw notAFile(store, path);
    throw e;
  });
}

/**
 * The manifests in a directory, by file name (`*.yaml`): a file with a temp name is a write in
 * progress, or a killed one's debris (an empty file, locally), never a manifest (protocol.md §5.12).
 */
export async function manifestNames(store: Store, dir: string): Promise<string[]> {
  const named = (await store.list(dir)).filter((e) => e.name.endsWith('.yaml') && !isTempName(e.name));
  const odd = named.find((e) => e.kind !== 'file');
  if (odd) throw notAFile(store, odd.path);
  return named.map((e) => e.name);
}

const notAFile = (store: Store, path: string) => new CorruptManifestError(store.toUri(path), { reason: 'directory' });

/** Still empty after the re-reads: a create whose process was stopped before its bytes went out. */
function emptyCreate(file: string): CorruptManifestError {
  return new CorruptManifestError(file, { reason: 'stopped-before-written' });
}
