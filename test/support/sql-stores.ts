import { PgDatabase } from '../../lock/store/sql/pg-database.js';
import { PgliteDatabase } from '../../lock/store/sql/pglite-database.js';
import type { SqlDatabase } from '../../lock/store/sql/queryable.js';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import { sharedPostgres } from './server.js';

export type SqlBackend = 'postgres' | 'embedded';

/** A fresh, empty database: a new one on the suite's shared PostgreSQL, or an in-memory PGlite. */
export async function freshSqlDatabase(backend: SqlBackend): Promise<SqlDatabase> {
  return backend === 'postgres' ? new PgDatabase(await (await sharedPostgres()).createDatabase()) : await PgliteDatabase.open();
}

/** A SQL store on a fresh database; `raw` reaches the same database directly, for set-up and checks. */
export async function openSqlStore(backend: SqlBackend): Promise<{ store: SqlLockStore; raw: SqlDatabase }> {
  const raw = await freshSqlDatabase(backend);
  const store = new SqlLockStore(raw, backend);
  await store.init();
  return { store, raw };
}
