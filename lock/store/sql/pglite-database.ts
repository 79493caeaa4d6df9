import { PGlite, types as pgliteTypes, type PGliteOptions } from '@electric-sql/pglite';
import { lockDataDir, type DataDirLock } from './data-dir-lock.js';
import { dataDirIsInitialised, initDataDirInChild } from './pglite-initdb.js';
import { makeOwnerOnly, ownerOnlyUmask } from './private-files.js';
import type { NotificationHandlers, Queryable, Row, SqlDatabase } from './queryable.js';

/**
 * PostgreSQL's default shared_buffers (128 MB) is zeroed at start inside the WASM heap, so all of
 * it is resident from the first second. The embedded store's working set is small (5,000 sessions
 * and 2,500 locks are under 3 MB of heap and index pages), so 16 MB holds it with room to spare:
 * measured idle RSS of the store alone 366 MB -> 220 MB (bench/pglite-memory.ts).
 */
export const EMBEDDED_START_PARAMS: readonly string[] = [...(PGlite.defaultStartParams as string[]), '-c', 'shared_buffers=16MB'];

/**
 * The same SQL in-process on PGlite (Postgres compiled to WASM), file-backed.
 * PGlite runs one statement at a time; its transaction() holds the connection,
 * so transactions serialise exactly as they would under a table lock.
 */
export class PgliteDatabase implements SqlDatabase {
  private constructor(
    private readonly db: PGlite,
    private readonly dirLock: DataDirLock | null,
  ) {}

  /**
   * `dataDir` undefined = in memory (tests); otherwise the embedded store's files.
   * `template` is a data-dir dump to start from: a fresh PGlite runs initdb in
   * WASM (seconds), loading a dump takes about one.
   */
  /**
   * `ownerDir`: the directory the server owns (HOLDFAST_DATA_DIR, holding `dataDir`): locked
   * before PGlite opens anything and made owner-only; defaults to `dataDir` itself.
   */
  static async open(
    dataDir?: string,
    template?: Blob,
    options: { ownerDir?: string; pglite?: Pick<PGliteOptions, 'initialMemory' | 'startParams'> } = {},
  ): Promise<PgliteDatabase> {
    const ownerDir = options.ownerDir ?? dataDir;
    // One owner per directory, taken before PGlite touches it (throws DataDirInUseError).
    const dirLock = ownerDir ? await lockDataDir(ownerDir) : null;
    try {
      if (ownerDir) ownerOnlyUmask();
      const startParams = options.pglite?.startParams ?? EMBEDDED_START_PARAMS;
      // initdb's heap must not live in the server (pglite-initdb.ts).
      if (dataDir && !template && !dataDirIsInitialised(dataDir)) await initDataDirInChild(dataDir, startParams);
      const db = await PGlite.create({
        ...(dataDir ? { dataDir } : {}),
        ...(template ? { loadDataDir: template } : {}),
        ...options.pglite,
        startParams: [...startParams],
        parsers: { [pgliteTypes.INT8]: (value: string) => Number(value) },
      });
      if (ownerDir) await makeOwnerOnly(ownerDir);
      return new PgliteDatabase(db, dirLock);
    } catch (error) {
      await dirLock?.release();
      throw error;
    }
  }

  async query<R extends Row = Row>(sql: string, params: readonly unknown[] = []): Promise<R[]> {
    const result = await this.db.query<R>(sql, params as unknown[]);
    return result.rows;
  }

  async exec(sql: string): Promise<void> {
    await this.db.exec(sql);
  }

  async transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.db.transaction(async (tx) =>
      work({
        query: async <R extends Row = Row>(sql: string, params: readonly unknown[] = []) =>
          (await tx.query<R>(sql, params as unknown[])).rows,
      }),
    );
  }

  /** In-process: PGlite delivers NOTIFY to its own listeners after commit; there is no connection to lose. */
  async listen(channel: string, handlers: NotificationHandlers): Promise<() => Promise<void>> {
    const unlisten = await this.db.listen(channel, (payload) => handlers.notify(payload));
    handlers.health(true, 'listening in process');
    return async () => {
      await unlisten();
    };
  }

  /** A dump of the whole data dir, usable as a `template` for open(). */
  async dump(): Promise<Blob> {
    return this.db.dumpDataDir('none');
  }

  async close(): Promise<void> {
    try {
      await this.db.close();
    } finally {
      await this.dirLock?.release();
    }
  }
}
