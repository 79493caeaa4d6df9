/**
 * Issue 20: ping is readiness and the health probe, so it answers only when the
 * store takes writes. A read-only database (a standby, default_transaction_read_only)
 * is NotLeaderError, or the probe would count a store up that refuses every write.
 */
import { expect, it } from 'vitest';
import { NotLeaderError } from '../../lock/errors.js';
import { PgDatabase } from '../../lock/store/sql/pg-database.js';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import { sharedPostgres } from '../support/server.js';
import { openSqlStore } from '../support/sql-stores.js';

it('embedded: ping refuses a read-only database', async () => {
  const { store, raw } = await openSqlStore('embedded');
  try {
    await store.ping();
    await raw.exec('SET default_transaction_read_only = on');
    await expect(store.ping()).rejects.toBeInstanceOf(NotLeaderError);
    await raw.exec('SET default_transaction_read_only = off');
    await store.ping();
  } finally {
    await store.close();
  }
});

it('postgres: ping refuses a read-only database', async () => {
  const url = await (await sharedPostgres()).createDatabase();
  const writable = new SqlLockStore(new PgDatabase(url), 'postgres');
  await writable.init();
  await writable.ping();
  const database = new URL(url).pathname.slice(1);
  const admin = new PgDatabase(url);
  await admin.exec(`ALTER DATABASE "${database}" SET default_transaction_read_only = on`);
  const readOnly = new SqlLockStore(new PgDatabase(url), 'postgres'); // new connections take the setting
  try {
    await expect(readOnly.ping()).rejects.toBeInstanceOf(NotLeaderError);
  } finally {
    await readOnly.close();
    await writable.close();
    await admin.close();
  }
});
