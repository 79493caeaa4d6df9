/**
 * Group commit for acquires on the SQL store: the try-acquires of one turn go out
 * as one call, and each request still gets its own answer — a contended key, a
 * dead session and a wrong token inside the batch each fail alone, and the
 * grants carry fresh tokens in request order.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import type { TryAcquireResult } from '../../lock/store/spi.js';
import { openCountingStore } from '../support/counting-database.js';
import { openTestSession } from '../support/store-sessions.js';

function grantToken(result: TryAcquireResult): bigint {
  if (result.kind !== 'granted') throw new Error(`expected a grant, got ${result.kind}`);
  return BigInt(result.grant.fencingToken);
}

describe.each(['postgres', 'embedded'] as const)('acquire batching on %s', (backend) => {
  let store: SqlLockStore;
  let statements: () => number;
  beforeAll(async () => {
    ({ store, statements } = await openCountingStore(backend));
  });
  afterAll(async () => {
    await store?.close();
  });

  test('20 acquires in one turn: one statement; a contended key, a dead session and a wrong token each fail alone', async () => {
    const alice = await openTestSession(store, { owner: 'alice' });
    const bob = await openTestSession(store, { owner: 'bob' });
    const dead = await openTestSession(store, { owner: 'dead' });
    const held = await store.tryAcquire({ key: 'b1/held', session: bob.credential, ttlMillis: 30_000 });
    const own = await store.tryAcquire({ key: 'b1/own', session: alice.credential, ttlMillis: 30_000 });
    const before = grantToken(held) > grantToken(own) ? grantToken(held) : grantToken(own);
    expect((await store.closeSession(dead.credential)).kind).toBe('closed');

    const statementsBefore = statements();
    const results = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => store.tryAcquire({ key: `b1/free-${i}`, session: alice.credential, ttlMillis: 30_000 })),
      store.tryAcquire({ key: 'b1/held', session: alice.credential, ttlMillis: 30_000 }), // 8: contended
      store.tryAcquire({ key: 'b1/dead', session: dead.credential, ttlMillis: 30_000 }), // 9: dead session
      store.tryAcquire({ key: 'b1/impostor', session: alice.impostor, ttlMillis: 30_000 }), // 10: wrong token
      store.tryAcquire({ key: 'b1/own', session: alice.credential, ttlMillis: 30_000 }), // 11: already its own
      ...Array.from({ length: 8 }, (_, i) => store.tryAcquire({ key: `b1/free-${8 + i}`, session: bob.credential, ttlMillis: 5_000 })),
    ]);
    expect(statements() - statementsBefore).toBe(1);

    expect(results[8]).toMatchObject({ kind: 'held', holder: { key: 'b1/held', sessionId: bob.record.sessionId, owner: 'bob', fencingToken: grantToken(held).toString() } });
    expect(results[9]).toEqual({ kind: 'session_not_found' });
    expect(results[10]).toEqual({ kind: 'unauthenticated' });
    expect(results[11]).toMatchObject({ kind: 'granted', existing: true, grant: { key: 'b1/own', fencingToken: grantToken(own).toString() } });

    // Grants: fresh tokens above every earlier grant, strictly increasing in request order.
    const grants = [...results.slice(0, 8), ...results.slice(12)];
    const tokens = grants.map(grantToken);
    expect(tokens[0]! > before).toBe(true);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]! > tokens[i - 1]!, `token ${i}`).toBe(true);
    grants.forEach((result, i) => {
      expect(result).toMatchObject({ kind: 'granted', existing: false, owner: i < 8 ? 'alice' : 'bob', grant: { key: `b1/free-${i}`, ttlMillis: i < 8 ? 30_000 : 5_000 } });
    });

    // Nothing was written for the refused requests; the contended key kept its holder.
    expect(await store.readLock('b1/dead')).toBeNull();
    expect(await store.readLock('b1/impostor')).toBeNull();
    expect(await store.readLock('b1/held')).toMatchObject({ sessionId: bob.record.sessionId, fencingToken: grantToken(held).toString() });
    for (const [i, result] of grants.entries()) {
      expect(await store.readLock(`b1/free-${i}`)).toMatchObject({ fencingToken: (result as { grant: { fencingToken: string } }).grant.fencingToken });
    }
  });

  test('a key asked for twice in one turn is decided twice, in request order: the second sees the first as holder', async () => {
    const first = await openTestSession(store, { owner: 'first' });
    const second = await openTestSession(store, { owner: 'second' });
    const statementsBefore = statements();
    const [a, b, c] = await Promise.all([
      store.tryAcquire({ key: 'b2/twice', session: first.credential, ttlMillis: 30_000 }),
      store.tryAcquire({ key: 'b2/twice', session: second.credential, ttlMillis: 30_000 }),
      store.tryAcquire({ key: 'b2/other', session: second.credential, ttlMillis: 30_000 }),
    ]);
    expect(statements() - statementsBefore).toBe(2);
    expect(a).toMatchObject({ kind: 'granted', existing: false });
    expect(b).toMatchObject({ kind: 'held', holder: { sessionId: first.record.sessionId, fencingToken: (a as { grant: { fencingToken: string } }).grant.fencingToken } });
    expect(c).toMatchObject({ kind: 'granted', existing: false });
  });
});
