import type { SqlDatabase } from '../../lock/store/sql/queryable.js';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import { freshSqlDatabase, type SqlBackend } from './sql-stores.js';

/**
 * Wraps a SqlDatabase and counts the statements sent outside transactions: the batching
 * tests assert that a turn's worth of calls reaches the database as one statement.
 */
export function countingDatabase(db: SqlDatabase): { db: SqlDatabase; statements: () => number } {
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

/**
 * A SQL store on a fresh database (PostgreSQL or PGlite) whose statements are counted;
 * `raw` reaches the same database uncounted, for set-up and checks.
 */
export async function openCountingStore(backend: SqlBackend): Promise<{ store: SqlLockStore; statements: () => number; raw: SqlDatabase }> {
  const raw = await freshSqlDatabase(backend);
  const counted = countingDatabase(raw);
  const store = new SqlLockStore(counted.db, backend);
  await store.init();
  return { store, statements: counted.statements, raw };
}
