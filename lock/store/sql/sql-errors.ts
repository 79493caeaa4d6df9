/**
 * What a PostgreSQL (or PGlite) failure means to a caller: "cannot take writes now" is
 * NOT_LEADER (503, retry), a value the database refused is input (400); anything else is a bug
 * and propagates as is. One definition for every SQL module (store, fleet, feed).
 */
import { NotLeaderError, ValidationFailedError } from '../../errors.js';
import type { BackendName } from '../../../contract/records.js';
import type { Queryable, SqlDatabase } from './queryable.js';

/** PostgreSQL SQLSTATEs that mean "cannot take writes now", answered 503 NOT_LEADER. */
const NOT_LEADER_STATES = new Set(['25006', '57P01', '57P02', '57P03', '57014', '08000', '08003', '08006', '08001', '08004']);
const NOT_LEADER_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']);
/** pg's client-side timeouts (connect, query) and a dropped connection: the database is out of reach. */
const UNREACHABLE_MESSAGE = /Connection terminated|timeout exceeded when trying to connect|Query read timeout/i;

export function translateSqlError(error: unknown, backend: BackendName): unknown {
  const e = error as { code?: string; message?: string };
  if ((e.code && (NOT_LEADER_STATES.has(e.code) || NOT_LEADER_ERRNOS.has(e.code))) || UNREACHABLE_MESSAGE.test(e.message ?? '')) {
    return new NotLeaderError(`the ${backend} store cannot take writes: ${e.message ?? e.code}`);
  }
  // Class 22 (data exception): a value PostgreSQL cannot take slipped past validation; it is input, not a bug.
  if (typeof e.code === 'string' && e.code.startsWith('22')) {
    return new ValidationFailedError(`the ${backend} store refused a value: ${e.message ?? e.code}`);
  }
  return error;
}

export async function guardSql<T>(backend: BackendName, operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw translateSqlError(error, backend);
  }
}

/** The database with every statement's failure translated (for modules that do not guard each call). */
export function guardedDatabase(db: SqlDatabase, backend: BackendName): SqlDatabase {
  const guardedTx = (tx: Queryable): Queryable => ({ query: (sql, params) => tx.query(sql, params) });
  return {
    query: (sql, params) => guardSql(backend, () => db.query(sql, params)),
    transaction: (work) => guardSql(backend, () => db.transaction((tx) => work(guardedTx(tx)))),
    exec: (sql) => guardSql(backend, () => db.exec(sql)),
    close: () => db.close(),
    ...(db.listen ? { listen: db.listen.bind(db) } : {}),
  };
}
