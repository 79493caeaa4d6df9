/**
 * 200 trials of concurrent close / kill / expiry of sessions holding
 * interleaved key sets, with takeover acquires racing them, against real
 * PostgreSQL: no deadlock (40P01) and no lock of a dead session left behind.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { PgDatabase } from '../../lock/store/sql/pg-database.js';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import { sharedPostgres } from '../support/server.js';
import { openTestSession, type TestSession } from '../support/store-sessions.js';

const TRIALS = 200;
let store: SqlLockStore;
let db: PgDatabase;

beforeAll(async () => {
  const cluster = await sharedPostgres();
  db = new PgDatabase(await cluster.createDatabase(), 24, { statementTimeoutMillis: 30_000 });
  store = new SqlLockStore(db, 'postgres');
  await store.init();
});
afterAll(async () => {
  await store?.close();
});

test(`${TRIALS} trials of racing session ends raise no deadlock and leave no orphan lock`, async () => {
  const failures: string[] = [];
  for (let trial = 0; trial < TRIALS; trial++) {
    const ids = Array.from({ length: 5 }, (_, i) => `t${trial}-s${i}`);
    // s0, s1 live long (closed / killed); s2, s3 lapse (expired by the sweep); s4 races to take keys over.
    const sessions: TestSession[] = [];
    for (const sessionId of ids) sessions.push(await openTestSession(store, { sessionId, owner: 'deadlock-test' }));
    // Interleaved key sets: s0 holds k0,k4,k8; s1 holds k1,k5,k9; ... so orders cross.
    const keys = Array.from({ length: 16 }, (_, k) => `t${trial}/k${String(k).padStart(2, '0')}`);
    for (const [k, key] of keys.entries()) {
      const granted = await store.tryAcquire({ key, session: sessions[k % 4]!.credential, ttlMillis: 30000 });
      expect(granted.kind).toBe('granted');
    }
    // The store's clock decides lapses: s2 and s3 are made to have lapsed on it, and half the
    // keys of s0 and s1 get lapsed TTLs, so the sweep and the takeovers have work.
    await db.query('UPDATE holdfast_sessions SET expires_at = holdfast_now_ms() - 1 WHERE session_id = ANY($1)', [[ids[2], ids[3]]]);
    await db.query('UPDATE holdfast_locks SET expires_at = holdfast_now_ms() - 1 WHERE key = ANY($1)', [keys.filter((_, k) => k % 8 < 2)]);
    const audit = { actor: 'test', requestId: `trial-${trial}`, reason: 'deadlock trial' };
    const racers: Promise<unknown>[] = [
      store.closeSession(sessions[0]!.credential),
      store.killSession(ids[1]!, audit),
      store.expireSessions(100),
      store.expireLocks(100),
      store.killSession(ids[2]!, audit),
      ...[...keys].reverse().map((key) => store.tryAcquire({ key, session: sessions[4]!.credential, ttlMillis: 30000 })),
    ];
    const settled = await Promise.allSettled(racers);
    for (const result of settled) {
      if (result.status === 'rejected') {
        const error = result.reason as { code?: string; message?: string };
        failures.push(`trial ${trial}: ${error.code ?? ''} ${error.message}`);
      }
    }
    // Closed and killed sessions have no locks the moment their call returns.
    const closedOrKilled = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM holdfast_locks WHERE session_id = ANY($1)',
      [[ids[0], ids[1]]],
    );
    expect(closedOrKilled[0]!.n).toBe(0);
    // After a sweep, no lock row belongs to a session that no longer exists or has lapsed.
    await store.expireSessions(100);
    await store.expireLocks(100);
    const orphans = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM holdfast_locks l
       WHERE l.key LIKE $1 AND NOT EXISTS (
         SELECT 1 FROM holdfast_sessions s WHERE s.session_id = l.session_id AND s.expires_at > holdfast_now_ms())`,
      [`t${trial}/%`],
    );
    expect(orphans[0]!.n).toBe(0);
  }
  expect(failures).toEqual([]);
}, 300_000);
