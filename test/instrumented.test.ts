// The fault wrapper itself: operations counted, faults on chosen operations and paths a chosen
// number of times, crashes at a named mutation. On the in-memory store (no process boundary).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InjectedFault, StoreError } from '../src/errors.js';
import { crashAt, failAt, InstrumentedStore, unreliable } from '../src/store/instrumented.js';
import { MemoryStore } from '../src/store/memory.js';

test('unreliable: a matching call fails `times` times, reads as well as writes; other calls go through', async () => {
  const faults = unreliable(
    { op: 'readFile', path: /\/flaky$/, times: 2 },
    {
      op: ['writeFile', 'rename'],
      path: (p) => p.startsWith('/locked/'),
      error: (op, p) => new StoreError('refused', op, [p], 'permission denied'),
    },
  );
  const store = new InstrumentedStore(new MemoryStore(), faults);
  await store.writeFile('/d/flaky', 'x');
  await assert.rejects(store.readFile('/d/flaky'), InjectedFault);
  await assert.rejects(store.readFile('/d/flaky'), InjectedFault);
  assert.equal((await store.readFile('/d/flaky'))!.toString(), 'x', 'the third read goes through');
  await assert.rejects(
    store.writeFile('/locked/a', 'a'),
    (e: unknown) => e instanceof StoreError && e.reason === 'refused',
  );
  await assert.rejects(store.writeFile('/locked/b', 'b'), StoreError, 'no times: every matching call fails');
  assert.equal(await store.stat('/locked/a'), null, 'a failed call changes nothing');
  await store.writeFile('/open/a', 'a');
  assert.equal(faults.failures(), 4);
  assert.deepEqual(store.metrics(), { writeFile: 4, readFile: 3, stat: 1 });
});

test('crashAt: the named mutation and every one after it fail; with after, the named one happens first', async () => {
  const inner = new MemoryStore();
  const at = crashAt({ op: 'rename', path: /\/b$/ });
  const s1 = new InstrumentedStore(inner, at);
  await s1.writeFile('/x/a', 'a');
  await s1.writeFile('/x/b', 'b');
  assert.equal(at.tripped(), false);
  await assert.rejects(s1.rename('/x/b', '/x/c'), InjectedFault);
  await assert.rejects(s1.writeFile('/x/d', 'd'), InjectedFault, 'dead after the crash');
  assert.equal(at.tripped(), true);
  assert.deepEqual(
    (await inner.list('/x')).map((e) => e.name),
    ['a', 'b'],
  );

  const after = crashAt({ path: /\/a$/ }, { after: true });
  const s2 = new InstrumentedStore(inner, after);
  await s2.delete('/x/a', false);
  await assert.rejects(s2.delete('/x/b', false), InjectedFault);
  assert.deepEqual(
    (await inner.list('/x')).map((e) => e.name),
    ['b'],
  );
});

test('failAt: counts mutations only, and says whether it fired', async () => {
  const hook = failAt(2);
  const store = new InstrumentedStore(new MemoryStore(), hook);
  await store.writeFile('/a', 'a');
  await store.readFile('/a');
  assert.equal(hook.tripped(), false);
  await assert.rejects(store.writeFile('/b', 'b'), InjectedFault);
  assert.equal(hook.tripped(), true);
});
