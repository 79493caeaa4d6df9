/**
 * The embedded store's first start: initdb runs in a short-lived child process
 * (lock/store/sql/pglite-initdb.ts), so its WASM heap never lives in the server; the server
 * then opens the directory as on any restart, and what it writes survives a reopen.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { EMBEDDED_START_PARAMS, PgliteDatabase } from '../../lock/store/sql/pglite-database.js';
import { dataDirIsInitialised, initDataDirInChild } from '../../lock/store/sql/pglite-initdb.js';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import { openTestSession } from '../support/store-sessions.js';

const root = mkdtempSync(path.join(tmpdir(), 'holdfast-initdb-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

test('a child process initialises a fresh data directory, its parents included', async () => {
  const dataDir = path.join(root, 'child', 'pgdata');
  expect(dataDirIsInitialised(dataDir)).toBe(false);
  await initDataDirInChild(dataDir, EMBEDDED_START_PARAMS);
  expect(dataDirIsInitialised(dataDir)).toBe(true);
}, 120_000);

test('the store opens a fresh directory (initdb in the child) and its rows survive a reopen', async () => {
  const ownerDir = path.join(root, 'store');
  const dataDir = path.join(ownerDir, 'pgdata');
  let store = new SqlLockStore(await PgliteDatabase.open(dataDir, undefined, { ownerDir }), 'embedded');
  await store.init();
  expect(dataDirIsInitialised(dataDir)).toBe(true);
  const opened = await openTestSession(store, { ttlMillis: 60_000 });
  await store.close();

  store = new SqlLockStore(await PgliteDatabase.open(dataDir, undefined, { ownerDir }), 'embedded');
  await store.init();
  expect((await store.getSession(opened.credential.sessionId))?.sessionId).toBe(opened.credential.sessionId);
  await store.close();
}, 120_000);

test('a directory initdb cannot create fails with the directory named, not with a half-open store', async () => {
  const blocker = path.join(root, 'a-file');
  writeFileSync(blocker, 'not a directory');
  await expect(initDataDirInChild(path.join(blocker, 'pgdata'), EMBEDDED_START_PARAMS)).rejects.toThrow(/initdb of the embedded data directory .*a-file\/pgdata failed/);
}, 120_000);
