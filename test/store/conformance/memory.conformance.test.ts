import { MemoryLockStore } from '../../../lock/store/memory/memory-store.js';
import { describeStoreConformance } from './suite.js';

describeStoreConformance('in-memory (core tests)', async () => {
  const store = new MemoryLockStore();
  await store.init();
  return { store, cleanup: () => store.close() };
});
