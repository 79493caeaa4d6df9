/** The multi-holder conformance suite (holders-suite.ts) on every backend: memory, embedded, PostgreSQL, etcd. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { EtcdStore } from '../../../lock/store/etcd/etcd-store.js';
import { MemoryLockStore } from '../../../lock/store/memory/memory-store.js';
import { PgDatabase } from '../../../lock/store/sql/pg-database.js';
import { PgliteDatabase } from '../../../lock/store/sql/pglite-database.js';
import { SqlLockStore } from '../../../lock/store/sql/sql-store.js';
import { startEtcd, type EtcdNode } from '../../support/etcd.js';
import { pgliteTemplate, sharedPostgres } from '../../support/server.js';
import { describeMultiHolderKeys } from './holders-suite.js';

describeMultiHolderKeys('in-memory', async () => {
  const store = new MemoryLockStore();
  return { store, cleanup: () => store.close() };
});

describeMultiHolderKeys('embedded (PGlite)', async () => {
  const store = new SqlLockStore(await PgliteDatabase.open(undefined, await pgliteTemplate()), 'embedded');
  await store.init();
  return { store, cleanup: () => store.close() };
});

describeMultiHolderKeys('postgres', async () => {
  const url = await (await sharedPostgres()).createDatabase();
  const store = new SqlLockStore(new PgDatabase(url, 4), 'postgres');
  const peer = new SqlLockStore(new PgDatabase(url, 4), 'postgres');
  await store.init();
  await peer.init();
  return {
    store,
    peer,
    cleanup: async () => {
      await peer.close();
      await store.close();
    },
  };
});

let etcd: EtcdNode;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

describeMultiHolderKeys('etcd', async () => {
  const namespace = randomUUID();
  const store = new EtcdStore({ endpoints: etcd.endpoints, namespace });
  const peer = new EtcdStore({ endpoints: etcd.endpoints, namespace });
  await store.init();
  await peer.init();
  return {
    store,
    peer,
    cleanup: async () => {
      await peer.close();
      await store.close();
    },
  };
});
