/**
 * What the etcd store's multi-holder layout (lock/store/etcd/holders.ts) promises beyond the
 * conformance suite (holders-suite.ts): a mutex record is written as before (no anchor, no grant
 * key); the key's anchor goes with its last grant; a wait on a full semaphore wakes when any one
 * grant ends, by release or by its session's lapse, on both wait shapes; many attempts racing for
 * one key's room through two instances are all admitted (a round lost to another grant is not
 * charged to an attempt's budget of decisions).
 */
import { Etcd3 } from 'etcd3';
import { describe, expect, it } from 'vitest';
import type { WaitShape } from '../../lock/store/etcd/etcd-store.js';
import type { TryAcquireResult } from '../../lock/store/spi.js';
import { etcdKvRequests, etcdStores, namespaceOf, openSession } from './helpers.js';

const LONG = 60_000;

function granted(result: TryAcquireResult) {
  if (result.kind !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(result)}`);
  return result.grant;
}

describe('multi-holder keys on etcd', () => {
  const fixture = etcdStores();

  /** Every key the store keeps for lock `key` (its l/ record and the grant keys after it), as raw etcd sees them. */
  async function lockKeys(root: string, key: string): Promise<Array<{ name: string; value: string }>> {
    const client = new Etcd3({ hosts: fixture.etcd.endpoints });
    try {
      const start = Buffer.from(`${root}l/${key}`);
      const { kvs } = await client.kv.range({ key: start, range_end: Buffer.concat([start, Buffer.from([1])]) });
      return kvs.map((kv) => ({ name: kv.key.subarray(start.length).toString('latin1'), value: kv.value.toString('utf8') }));
    } finally {
      client.close();
    }
  }

  it('keeps a mutex record as before, and drops a semaphore key\'s anchor with its last grant', async () => {
    const store = await fixture.store();
    const [a, b] = await Promise.all([openSession(store), openSession(store)]);
    const mutex = granted(await store.tryAcquire({ key: 'plain', session: a.credential, ttlMillis: LONG }));
    const plain = await lockKeys(store.keyRoot, 'plain');
    expect(plain.map((kv) => kv.name)).toEqual(['']);
    expect(JSON.parse(plain[0]!.value.replace(/^\{"slot":"\d+",/, '{'))).not.toHaveProperty('mode');
    await store.release({ key: 'plain', session: a.credential, fencingToken: mutex.fencingToken });

    const ga = granted(await store.tryAcquire({ key: 'pool', session: a.credential, ttlMillis: LONG, limit: 2 }));
    const gb = granted(await store.tryAcquire({ key: 'pool', session: b.credential, ttlMillis: LONG, limit: 2 }));
    const layout = await lockKeys(store.keyRoot, 'pool');
    expect(layout).toHaveLength(3);
    expect(JSON.parse(layout[0]!.value)).toEqual({ anchor: 1, mode: 'exclusive', limit: 2 });
    expect((await store.release({ key: 'pool', session: a.credential, fencingToken: ga.fencingToken })).kind).toBe('released');
    expect(await lockKeys(store.keyRoot, 'pool')).toHaveLength(2);
    expect((await store.release({ key: 'pool', session: b.credential, fencingToken: gb.fencingToken })).kind).toBe('released');
    expect(await lockKeys(store.keyRoot, 'pool')).toEqual([]);

    // The key is a mutex again, written as one.
    const again = granted(await store.tryAcquire({ key: 'pool', session: a.credential, ttlMillis: LONG }));
    expect(BigInt(again.fencingToken)).toBeGreaterThan(BigInt(gb.fencingToken));
    expect((await lockKeys(store.keyRoot, 'pool')).map((kv) => kv.name)).toEqual(['']);
  });

  it('a mutex key costs the round trips it did: one txn to acquire a free key, one to release it', async () => {
    const store = await fixture.store();
    const a = await openSession(store);
    // Warm: the session is cached and the TTL bucket's lease granted (leases are not KV requests anyway).
    const warm = granted(await store.tryAcquire({ key: 'warm', session: a.credential, ttlMillis: LONG }));
    await store.release({ key: 'warm', session: a.credential, fencingToken: warm.fencingToken });
    const before = await etcdKvRequests(fixture.etcd.endpoints[0]!);
    for (let i = 0; i < 10; i += 1) {
      const grant = granted(await store.tryAcquire({ key: `cycle-${i}`, session: a.credential, ttlMillis: LONG }));
      expect((await store.release({ key: `cycle-${i}`, session: a.credential, fencingToken: grant.fencingToken })).kind).toBe('released');
    }
    expect((await etcdKvRequests(fixture.etcd.endpoints[0]!)) - before).toBe(20);
  });

  for (const shape of ['shared', 'per-call'] satisfies WaitShape[]) {
    it(`a wait on a full semaphore wakes when a grant other than the lowest is released (${shape} watch)`, async () => {
      const store = await fixture.store(shape);
      const [a, b, c] = await Promise.all([openSession(store), openSession(store), openSession(store)]);
      granted(await store.tryAcquire({ key: 'full', session: a.credential, ttlMillis: LONG, limit: 2 }));
      const gb = granted(await store.tryAcquire({ key: 'full', session: b.credential, ttlMillis: LONG, limit: 2 }));
      const held = await store.tryAcquire({ key: 'full', session: c.credential, ttlMillis: LONG, limit: 2 });
      if (held.kind !== 'held') throw new Error(`expected held, got ${held.kind}`);
      const waiting = store.waitForRelease({
        key: 'full',
        sessionId: c.credential.sessionId,
        observedRevision: held.observedRevision,
        timeoutMillis: LONG,
        signal: new AbortController().signal,
      });
      await store.release({ key: 'full', session: b.credential, fencingToken: gb.fencingToken });
      expect(await waiting).toEqual({ outcome: 'released' });
      granted(await store.tryAcquire({ key: 'full', session: c.credential, ttlMillis: LONG, limit: 2 }));
    });
  }

  it("a wait on a full semaphore wakes when a holder's session lapses, before any sweep", async () => {
    const store = await fixture.store();
    const [a, c] = await Promise.all([openSession(store), openSession(store)]);
    const lapsing = await openSession(store, 1000);
    granted(await store.tryAcquire({ key: 'lapse', session: a.credential, ttlMillis: LONG, limit: 2 }));
    granted(await store.tryAcquire({ key: 'lapse', session: lapsing.credential, ttlMillis: LONG, limit: 2 }));
    const held = await store.tryAcquire({ key: 'lapse', session: c.credential, ttlMillis: LONG, limit: 2 });
    if (held.kind !== 'held') throw new Error(`expected held, got ${held.kind}`);
    // The grant's own key outlives the session (it sits on a lease of its TTL): the session's end is what wakes the wait.
    const outcome = await store.waitForRelease({
      key: 'lapse',
      sessionId: c.credential.sessionId,
      observedRevision: held.observedRevision,
      timeoutMillis: LONG,
      signal: new AbortController().signal,
    });
    expect(outcome).toEqual({ outcome: 'released' });
    granted(await store.tryAcquire({ key: 'lapse', session: c.credential, ttlMillis: LONG, limit: 2 }));
  });

  it('forty attempts racing for a key with room for all, through two instances, are each admitted once', async () => {
    const store = await fixture.store();
    const peer = await fixture.store('shared', namespaceOf(store));
    const sessions = await Promise.all(Array.from({ length: 40 }, () => openSession(store)));
    for (const holding of [{ limit: 40 }, { mode: 'shared' as const }]) {
      const key = `room-${holding.mode ?? 'exclusive'}`;
      const results = await Promise.all(
        sessions.map((s, i) => (i % 2 === 0 ? store : peer).tryAcquire({ key, session: s.credential, ttlMillis: LONG, ...holding })),
      );
      const tokens = results.map((result) => granted(result).fencingToken);
      expect(new Set(tokens).size).toBe(40);
      expect((await store.readLock(key))?.holders).toHaveLength(40);
    }
  });
});
