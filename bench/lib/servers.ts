/**
 * Holdfast servers in this process for the bench, on loopback port 0, with the
 * product's defaults except where the bench must choose (store, pool size).
 * Event log lines are serialised as in production and then dropped, so the
 * bench neither floods stdout nor skips the logging cost.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../lock/config.js';
import { startHoldfastServer, type RunningServer } from '../../server/holdfast-server.js';
import type { EtcdStoreOptions } from '../../lock/store/etcd/etcd-store.js';
import type { LockStore } from '../../lock/store/spi.js';

export interface BenchServer {
  url: string;
  stop(): Promise<void>;
}

const discard = { write: (_line: string) => {} };

async function start(env: Record<string, string>, cleanup: () => void, store?: LockStore): Promise<BenchServer> {
  let running: RunningServer;
  try {
    running = await startHoldfastServer(loadConfig({ HOLDFAST_PORT: '0', HOLDFAST_HOST: '127.0.0.1', ...env }), {
      logDestination: discard,
      ...(store ? { store } : {}),
    });
  } catch (error) {
    cleanup();
    throw error;
  }
  return {
    url: running.url,
    async stop() {
      try {
        await running.stop();
      } finally {
        cleanup();
      }
    },
  };
}

/** The postgres store; the pool size is the server's default unless `poolSize` is given. */
export function startPostgresServer(databaseUrl: string, poolSize?: number | string): Promise<BenchServer> {
  return start(
    {
      HOLDFAST_STORE: 'postgres',
      DATABASE_URL: databaseUrl,
      ...(poolSize !== undefined && poolSize !== '' ? { HOLDFAST_PG_POOL_SIZE: String(poolSize) } : {}),
    },
    () => {},
  );
}

/**
 * The etcd store on the given endpoints (its own etcd: the store's namespace is fixed).
 * `storeOptions`: a store built here with these options instead of the configured one
 * (the bench compares store variants in one run).
 */
export async function startEtcdServer(endpoints: string[], storeOptions?: Omit<EtcdStoreOptions, 'endpoints'>): Promise<BenchServer> {
  let store: LockStore | undefined;
  if (storeOptions) {
    const { EtcdStore } = await import('../../lock/store/etcd/etcd-store.js');
    store = new EtcdStore({ endpoints, ...storeOptions });
    await store.init();
  }
  return start({ HOLDFAST_STORE: 'etcd', ETCD_ENDPOINTS: endpoints.join(',') }, () => {}, store);
}

/** The embedded store (file-backed PGlite) in a fresh temporary data dir, removed on stop. */
export function startEmbeddedServer(): Promise<BenchServer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'holdfast-bench-'));
  return start({ HOLDFAST_STORE: 'embedded', HOLDFAST_DATA_DIR: dataDir }, () =>
    rmSync(dataDir, { recursive: true, force: true }),
  );
}
