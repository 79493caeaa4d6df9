/**
 * `holdfast backup` / `holdfast restore` for the embedded store (issue 25). Both are offline: they
 * take the data directory's lock (data-dir-lock.ts), so they refuse while a server holds it, and
 * a backup is a consistent copy because nothing else writes while it is taken.
 *
 * A backup is PGlite's dump of `pgdata` (a tar file), never the directory's store id
 * (embedded-identity.ts). A restore writes a new store id first, then loads the dump, migrates it,
 * and advances the token floor in one go: should it stop half way, the store found restored
 * refuses writes and says to run `holdfast tokens advance` — it never serves from a rewound sequence.
 */
import { existsSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AuditSealer } from '../../audit/chain.js';
import type { AuditDraft, TokenAdvanceResult } from '../spi.js';
import { lockDataDir } from './data-dir-lock.js';
import { embeddedIdentity, replaceEmbeddedIdentity } from './embedded-identity.js';
import { dataDirIsInitialised } from './pglite-initdb.js';
import { PgliteDatabase } from './pglite-database.js';
import { SqlLockStore } from './sql-store.js';

/** The embedded store's PGlite directory inside HOLDFAST_DATA_DIR (open-store.ts opens the same). */
export function pgdataOf(ownerDir: string): string {
  return path.join(ownerDir, 'pgdata');
}

/** Writes a dump of the embedded store in `ownerDir` to `file` (owner-only); refuses while a server holds the directory. */
export async function backupEmbeddedStore(ownerDir: string, file: string): Promise<{ bytes: number }> {
  const dataDir = pgdataOf(ownerDir);
  if (!dataDirIsInitialised(dataDir)) throw new Error(`no embedded store in ${ownerDir} (no initialised ${dataDir}); check --data-dir / HOLDFAST_DATA_DIR`);
  const db = await PgliteDatabase.open(dataDir, undefined, { ownerDir });
  try {
    const dump = Buffer.from(await (await db.dump()).arrayBuffer());
    await writeFile(file, dump, { mode: 0o600, flag: 'wx' });
    return { bytes: dump.length };
  } finally {
    await db.close();
  }
}

export interface EmbeddedRestore {
  /** Where the store that was in the directory was moved (`pgdata.before-restore-…`), null if there was none. */
  movedAside: string | null;
  advance: TokenAdvanceResult;
}

/**
 * Replaces the embedded store in `ownerDir` with the backup in `file` and advances its token floor.
 * The store that was there is kept beside it (`pgdata.before-restore-<time>`), never deleted.
 */
export async function restoreEmbeddedStore(req: { ownerDir: string; file: string; sealer: AuditSealer; audit: AuditDraft }): Promise<EmbeddedRestore> {
  const dump = new Blob([await readFile(req.file)]);
  const dataDir = pgdataOf(req.ownerDir);
  // Held for the whole restore: PgliteDatabase.open takes the same lock again (in-process, counted).
  const dirLock = await lockDataDir(req.ownerDir);
  try {
    let movedAside: string | null = null;
    if (existsSync(dataDir)) {
      movedAside = `${dataDir}.before-restore-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      await rename(dataDir, movedAside);
    }
    // Before the data: a restore cut short leaves a store that knows it was restored.
    await replaceEmbeddedIdentity(req.ownerDir);
    const store = new SqlLockStore(await PgliteDatabase.open(dataDir, dump, { ownerDir: req.ownerDir }), 'embedded', {
      sealer: req.sealer,
      identity: embeddedIdentity(req.ownerDir),
    });
    try {
      await store.init();
      const advance = await store.tokenFloor.advance({ audit: req.audit });
      return { movedAside, advance };
    } finally {
      await store.close();
    }
  } finally {
    await dirLock.release();
  }
}
