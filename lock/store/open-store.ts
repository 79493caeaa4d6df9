/**
 * Wires the configured store by name. This is the one place outside a store's
 * own folder that knows which stores exist; core receives only the SPI.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { loadAuditSealer } from '../audit/audit-key.js';
import { assertPrivateFile } from '../secret-files.js';
import type { ServerConfig } from '../config.js';
import type { EtcdStoreOptions } from './etcd/etcd-store.js';
import type { LockStore } from './spi.js';
import { embeddedIdentity } from './sql/embedded-identity.js';
import { PgliteDatabase } from './sql/pglite-database.js';
import { SqlLockStore } from './sql/sql-store.js';

export async function openStore(config: ServerConfig): Promise<LockStore> {
  const sealer = await loadAuditSealer(config.HOLDFAST_AUDIT_KEY_FILE);
  let store: LockStore;
  switch (config.HOLDFAST_STORE) {
    case 'embedded': {
      const ownerDir = path.resolve(config.HOLDFAST_DATA_DIR);
      // Created (owner-only) by the first start's initdb; may be a symbolic link to another disk.
      const dataDir = path.join(ownerDir, 'pgdata');
      store = new SqlLockStore(await PgliteDatabase.open(dataDir, undefined, { ownerDir }), 'embedded', { sealer, identity: embeddedIdentity(ownerDir) });
      break;
    }
    case 'postgres': {
      // Loaded on demand so the embedded default never pulls in node-postgres (15 MB resident).
      const { PgDatabase } = await import('./sql/pg-database.js');
      store = new SqlLockStore(new PgDatabase(await databaseUrl(config), config.HOLDFAST_PG_POOL_SIZE, {
          connectTimeoutMillis: config.HOLDFAST_PG_CONNECT_TIMEOUT_MS,
          statementTimeoutMillis: config.HOLDFAST_PG_STATEMENT_TIMEOUT_MS,
        }), 'postgres', { sealer });
      break;
    }
    case 'etcd': {
      // Loaded on demand so the embedded default never pulls in the etcd client.
      const etcdModule = './etcd/etcd-store.js';
      const { EtcdStore } = (await import(etcdModule)) as {
        EtcdStore: new (options: EtcdStoreOptions) => LockStore;
      };
      store = new EtcdStore({ endpoints: config.ETCD_ENDPOINTS!.split(',').map((e) => e.trim()).filter(Boolean), auditSealer: sealer });
      break;
    }
  }
  await store.init();
  return store;
}

/**
 * DATABASE_URL, with the password from HOLDFAST_DATABASE_PASSWORD_FILE when that is set (its first
 * line; the URL must not carry one too). The file is refused when others can read it.
 */
export async function databaseUrl(config: Pick<ServerConfig, 'DATABASE_URL' | 'HOLDFAST_DATABASE_PASSWORD_FILE'>): Promise<string> {
  const file = config.HOLDFAST_DATABASE_PASSWORD_FILE;
  if (!file) return config.DATABASE_URL!;
  const url = new URL(config.DATABASE_URL!);
  if (url.password !== '') {
    throw new Error('invalid configuration: DATABASE_URL has a password and HOLDFAST_DATABASE_PASSWORD_FILE is set; keep it in one place');
  }
  await assertPrivateFile(file, 'the database password file');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new Error(`cannot read the database password from ${file}: ${(error as Error).message}`);
  }
  const password = text.split(/\r?\n/, 1)[0]!;
  if (password === '') throw new Error(`the database password file ${file} is empty`);
  url.password = encodeURIComponent(password);
  return url.toString();
}
