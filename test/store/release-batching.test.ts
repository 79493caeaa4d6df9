/**
 * Concurrent releases on the SQL store share one statement, and each is still
 * its own compare-and-delete on (key, token).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import type { LockGrant } from '../../contract/records.js';
import { openCountingStore } from '../support/counting-database.js';
import { openTestSession } from '../support/store-sessions.js';
import type { ReleaseResult } from '../../lock/store/spi.js';

describe.each(['postgres', 'embedded'] as const)('release batching on %s', (backend) => {
  let store: SqlLockStore;
  let statements: () => number;
  beforeAll(async () => {
    ({ store, statements } = await openCountingStore(backend));
  });
  afterAll(async () => {
    await store?.close();
  });

  test('32 releases in one turn: one statement; a stale token and a repeat fail alone', async () => {
    const { credential } = await openTestSession(store, { owner: 'o' });
    const grants: LockGrant[] = [];
    for (let i = 0; i < 32; i++) {
      const result = await store.tryAcquire({ key: `batch/${i}`, session: credential, ttlMillis: 30000 });
      if (result.kind !== 'granted') throw new Error('not granted');
      grants.push(result.grant);
    }
    const before = statements();
    const results: ReleaseResult[] = await Promise.all([
      ...grants.map((g, i) => store.release({ key: g.key, session: credential, fencingToken: i === 5 ? '999999' : g.fencingToken })),
      store.release({ key: grants[9]!.key, session: credential, fencingToken: grants[9]!.fencingToken }), // the same release twice
    ]);
    // One batched DELETE; each failure then pays one diagnosis read (session live, token right: lost).
    expect(statements() - before).toBe(3);
    results.slice(0, 32).forEach((released, i) => {
      if (i === 5) expect(released).toEqual({ kind: 'lost' });
      else expect(released).toMatchObject({ kind: 'released', lock: { key: grants[i]!.key, fencingToken: grants[i]!.fencingToken, owner: 'o' } });
    });
    expect(results[32]).toEqual({ kind: 'lost' }); // only one of the two identical releases deleted the row
    expect(await store.readLock('batch/5')).toMatchObject({ fencingToken: grants[5]!.fencingToken });
    expect((await store.listLocks({ limit: 100, prefix: 'batch/' })).items.map((l) => l.key)).toEqual(['batch/5']);
  });

  test('a lone release keeps the single-row statement; a wrong token is refused and deletes nothing', async () => {
    const { credential, impostor } = await openTestSession(store, { owner: 'o' });
    const result = await store.tryAcquire({ key: 'lone', session: credential, ttlMillis: 30000 });
    if (result.kind !== 'granted') throw new Error('not granted');
    const before = statements();
    expect(await store.release({ key: 'lone', session: impostor, fencingToken: result.grant.fencingToken })).toEqual({ kind: 'unauthenticated' });
    expect(statements() - before).toBe(2);
    expect(await store.readLock('lone')).toMatchObject({ fencingToken: result.grant.fencingToken });
    expect(await store.release({ key: 'lone', session: credential, fencingToken: result.grant.fencingToken })).toMatchObject({ kind: 'released' });
    expect(await store.readLock('lone')).toBeNull();
  });
});
