/**
 * Group commit for acquires on etcd: the try-acquires of one turn go out as one
 * Txn RPC of nested txns, and each request still gets its own answer — a
 * contended key, a dead session and a key the session already holds each fail
 * (or answer) alone — while the grants carry distinct tokens (revision × 1000 +
 * slot) increasing in request order and above every earlier token. A token is
 * the grant's exact name: a release presenting a sibling grant's token (same
 * revision, other slot) is refused.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { EtcdStore } from '../../lock/store/etcd/etcd-store.js';
import type { TryAcquireResult } from '../../lock/store/spi.js';
import { startEtcd, type EtcdNode } from '../support/etcd.js';
import { namespaceOf, openSession, openStore } from './helpers.js';

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

/** Unary KV calls etcd has served, by method, from its own counters: what the store really sent. */
async function kvCalls(): Promise<{ Txn: number; Range: number }> {
  const text = await (await fetch(`${etcd.endpoints[0]}/metrics`)).text();
  const calls = { Txn: 0, Range: 0 };
  for (const line of text.split('\n')) {
    if (!line.startsWith('grpc_server_started_total{') || !line.includes('grpc_service="etcdserverpb.KV"')) continue;
    const method = /grpc_method="([^"]+)"/.exec(line)?.[1];
    if (method === 'Txn' || method === 'Range') calls[method] += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return calls;
}

function token(result: TryAcquireResult): bigint {
  if (result.kind !== 'granted') throw new Error(`expected a grant, got ${result.kind}`);
  return BigInt(result.grant.fencingToken);
}

test('20 acquires in one turn: one Txn; a contended key, a dead session and an own key each answer alone; tokens increase in request order', async () => {
  const alice = await openSession(store, 60_000, 'alice');
  const bob = await openSession(store, 60_000, 'bob');
  const dead = await openSession(store, 60_000, 'dead');
  const held = await store.tryAcquire({ key: 'b1/held', session: bob.credential, ttlMillis: 30_000 });
  const own = await store.tryAcquire({ key: 'b1/own', session: alice.credential, ttlMillis: 30_000 });
  // Bob's grants below use a 5 s TTL: its pooled grant lease exists before the turn, or granting it would
  // hold those acquires back a round trip (into the next batch).
  const warm = await store.tryAcquire({ key: 'b1/warm', session: bob.credential, ttlMillis: 5_000 });
  const before = [held, own, warm].map(token).reduce((a, b) => (a > b ? a : b));
  // Another server instance ends `dead`: this store still has it cached, so its acquire reaches the batch
  // and only the txn's compare on the session's incarnation can refuse it.
  const other = await openStore(etcd.endpoints, 'shared', namespaceOf(store));
  try {
    expect((await other.closeSession(dead.credential)).kind).toBe('closed');
  } finally {
    await other.close();
  }

  const callsBefore = await kvCalls();
  const results = await Promise.all([
    ...Array.from({ length: 8 }, (_, i) => store.tryAcquire({ key: `b1/free-${i}`, session: alice.credential, ttlMillis: 30_000 })),
    store.tryAcquire({ key: 'b1/held', session: alice.credential, ttlMillis: 30_000 }), // 8: contended
    store.tryAcquire({ key: 'b1/dead', session: dead.credential, ttlMillis: 30_000 }), // 9: dead session
    store.tryAcquire({ key: 'b1/own', session: alice.credential, ttlMillis: 30_000 }), // 10: already its own
    ...Array.from({ length: 9 }, (_, i) => store.tryAcquire({ key: `b1/free-${8 + i}`, session: bob.credential, ttlMillis: 5_000 })),
  ]);
  const calls = await kvCalls();
  expect(calls.Txn - callsBefore.Txn).toBe(1);
  // The one read after the batch: whether the contended key's holder session is still live.
  expect(calls.Range - callsBefore.Range).toBe(1);

  expect(results[8]).toMatchObject({ kind: 'held', holder: { key: 'b1/held', sessionId: bob.sessionId, owner: 'bob', fencingToken: token(held).toString() } });
  expect(results[9]).toEqual({ kind: 'session_not_found' });
  expect(results[10]).toMatchObject({ kind: 'granted', existing: true, grant: { key: 'b1/own', fencingToken: token(own).toString() } });

  const grants = [...results.slice(0, 8), ...results.slice(11)];
  const tokens = grants.map(token);
  expect(tokens[0]! > before).toBe(true);
  for (let i = 1; i < tokens.length; i += 1) expect(tokens[i]! > tokens[i - 1]!, `token ${i}`).toBe(true);
  // One commit: every grant carries the txn's revision, told apart by its slot.
  expect(new Set(tokens.map((t) => t / 1000n)).size).toBe(1);
  grants.forEach((result, i) => {
    expect(result).toMatchObject({ kind: 'granted', existing: false, owner: i < 8 ? 'alice' : 'bob', grant: { key: `b1/free-${i}`, ttlMillis: i < 8 ? 30_000 : 5_000 } });
  });

  // Nothing was written for the refused requests; the contended key kept its holder; reads give the same tokens.
  expect(await store.readLock('b1/dead')).toBeNull();
  expect(await store.readLock('b1/held')).toMatchObject({ sessionId: bob.sessionId, fencingToken: token(held).toString() });
  for (const [i, t] of tokens.entries()) expect((await store.readLock(`b1/free-${i}`))?.fencingToken).toBe(t.toString());
});

