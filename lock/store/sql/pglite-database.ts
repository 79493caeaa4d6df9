import { PGlite, types as pgliteTypes } from '@electric-sql/pglite';
import type { Queryable, Row, SqlDatabase } from './queryable.js';

/**
 * The same SQL in-process on PGlite (Postgres compiled to WASM), file-backed.
 * PGlite runs one statement at a time; its transaction() holds the connection,
 * so transactions serialise exactly as they would under a table lock.
 */
export class PgliteDatabase implements SqlDatabase {
  private constructor(private readonly db: PGlite) {}

  /**
   * `dataDir` undefined = in memory (tests); otherwise the embedded store's files.
   * `template` is a data-dir dump to start from: a fresh PGlite runs initdb in
   * WASM (seconds), loading a dump takes about one.
   */
  static async open(dataDir?: string, template?: Blob): Promise<PgliteDatabase> {
    const db = await PGlite.create({
      ...(dataDir ? { dataDir } : {}),
      ...(template ? { loadDataDir: template } : {}),
      parsers: { [pgliteTypes.INT8]: (value: string) => Number(value) },
    });
    return new PgliteDatabase(db);
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

  /** A dump of the whole data dir, usable as a `template` for open(). */
  async dump(): Promise<Blob> {
    return this.db.dumpDataDir('none');
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
