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
  const now = Date.now();
  const session = await openSession(store, now, 60_000);
  const keys = Array.from({ length: 32 }, (_, i) => `batch/${i}`);
  const grants = await Promise.all(
    keys.map(async (key) => {
      const result = await store.tryAcquire({ key, sessionId: session.sessionId, ttlMillis: 30_000, now });
      if (result.kind !== 'granted') throw new Error(`not granted: ${key}`);
      return result.grant;
    }),
  );
  const stale = grants[7]!;
  const before = await etcdKvRequests(etcd.endpoints[0]!);
  const results = await Promise.all(
    grants.map((grant) =>
      store.release({ key: grant.key, fencingToken: grant === stale ? String(BigInt(grant.fencingToken) - 1n) : grant.fencingToken, now }),
    ),
  );
  const requests = (await etcdKvRequests(etcd.endpoints[0]!)) - before;

  results.forEach((released, index) => {
    if (index === 7) expect(released).toBeNull();
    else expect(released).toMatchObject({ key: grants[index]!.key, fencingToken: grants[index]!.fencingToken });
  });
  expect(requests).toBeLessThanOrEqual(2); // one batch (and at most one more if the turn split)
  expect((await store.readLock(stale.key, Date.now()))?.fencingToken).toBe(stale.fencingToken);
  for (const [index, key] of keys.entries()) if (index !== 7) expect(await store.readLock(key, Date.now())).toBeNull();
});

test('two releases of one key in the same turn are sent in separate requests and exactly one wins', async () => {
  const now = Date.now();
  const session = await openSession(store, now, 60_000);
  const result = await store.tryAcquire({ key: 'twice', sessionId: session.sessionId, ttlMillis: 30_000, now });
  if (result.kind !== 'granted') throw new Error('not granted');
  const token = result.grant.fencingToken;
  const [first, second] = await Promise.all([
    store.release({ key: 'twice', fencingToken: token, now }),
    store.release({ key: 'twice', fencingToken: token, now }),
  ]);
  expect([first, second].filter((r) => r !== null)).toHaveLength(1);
});
