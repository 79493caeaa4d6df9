/**
 * Concurrent releases on the SQL store share one statement, and each is still
 * its own compare-and-delete on (key, token).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PgDatabase } from '../../lock/store/sql/pg-database.js';
import { PgliteDatabase } from '../../lock/store/sql/pglite-database.js';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import type { SqlDatabase } from '../../lock/store/sql/queryable.js';
import type { LockGrant } from '../../contract/records.js';
import { sharedPostgres } from '../support/server.js';

/** Counts statements reaching the database. */
function counting(db: SqlDatabase) {
  let statements = 0;
  const wrapped: SqlDatabase = {
    query: (sql, params) => {
      statements++;
      return db.query(sql, params);
    },
    exec: (sql) => db.exec(sql),
    transaction: (work) => db.transaction(work),
    close: () => db.close(),
  };
  return { db: wrapped, statements: () => statements };
}

describe.each(['postgres', 'embedded'] as const)('release batching on %s', (backend) => {
  let store: SqlLockStore;
  let statements: () => number;
  beforeAll(async () => {
    const raw = backend === 'postgres' ? new PgDatabase(await (await sharedPostgres()).createDatabase()) : await PgliteDatabase.open();
    const counted = counting(raw);
    statements = counted.statements;
    store = new SqlLockStore(counted.db, backend);
    await store.init();
  });
  afterAll(async () => {
    await store?.close();
  });

  test('32 releases in one turn: one statement; a stale token and a repeat fail alone', async () => {
    const now = Date.now();
    await store.openSession({ sessionId: 's1', owner: 'o', ttlMillis: 60000, createdAt: now, lastHeartbeatAt: now, expiresAt: now + 60000 });
    const grants: LockGrant[] = [];
    for (let i = 0; i < 32; i++) {
      const result = await store.tryAcquire({ key: `batch/${i}`, sessionId: 's1', ttlMillis: 30000, now });
      if (result.kind !== 'granted') throw new Error('not granted');
      grants.push(result.grant);
    }
    const before = statements();
    const results = await Promise.all([
      ...grants.map((g, i) => store.release({ key: g.key, fencingToken: i === 5 ? '999999' : g.fencingToken, now })),
      store.release({ key: grants[9]!.key, fencingToken: grants[9]!.fencingToken, now }), // the same release twice
    ]);
    expect(statements() - before).toBe(1);
    results.slice(0, 32).forEach((released, i) => {
      if (i === 5) expect(released).toBeNull();
      else expect(released).toMatchObject({ key: grants[i]!.key, fencingToken: grants[i]!.fencingToken, owner: 'o' });
    });
    expect(results[32]).toBeNull(); // only one of the two identical releases deleted the row
    expect(await store.readLock('batch/5', now)).toMatchObject({ fencingToken: grants[5]!.fencingToken });
    expect((await store.listLocks({ limit: 100, prefix: 'batch/' }, now)).items.map((l) => l.key)).toEqual(['batch/5']);
  });

  test('a lone release keeps the single-row statement and reports a lapsed grant as lost', async () => {
    const now = Date.now();
    await store.openSession({ sessionId: 's2', owner: 'o', ttlMillis: 60000, createdAt: now, lastHeartbeatAt: now, expiresAt: now + 60000 });
    const result = await store.tryAcquire({ key: 'lone', sessionId: 's2', ttlMillis: 1000, now });
    if (result.kind !== 'granted') throw new Error('not granted');
    expect(await store.release({ key: 'lone', fencingToken: result.grant.fencingToken, now: now + 5000 })).toBeNull();
    expect(await store.readLock('lone', now)).toBeNull();
  });
});
