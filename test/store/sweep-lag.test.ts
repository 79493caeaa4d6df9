/**
 * The sweep lag the store reports (lock_sweep_lag_seconds): the age, by the store clock,
 * of the oldest expiry that passed and is not yet swept; 0 once the sweeper caught up.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import type { SqlDatabase } from '../../lock/store/sql/queryable.js';
import { openSqlStore } from '../support/sql-stores.js';
import { openTestSession } from '../support/store-sessions.js';

describe.each(['postgres', 'embedded'] as const)('sweep lag on %s', (backend) => {
  let store: SqlLockStore;
  let raw: SqlDatabase;
  beforeAll(async () => {
    ({ store, raw } = await openSqlStore(backend));
  });
  afterAll(async () => {
    await store?.close();
  });

  test('0 when nothing is overdue; the oldest overdue session or lock expiry otherwise; 0 again after the sweep', async () => {
    const live = await openTestSession(store, { ttlMillis: 60_000 });
    expect((await store.summary()).sweepLagMillis).toBe(0);

    const lapsedSession = await openTestSession(store, { ttlMillis: 60_000 });
    await raw.query('UPDATE holdfast_sessions SET expires_at = holdfast_now_ms() - 7000 WHERE session_id = $1', [lapsedSession.credential.sessionId]);
    const granted = await store.tryAcquire({ key: 'lag/lock', session: live.credential, ttlMillis: 60_000 });
    expect(granted.kind).toBe('granted');
    await raw.query(`UPDATE holdfast_locks SET expires_at = holdfast_now_ms() - 3000 WHERE key = 'lag/lock'`);

    const lag = (await store.summary()).sweepLagMillis!;
    expect(lag).toBeGreaterThanOrEqual(7000);
    expect(lag).toBeLessThan(30_000);

    expect((await store.expireSessions(100)).map((e) => e.session.sessionId)).toEqual([lapsedSession.credential.sessionId]);
    const lockLag = (await store.summary()).sweepLagMillis!;
    expect(lockLag).toBeGreaterThanOrEqual(3000);
    expect(lockLag).toBeLessThan(7000);

    expect((await store.expireLocks(100)).map((l) => l.key)).toEqual(['lag/lock']);
    expect((await store.summary()).sweepLagMillis).toBe(0);
  });
});
