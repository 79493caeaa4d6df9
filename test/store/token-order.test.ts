/**
 * Fencing tokens in the order grants are answered (SPI rule 1), on real PostgreSQL:
 * an acquire that has to wait on another transaction's row lock on its key (an
 * uncommitted delete, as close/kill/sweep hold; or a row lock, as a takeover
 * holds) draws its token only once it holds the row, so it answers with a token
 * higher than every grant answered while it waited.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { PgDatabase } from '../../lock/store/sql/pg-database.js';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import { eventually } from '../support/http.js';
import { sharedPostgres } from '../support/server.js';
import { openTestSession } from '../support/store-sessions.js';

let store: SqlLockStore;
let databaseUrl: string;

beforeAll(async () => {
  databaseUrl = await (await sharedPostgres()).createDatabase();
  store = new SqlLockStore(new PgDatabase(databaseUrl, 8, { statementTimeoutMillis: 30_000 }), 'postgres');
  await store.init();
});
afterAll(async () => {
  await store?.close();
});

/** A lock on `key` whose own TTL has lapsed on the database clock (not yet swept). */
async function lapsedLock(key: string) {
  const owner = await openTestSession(store);
  const grant = await store.tryAcquire({ key, session: owner.credential, ttlMillis: 1000 });
  expect(grant.kind).toBe('granted');
  // Lapsed ~1 s after the grant; the deadline only bounds a failure.
  await eventually(async () => (await store.readLock(key)) === null, 30_000, 50);
}

/** True once a backend of this database waits on a heavyweight lock (our blocked acquire). */
async function someoneWaits(admin: pg.Client): Promise<boolean> {
  const rows = await admin.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
  );
  return rows.rows[0].n > 0;
}

for (const [name, hold] of [
  ['an uncommitted delete of the key (close / kill / sweep)', `DELETE FROM holdfast_locks WHERE key = $1`],
  ['a row lock on the lapsed key (a takeover in flight)', `SELECT 1 FROM holdfast_locks WHERE key = $1 FOR UPDATE`],
] as const) {
  test(`a grant that waited on ${name} answers with a token above every grant answered meanwhile`, async () => {
    const key = `order/${name.length}/${Date.now()}`;
    await lapsedLock(key);
    const blocker = new pg.Client({ connectionString: databaseUrl });
    const watcher = new pg.Client({ connectionString: databaseUrl });
    await blocker.connect();
    await watcher.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(hold, [key]);
      const late = await openTestSession(store);
      const waiting = store.tryAcquire({ key, session: late.credential, ttlMillis: 30_000 });
      await eventually(() => someoneWaits(watcher), 30_000, 20);

      const others = await openTestSession(store);
      const answered: bigint[] = [];
      for (let i = 0; i < 5; i++) {
        const other = await store.tryAcquire({ key: `${key}/other-${i}`, session: others.credential, ttlMillis: 30_000 });
        if (other.kind !== 'granted') throw new Error(`other grant ${i}: ${other.kind}`);
        answered.push(BigInt(other.grant.fencingToken));
      }
      await blocker.query('COMMIT');
      const result = await waiting;
      if (result.kind !== 'granted') throw new Error(`late acquire: ${result.kind}`);
      expect(result.existing).toBe(false);
      const lateToken = BigInt(result.grant.fencingToken);
      for (const token of answered) expect(lateToken > token, `late ${lateToken} vs earlier answer ${token}`).toBe(true);
    } finally {
      await blocker.end();
      await watcher.end();
    }
  });
}
