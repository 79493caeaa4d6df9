/**
 * A sweep batch is the oldest expiries, whatever their ids or keys: the sweeper picks it by a range
 * scan of the expires_at index (a primary-key walk read every live row before reaching lapsed ones,
 * 771 ms a batch at 100,000 live sessions; bench:scale's storm row). Sessions come back in id order.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import type { SqlDatabase } from '../../lock/store/sql/queryable.js';
import { openSqlStore } from '../support/sql-stores.js';
import { openTestSession } from '../support/store-sessions.js';

describe.each(['postgres', 'embedded'] as const)('sweep order on %s', (backend) => {
  let store: SqlLockStore;
  let raw: SqlDatabase;
  beforeAll(async () => {
    ({ store, raw } = await openSqlStore(backend));
  });
  afterAll(async () => {
    await store?.close();
  });

  const lapse = (table: 'holdfast_sessions' | 'holdfast_locks', column: 'session_id' | 'key', id: string, agoMillis: number) =>
    raw.query(`UPDATE ${table} SET expires_at = holdfast_now_ms() - $2::integer WHERE ${column} = $1`, [id, agoMillis]);

  test('sessions: the oldest expiries first, reported in id order; live sessions with lower ids are never taken', async () => {
    const live = await openTestSession(store, { sessionId: 'order-a-live', ttlMillis: 60_000 });
    for (const [id, ago] of [['order-b', 1000], ['order-c', 5000], ['order-d', 3000], ['order-e', 4000]] as const) {
      await openTestSession(store, { sessionId: id, ttlMillis: 60_000 });
      await lapse('holdfast_sessions', 'session_id', id, ago);
    }
    expect((await store.expireSessions(2)).map((e) => e.session.sessionId)).toEqual(['order-c', 'order-e']);
    expect((await store.expireSessions(2)).map((e) => e.session.sessionId)).toEqual(['order-b', 'order-d']);
    expect(await store.expireSessions(2)).toEqual([]);
    expect((await store.getSession(live.credential.sessionId))?.sessionId).toBe('order-a-live');
  });

  test('locks: the oldest lapsed TTLs first; a live lock with a lower key stays', async () => {
    const holder = await openTestSession(store, { ttlMillis: 60_000 });
    for (const key of ['k/a-live', 'k/b', 'k/c', 'k/d']) {
      expect((await store.tryAcquire({ key, session: holder.credential, ttlMillis: 60_000 })).kind).toBe('granted');
    }
    await lapse('holdfast_locks', 'key', 'k/b', 1000);
    await lapse('holdfast_locks', 'key', 'k/c', 5000);
    await lapse('holdfast_locks', 'key', 'k/d', 3000);
    expect((await store.expireLocks(2)).map((l) => l.key).sort()).toEqual(['k/c', 'k/d']);
    expect((await store.expireLocks(2)).map((l) => l.key)).toEqual(['k/b']);
    const held = await raw.query<{ key: string }>(`SELECT key FROM holdfast_locks WHERE key LIKE 'k/%'`);
    expect(held.map((r) => r.key)).toEqual(['k/a-live']);
  });
});
