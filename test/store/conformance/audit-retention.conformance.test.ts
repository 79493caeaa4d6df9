/** The audit retention conformance suite (audit-retention-suite.ts) on every backend: memory, embedded, PostgreSQL, etcd. */
import { randomUUID } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll } from 'vitest';
import type { AuditEntry } from '../../../contract/records.js';
import { EtcdStore } from '../../../lock/store/etcd/etcd-store.js';
import { keyLayout } from '../../../lock/store/etcd/keys.js';
import { MemoryLockStore } from '../../../lock/store/memory/memory-store.js';
import { PgDatabase } from '../../../lock/store/sql/pg-database.js';
import { PgliteDatabase } from '../../../lock/store/sql/pglite-database.js';
import { SqlLockStore } from '../../../lock/store/sql/sql-store.js';
import { startEtcd, type EtcdNode } from '../../support/etcd.js';
import { pgliteTemplate, sharedPostgres } from '../../support/server.js';
import { describeAuditRetention } from './audit-retention-suite.js';

describeAuditRetention('in-memory', {
  async make(sealer) {
    const store = new MemoryLockStore({ sealer });
    return {
      store,
      // The one way to reach the trail behind the store's back: its private array.
      deleteEntry: async (id) => {
        const trail = (store as unknown as { audit: AuditEntry[] }).audit;
        trail.splice(trail.findIndex((e) => e.id === id), 1);
      },
      cleanup: () => store.close(),
    };
  },
});

describeAuditRetention('embedded (PGlite)', {
  async make(sealer) {
    const db = await PgliteDatabase.open(undefined, await pgliteTemplate());
    const store = new SqlLockStore(db, 'embedded', { sealer });
    await store.init();
    return {
      store,
      deleteEntry: async (id) => void (await db.query('DELETE FROM holdfast_audit WHERE id = $1::bigint', [id])),
      cleanup: () => store.close(),
    };
  },
});

describeAuditRetention('postgres', {
  async make(sealer) {
    const db = new PgDatabase(await (await sharedPostgres()).createDatabase(), 4);
    const store = new SqlLockStore(db, 'postgres', { sealer });
    await store.init();
    return {
      store,
      deleteEntry: async (id) => void (await db.query('DELETE FROM holdfast_audit WHERE id = $1::bigint', [id])),
      cleanup: () => store.close(),
    };
  },
});

let etcd: EtcdNode;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

describeAuditRetention('etcd', {
  async make(sealer) {
    const namespace = randomUUID();
    const store = new EtcdStore({ endpoints: etcd.endpoints, namespace, auditSealer: sealer });
    await store.init();
    const raw = new Etcd3({ hosts: etcd.endpoints });
    return {
      store,
      deleteEntry: async (id) => void (await raw.delete().key(keyLayout('/holdfast/', namespace).auditEntry(Number(id)))),
      cleanup: async () => {
        raw.close();
        await store.close();
      },
    };
  },
});
