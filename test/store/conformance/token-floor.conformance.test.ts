/**
 * The token floor conformance suite (token-floor-suite.ts) on every store that has one: memory,
 * embedded, PostgreSQL. etcd has none (its tokens are revisions, which only `etcdutl snapshot
 * restore --bump-revision` can raise): the last test pins that, and `holdfast tokens advance`
 * refuses it (test/cli/restore.test.ts).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EtcdStore } from '../../../lock/store/etcd/etcd-store.js';
import { MemoryLockStore } from '../../../lock/store/memory/memory-store.js';
import { PgDatabase } from '../../../lock/store/sql/pg-database.js';
import { PgliteDatabase } from '../../../lock/store/sql/pglite-database.js';
import type { LockStore } from '../../../lock/store/spi.js';
import type { SqlDatabase } from '../../../lock/store/sql/queryable.js';
import { SqlLockStore } from '../../../lock/store/sql/sql-store.js';
import { startEtcd, type EtcdNode } from '../../support/etcd.js';
import { pgliteTemplate, sharedPostgres } from '../../support/server.js';
import { describeTokenFloor } from './token-floor-suite.js';

/** A restore, as the SQL store sees it: the backup's sequence value and another place's identity. */
function sqlRestore(db: SqlDatabase) {
  return {
    restoreElsewhere: async (lastToken: string) => {
      await db.query(`SELECT setval('holdfast_fencing_seq', $1::bigint, true)`, [lastToken]);
      await db.query(`UPDATE holdfast_token_floor SET identity = 'elsewhere:' || identity`);
    },
    forgetIdentity: async () => void (await db.query('DELETE FROM holdfast_token_floor')),
  };
}

describeTokenFloor('in-memory', async (sealer) => {
  const store = new MemoryLockStore({ sealer });
  return { store, cleanup: () => store.close() };
}, { restorable: false });

describeTokenFloor('embedded (PGlite)', async (sealer) => {
  const db = await PgliteDatabase.open(undefined, await pgliteTemplate());
  const store = new SqlLockStore(db, 'embedded', { sealer });
  await store.init();
  return { store, ...sqlRestore(db), cleanup: () => store.close() };
}, { restorable: true });

describeTokenFloor('postgres', async (sealer) => {
  const db = new PgDatabase(await (await sharedPostgres()).createDatabase(), 4);
  const store = new SqlLockStore(db, 'postgres', { sealer });
  await store.init();
  return { store, ...sqlRestore(db), cleanup: () => store.close() };
}, { restorable: true });

describe('token floor: etcd', () => {
  let etcd: EtcdNode;
  beforeAll(async () => {
    etcd = await startEtcd();
  });
  afterAll(async () => {
    await etcd?.stop();
  });
  test('has no token floor: its tokens are revisions, raised only by the restore itself (--bump-revision)', async () => {
    const store = new EtcdStore({ endpoints: etcd.endpoints, namespace: randomUUID() });
    await store.init();
    try {
      expect((store as LockStore).tokenFloor).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});
