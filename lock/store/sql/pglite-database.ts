import { lstat, readlink, realpath } from 'node:fs/promises';
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
      // PGlite's file system cannot open a data directory through a symbolic link (it failed with a bare
      // `ErrnoError`, printed as "[object Object]"): it is given the directory the link points to.
      const realDataDir = dataDir ? await resolveDataDir(dataDir) : undefined;
      const startParams = options.pglite?.startParams ?? EMBEDDED_START_PARAMS;
      // initdb's heap must not live in the server (pglite-initdb.ts).
      if (realDataDir && !template && !dataDirIsInitialised(realDataDir)) await initDataDirInChild(realDataDir, startParams);
      let db: PGlite;
      try {
        db = await PGlite.create({
          ...(realDataDir ? { dataDir: realDataDir } : {}),
          ...(template ? { loadDataDir: template } : {}),
          ...options.pglite,
          startParams: [...startParams],
          parsers: { [pgliteTypes.INT8]: (value: string) => Number(value) },
        });
      } catch (error) {
        throw pgliteFailure(error, realDataDir);
      }
      if (ownerDir) await makeOwnerOnly(ownerDir);
      // A data directory reached through a link is outside the walk above (it does not follow links).
      if (realDataDir && ownerDir && realDataDir !== dataDir) await makeOwnerOnly(realDataDir);
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

/** `dataDir` with symbolic links resolved; a link to nowhere is a clear error, not PGlite's. */
async function resolveDataDir(dataDir: string): Promise<string> {
  try {
    return await realpath(dataDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    // Absent is fine (initdb creates it) unless it is a link whose target is missing.
    const info = await lstat(dataDir).catch(() => null);
    if (info?.isSymbolicLink()) {
      throw new Error(`the embedded data directory ${dataDir} is a symbolic link to ${await readlink(dataDir)}, which does not exist; create that directory (owner-only, chmod 700) or remove the link`);
    }
    return dataDir;
  }
}

/** Emscripten's errno numbers (PGlite's file system) for the errors a data directory meets. */
const WASM_ERRNO: Record<number, string> = { 2: 'EACCES', 20: 'EEXIST', 28: 'EINVAL', 31: 'EISDIR', 44: 'ENOENT', 51: 'ENOSPC', 54: 'ENOTDIR', 63: 'EPERM', 69: 'EROFS' };

/**
 * PGlite throws its file system's `ErrnoError` objects, which are not Errors and carry no message:
 * an Error naming the directory and the errno instead.
 */
export function pgliteFailure(error: unknown, dataDir: string | undefined): Error {
  const where = dataDir ? `the embedded data directory ${dataDir}` : 'the in-memory store';
  if (error instanceof Error && error.message) return new Error(`PGlite could not open ${where}: ${error.message}`, { cause: error });
  const errno = (error as { errno?: unknown } | null)?.errno;
  const code = typeof errno === 'number' ? (WASM_ERRNO[errno] ?? `errno ${errno}`) : String(error);
  const hint = code === 'ENOENT' ? ' (a file it needs is missing, or reached through a symbolic link inside the directory, which PGlite cannot follow)' : '';
  return new Error(`PGlite could not open ${where}: ${code}${hint}`, { cause: error });
}
