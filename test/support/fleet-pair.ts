/**
 * Two in-process Holdfast servers on one store (the fleet tests): the first starts its own
 * store (a fresh PostgreSQL database, or a fresh single-node etcd), the second joins it.
 */
import { startServer, type StartServerOptions, type TestServer } from './server.js';

/** The stores whose instances act as one service (FleetWaitState); HOLDFAST_TEST_STORES narrows them. */
export const FLEET_STORES = (['postgres', 'etcd'] as const).filter(
  (store) => !process.env.HOLDFAST_TEST_STORES || process.env.HOLDFAST_TEST_STORES.split(',').includes(store),
);
export type FleetStore = (typeof FLEET_STORES)[number];

export async function startPair(store: FleetStore, options: Omit<StartServerOptions, 'store'> = {}): Promise<[TestServer, TestServer]> {
  const a = await startServer({ ...options, store });
  const shared: Record<string, string> = store === 'postgres' ? { DATABASE_URL: a.databaseUrl! } : { ETCD_ENDPOINTS: a.etcdEndpoints!.join(',') };
  try {
    const b = await startServer({ ...options, store, env: { ...options.env, ...shared } });
    return [a, b];
  } catch (error) {
    await a.stop();
    throw error;
  }
}