test("a release naming a sibling grant's token (same revision, other slot) is refused; the grant's own token releases it", async () => {
  const session = await openSession(store);
  const [first, second] = await Promise.all([
    store.tryAcquire({ key: 'b2/first', session: session.credential, ttlMillis: 30_000 }),
    store.tryAcquire({ key: 'b2/second', session: session.credential, ttlMillis: 30_000 }),
  ]);
  expect(token(first!) / 1000n).toBe(token(second!) / 1000n);
  expect(token(second!)).toBe(token(first!) + 1n);

  expect(await store.release({ key: 'b2/second', session: session.credential, fencingToken: token(first!).toString() })).toEqual({ kind: 'lost' });
  expect(await store.release({ key: 'b2/second', session: session.credential, fencingToken: (token(second!) + 1n).toString() })).toEqual({ kind: 'lost' });
  expect((await store.readLock('b2/second'))?.fencingToken).toBe(token(second!).toString());
  expect(await store.release({ key: 'b2/second', session: session.credential, fencingToken: token(second!).toString() })).toMatchObject({
    kind: 'released',
    lock: { key: 'b2/second', fencingToken: token(second!).toString() },
  });
  expect(await store.release({ key: 'b2/first', session: session.credential, fencingToken: token(first!).toString() })).toMatchObject({ kind: 'released' });
});

test('a key asked for twice in one turn goes out in two txns, in request order: the second finds the first holding it', async () => {
  const first = await openSession(store, 60_000, 'first');
  const second = await openSession(store, 60_000, 'second');
  const callsBefore = await kvCalls();
  const [a, b] = await Promise.all([
    store.tryAcquire({ key: 'b3/twice', session: first.credential, ttlMillis: 30_000 }),
    store.tryAcquire({ key: 'b3/twice', session: second.credential, ttlMillis: 30_000 }),
  ]);
  expect((await kvCalls()).Txn - callsBefore.Txn).toBe(2);
  expect(a).toMatchObject({ kind: 'granted', existing: false });
  expect(b).toMatchObject({ kind: 'held', holder: { sessionId: first.sessionId, fencingToken: token(a!).toString() } });
});

test('renew keeps the token of a batched grant, and the renewed grant still releases by it', async () => {
  const session = await openSession(store);
  const grants = await Promise.all(
    [0, 1, 2].map((i) => store.tryAcquire({ key: `b4/${i}`, session: session.credential, ttlMillis: 30_000 })),
  );
  const last = grants[2]!;
  const renewed = await store.renew({ key: 'b4/2', session: session.credential, fencingToken: token(last).toString(), ttlMillis: 10_000 });
  expect(renewed).toMatchObject({ kind: 'renewed', lock: { fencingToken: token(last).toString(), ttlMillis: 10_000 } });
  expect(await store.renew({ key: 'b4/2', session: session.credential, fencingToken: token(grants[1]!).toString() })).toEqual({ kind: 'lost' });
  expect(await store.release({ key: 'b4/2', session: session.credential, fencingToken: token(last).toString() })).toMatchObject({ kind: 'released' });
});

test('150 acquires in one turn fit etcd limits: two txns (a full batch of 100, then 50), every token distinct and increasing in request order', async () => {
  const session = await openSession(store);
  await store.tryAcquire({ key: 'b5/warm', session: session.credential, ttlMillis: 30_000 }); // the TTL bucket's lease
  const callsBefore = await kvCalls();
  const results = await Promise.all(
    Array.from({ length: 150 }, (_, i) => store.tryAcquire({ key: `b5/${i}`, session: session.credential, ttlMillis: 30_000 })),
  );
  expect((await kvCalls()).Txn - callsBefore.Txn).toBe(2);
  const tokens = results.map(token);
  for (let i = 1; i < tokens.length; i += 1) expect(tokens[i]! > tokens[i - 1]!, `token ${i}`).toBe(true);
  expect(new Set(tokens.map((t) => t / 1000n)).size).toBe(2);
  const released = await Promise.all(
    tokens.map((t, i) => store.release({ key: `b5/${i}`, session: session.credential, fencingToken: t.toString() })),
  );
  expect(released.every((r) => r.kind === 'released')).toBe(true);
});
