/**
 * Found by the attacker's review of issue 25 (rev-sec): the embedded store's identity lives in
 * `HOLDFAST_DATA_DIR/store-id`, beside `pgdata`. A backup taken the ordinary way — a copy of the
 * whole data directory (tar, rsync, a volume snapshot) — carries `store-id` with it, so restoring it
 * in place restores the identity too and the store is found `current`. The embedded store is opened
 * by one process at a time, so it raises its token floor at every start (TokenFloor in spi.ts): the
 * rewound sequence still never issues a token again.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { loadConfig } from '../../lock/config.js';
import { openStore } from '../../lock/store/open-store.js';
import { guardRestoredStore } from '../../lock/store/restore-guard.js';
import type { LockStore } from '../../lock/store/spi.js';
import { openTestSession } from '../support/store-sessions.js';

const work = mkdtempSync(path.join(tmpdir(), 'holdfast-dircopy-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const quiet = { restored: () => {}, advanced: () => {} };
const withStore = async <T>(dataDir: string, use: (store: LockStore) => Promise<T>): Promise<T> => {
  const opened = await openStore(loadConfig({ HOLDFAST_STORE: 'embedded', HOLDFAST_DATA_DIR: dataDir }));
  try {
    return await use(await guardRestoredStore(opened, quiet));
  } finally {
    await opened.close();
  }
};
const grant = async (store: LockStore, key: string): Promise<bigint> => {
  const session = await openTestSession(store, { ttlMillis: 120_000 });
  const result = await store.tryAcquire({ key, session: session.credential, ttlMillis: 120_000 });
  if (result.kind !== 'granted') throw new Error(`expected a grant, got ${result.kind}`);
  return BigInt(result.grant.fencingToken);
};

test('a whole data directory copied back in place keeps its store-id and is found current, yet issues no token again', async () => {
  const dataDir = path.join(work, 'holdfast');
  const backup = path.join(work, 'backup-of-holdfast');
  await withStore(dataDir, (store) => grant(store, 'dircopy/before-backup'));
  cpSync(dataDir, backup, { recursive: true });
  const issuedAfterBackup = await withStore(dataDir, (store) => grant(store, 'dircopy/after-backup'));

  rmSync(dataDir, { recursive: true, force: true });
  cpSync(backup, dataDir, { recursive: true });
  const { state, next } = await withStore(dataDir, async (store) => ({
    state: (await store.tokenFloor!.check()).state,
    next: await grant(store, 'dircopy/after-restore'),
  }));
  // The identity came back with the copy, so the restore itself is not seen...
  expect(state).toBe('current');
  // ...but the start raised the floor to the store clock: above every token issued before the restore.
  expect(next).toBeGreaterThan(issuedAfterBackup);
}, 600_000);
