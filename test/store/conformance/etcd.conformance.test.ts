import { randomUUID } from 'node:crypto';
import { EtcdStore } from '../../../lock/store/etcd/etcd-store.js';
import { startEtcd } from '../../support/etcd.js';
import { describeStoreConformance } from './suite.js';

// etcd's leases are its clock: lapses take whole seconds (TTLs round up; etcd's minimum lease is 2 s).
describeStoreConformance('etcd', async () => {
  const etcd = await startEtcd();
  const store = new EtcdStore({ endpoints: etcd.endpoints, namespace: randomUUID() });
  await store.init();
  return {
    store,
    sessionExpiryGranularityMillis: 1000,
    cleanup: async () => {
      await store.close();
      await etcd.stop();
    },
  };
});
