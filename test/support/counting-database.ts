import type { SqlDatabase } from '../../lock/store/sql/queryable.js';

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
