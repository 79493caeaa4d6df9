import { PgDatabase } from '../../../lock/store/sql/pg-database.js';
import { SqlLockStore } from '../../../lock/store/sql/sql-store.js';
import { sharedPostgres } from '../../support/server.js';
import { describeStoreConformance } from './suite.js';

describeStoreConformance('postgres', async () => {
  const store = new SqlLockStore(new PgDatabase(await (await sharedPostgres()).createDatabase(), 8), 'postgres');
  await store.init();
  return { store, cleanup: () => store.close() };
});
