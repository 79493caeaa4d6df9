import { PgliteDatabase } from '../../../lock/store/sql/pglite-database.js';
import { SqlLockStore } from '../../../lock/store/sql/sql-store.js';
import { describeStoreConformance } from './suite.js';

describeStoreConformance('embedded (PGlite)', async () => {
  const store = new SqlLockStore(await PgliteDatabase.open(), 'embedded');
  await store.init();
  return { store, cleanup: () => store.close() };
});
