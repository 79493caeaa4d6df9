/**
 * Concurrent releases share one etcd request, and each is still its own
 * compare-and-delete: a wrong token in the batch fails alone.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { EtcdStore } from '../../lock/store/etcd/etcd-store.js';
import { startEtcd, type EtcdNode } from '../support/etcd.js';
import { etcdKvRequests, openSession, openStore } from './helpers.js';

let etcd: EtcdNode;
let store: EtcdStore;
beforeAll(async () => {
  etcd = await startEtcd();
  store = await openStore(etcd.endpoints);
});
afterAll(async () => {
  await store?.close();
  await etcd?.stop();
});

test('32 concurrent releases go out in one request; a stale token in the batch fails alone', async () => {
  const session = await openSession(store, 60_000);
  const keys = Array.from({ length: 32 }, (_, i) => `batch/${i}`);
  const grants = await Promise.all(
    keys.map(async (key) => {
      const result = await store.tryAcquire({ key, session: session.credential, ttlMillis: 30_000 });
      if (result.kind !== 'granted') throw new Error(`not granted: ${key}`);
      return result.grant;
    }),
  );
  const stale = grants[7]!;
  const before = await etcdKvRequests(etcd.endpoints[0]!);
  const results = await Promise.all(
    grants.map((grant) =>
      store.release({ key: grant.key, session: session.credential, fencingToken: grant === stale ? String(BigInt(grant.fencingToken) - 1n) : grant.fencingToken }),
    ),
  );
  const requests = (await etcdKvRequests(etcd.endpoints[0]!)) - before;

  results.forEach((released, index) => {
    if (index === 7) expect(released).toEqual({ kind: 'lost' });
    else expect(released).toMatchObject({ kind: 'released', lock: { key: grants[index]!.key, fencingToken: grants[index]!.fencingToken } });
  });
  expect(requests).toBeLessThanOrEqual(2); // one batch (and at most one more if the turn split)
  expect((await store.readLock(stale.key))?.fencingToken).toBe(stale.fencingToken);
  for (const [index, key] of keys.entries()) if (index !== 7) expect(await store.readLock(key)).toBeNull();
});

test('two releases of one key in the same turn are sent in separate requests and exactly one wins', async () => {
  const session = await openSession(store, 60_000);
  const result = await store.tryAcquire({ key: 'twice', session: session.credential, ttlMillis: 30_000 });
  if (result.kind !== 'granted') throw new Error('not granted');
  const token = result.grant.fencingToken;
  const [first, second] = await Promise.all([
    store.release({ key: 'twice', session: session.credential, fencingToken: token }),
    store.release({ key: 'twice', session: session.credential, fencingToken: token }),
  ]);
  expect([first, second].map((r) => r.kind).sort()).toEqual(['lost', 'released']);
});
