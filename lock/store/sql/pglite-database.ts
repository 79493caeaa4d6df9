import { PGlite, types as pgliteTypes } from '@electric-sql/pglite';
import type { Queryable, Row, SqlDatabase } from './queryable.js';

/**
 * The same SQL in-process on PGlite (Postgres compiled to WASM), file-backed.
 * PGlite runs one statement at a time; its transaction() holds the connection,
 * so transactions serialise exactly as they would under a table lock.
 */
export class PgliteDatabase implements SqlDatabase {
  private constructor(private readonly db: PGlite) {}

  /** `dataDir` undefined = in memory (tests); otherwise the embedded store's files. */
  static async open(dataDir?: string): Promise<PgliteDatabase> {
    const db = await PGlite.create({
      ...(dataDir ? { dataDir } : {}),
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

  async close(): Promise<void> {
    await this.db.close();
  }
}
