/**
 * A real Holdfast server in-process on a free loopback port with its own fresh
 * store: PGlite from a cached template (embedded), a new database in a shared
 * throwaway PostgreSQL cluster (postgres), or a new single-node etcd (etcd).
 */
import { createHash, randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../lock/config.js';
import { startHoldfastServer, type RunningServer, type StartOptions } from '../../server/holdfast-server.js';
import { loadAuditSealer } from '../../lock/audit/audit-key.js';
import { openStore } from '../../lock/store/open-store.js';
import type { LockStore } from '../../lock/store/spi.js';
import { PgliteDatabase } from '../../lock/store/sql/pglite-database.js';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import { attachPostgres, startPostgres, type PostgresCluster } from './postgres.js';

export type StoreName = 'embedded' | 'postgres' | 'etcd';

export interface TestServer {
  url: string;
  operatorToken: string;
  viewerToken: string;
  backend: string;
  store: StoreName;
  /** Parsed pino lines, in order. */
  logs: Record<string, unknown>[];
  running: RunningServer;
  /** The store's connection, for tests that inspect or tamper with rows. */
  databaseUrl?: string;
  etcdEndpoints?: string[];
  stop(): Promise<void>;
}

export interface StartServerOptions {
  store?: StoreName;
  env?: Record<string, string>;
  /** Wraps the opened store (fault injection in tests). */
  wrapStore?: (store: LockStore) => LockStore;
  clock?: StartOptions['clock'];
  random?: StartOptions['random'];
  /** Extra entries for the tokens file (e.g. role `client`). */
  tokens?: { name: string; token: string; role: 'viewer' | 'operator' | 'client'; prefixes?: string[] }[];
}

export async function startServer(options: StartServerOptions = {}): Promise<TestServer> {
  const storeName = options.store ?? (process.env.HOLDFAST_TEST_STORE as StoreName | undefined) ?? 'embedded';
  const workDir = mkdtempSync(path.join(tmpdir(), 'holdfast-test-'));
  const operatorToken = `op-${randomBytes(16).toString('hex')}`;
  const viewerToken = `view-${randomBytes(16).toString('hex')}`;
  const tokensFile = path.join(workDir, 'tokens.json');
  writeFileSync(
    tokensFile,
    JSON.stringify([
      { name: 'test-operator', token: operatorToken, role: 'operator' },
      { name: 'test-viewer', token: viewerToken, role: 'viewer' },
      ...(options.tokens ?? []),
    ]),
    // Secret files others can read are refused (lock/secret-files.ts).
    { mode: 0o600 },
  );

  const env: Record<string, string> = {
    HOLDFAST_STORE: storeName,
    HOLDFAST_PORT: '0',
    HOLDFAST_DATA_DIR: path.join(workDir, 'data'),
    HOLDFAST_ADMIN_TOKENS_FILE: tokensFile,
    HOLDFAST_SWEEP_INTERVAL_MS: '100',
    // Tests stop servers in-process: no load balancer to wait for.
    HOLDFAST_DRAIN_DELAY_MS: '0',
  };
  let databaseUrl: string | undefined;
  let etcdEndpoints: string[] | undefined;
  let stopBackend = async () => {};
  let store: LockStore;
  if (storeName === 'embedded') {
    const sealer = await loadAuditSealer(options.env?.HOLDFAST_AUDIT_KEY_FILE);
    store = new SqlLockStore(await PgliteDatabase.open(undefined, await pgliteTemplate()), 'embedded', { sealer });
  } else if (storeName === 'postgres') {
    databaseUrl = await (await sharedPostgres()).createDatabase();
    env.DATABASE_URL = databaseUrl;
    store = await openStore(loadConfig({ ...env, ...options.env }));
  } else if (options.env?.ETCD_ENDPOINTS) {
    // A cluster the test started itself (failover tests): share it, do not start another.
    etcdEndpoints = options.env.ETCD_ENDPOINTS.split(',');
    store = await openStore(loadConfig({ ...env, ...options.env }));
  } else {
    const { startEtcd } = await import('./etcd.js');
    const etcd = await startEtcd();
    etcdEndpoints = etcd.endpoints;
    env.ETCD_ENDPOINTS = etcd.endpoints.join(',');
    stopBackend = () => etcd.stop();
    store = await openStore(loadConfig({ ...env, ...options.env }));
  }
  if (storeName === 'embedded') await store.init();
  if (options.wrapStore) store = options.wrapStore(store);

  const logs: Record<string, unknown>[] = [];
  const destination = {
    write(line: string) {
      for (const part of line.split('\n')) if (part.trim()) logs.push(JSON.parse(part) as Record<string, unknown>);
    },
  };
  const running = await startHoldfastServer(loadConfig({ ...env, ...options.env }), {
    store,
    logDestination: destination,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.random ? { random: options.random } : {}),
  });
  return {
    url: running.url,
    operatorToken,
    viewerToken,
    backend: store.backend,
    store: storeName,
    logs,
    running,
    ...(databaseUrl ? { databaseUrl } : {}),
    ...(etcdEndpoints ? { etcdEndpoints } : {}),
    async stop() {
      await running.stop();
      await stopBackend();
      rmSync(workDir, { recursive: true, force: true });
    },
  };
}

let postgres: Promise<PostgresCluster> | undefined;

/**
 * The run's PostgreSQL cluster (started by the vitest global setup), or — for
 * scripts outside vitest — one of this process's own, stopped when it exits.
 */
export function sharedPostgres(): Promise<PostgresCluster> {
  const url = process.env.HOLDFAST_TEST_PG_URL;
  if (url) return Promise.resolve(attachPostgres(url));
  postgres ??= startPostgres().then((cluster) => {
    process.on('exit', () => {
      const asRoot = process.getuid?.() === 0;
      const args = ['-D', cluster.dataDir, '-m', 'immediate', '-w', 'stop'];
      if (asRoot) spawnSync('runuser', ['-u', 'postgres', '--', '/usr/lib/postgresql/15/bin/pg_ctl', ...args]);
      else spawnSync('/usr/lib/postgresql/15/bin/pg_ctl', args);
      rmSync(path.dirname(cluster.dataDir), { recursive: true, force: true });
    });
    return cluster;
  });
  return postgres;
}

/**
 * A migrated PGlite data dir, dumped once and cached on disk by schema hash:
 * fresh PGlite instances cost seconds of WASM initdb, loading a dump about one.
 * Also a template for `PgliteDatabase.open(dir, template)`.
 */
export async function pgliteTemplate(): Promise<Blob> {
  // Keyed by every migration's text: a changed migration makes a new template.
  const migrations = new URL('../../lock/store/sql/migrations/', import.meta.url);
  const hashing = createHash('sha256').update(readFileSync(new URL('../../lock/store/sql/schema.ts', import.meta.url)));
  for (const name of readdirSync(migrations).sort()) hashing.update(readFileSync(new URL(name, migrations)));
  const hash = hashing.digest('hex').slice(0, 16);
  const cacheDir = path.join(tmpdir(), 'holdfast-pglite-templates');
  const file = path.join(cacheDir, `${hash}.tar`);
  if (existsSync(file)) return new Blob([readFileSync(file)]);
  const db = await PgliteDatabase.open();
  const store = new SqlLockStore(db, 'embedded');
  await store.init();
  const dump = await db.dump();
  await db.close();
  mkdirSync(cacheDir, { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, Buffer.from(await dump.arrayBuffer()));
  spawnSync('mv', [temp, file]);
  return dump;
}
