/**
 * Console records on PostgreSQL and PGlite (lock/store/console-records.ts): one table
 * (migration 10), liveness by the database clock. `take` is one DELETE … RETURNING: of concurrent
 * takes, the one whose delete wins the row answers it, the others find nothing.
 * Expired rows are ignored by every read and deleted a few at a time by each put.
 */
import type { BackendName } from '../../../contract/records.js';
import { checkConsoleList, checkConsoleRecord, type ConsoleRecord, type ConsoleRecordStore } from '../console-records.js';
import type { Row, SqlDatabase } from './queryable.js';
import { guardSql } from './sql-errors.js';
import { DB_NOW } from './sql-rows.js';

/** Expired rows a put deletes on its way: enough to keep up with the puts, never a long statement. */
const SWEEP_PER_PUT = 16;

export class SqlConsoleRecords implements ConsoleRecordStore {
  constructor(
    private readonly db: SqlDatabase,
    private readonly backend: BackendName,
  ) {}

  async put(record: { kind: string; id: string; value: string; ttlMillis: number }): Promise<ConsoleRecord> {
    checkConsoleRecord(record.kind, record.id, record.value, record.ttlMillis);
    return this.guarded(async () => {
      await this.db.query(
        `DELETE FROM holdfast_console_records WHERE (kind, id) IN (
           SELECT kind, id FROM holdfast_console_records WHERE expires_at <= ${DB_NOW} LIMIT ${SWEEP_PER_PUT})`,
      );
      const [row] = await this.db.query(
        `INSERT INTO holdfast_console_records (kind, id, value, expires_at) VALUES ($1, $2, $3, ${DB_NOW} + $4::bigint)
         ON CONFLICT (kind, id) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at
         RETURNING kind, id, value, expires_at`,
        [record.kind, record.id, record.value, record.ttlMillis],
      );
      return toRecord(row!);
    });
  }

  async get(kind: string, id: string): Promise<ConsoleRecord | null> {
    checkConsoleRecord(kind, id);
    const [row] = await this.guarded(() =>
      this.db.query(`SELECT kind, id, value, expires_at FROM holdfast_console_records WHERE kind = $1 AND id = $2 AND expires_at > ${DB_NOW}`, [kind, id]),
    );
    return row ? toRecord(row) : null;
  }

  async take(kind: string, id: string): Promise<ConsoleRecord | null> {
    checkConsoleRecord(kind, id);
    const [row] = await this.guarded(() =>
      this.db.query(
        `DELETE FROM holdfast_console_records WHERE kind = $1 AND id = $2 AND expires_at > ${DB_NOW} RETURNING kind, id, value, expires_at`,
        [kind, id],
      ),
    );
    return row ? toRecord(row) : null;
  }

  async delete(kind: string, id: string): Promise<boolean> {
    checkConsoleRecord(kind, id);
    const rows = await this.guarded(() =>
      this.db.query(`DELETE FROM holdfast_console_records WHERE kind = $1 AND id = $2 RETURNING expires_at > ${DB_NOW} AS live`, [kind, id]),
    );
    return rows.some((row) => row.live === true);
  }

  async list(kind: string, idPrefix: string, limit: number): Promise<ConsoleRecord[]> {
    checkConsoleList(kind, idPrefix, limit);
    // A range on the "C"-collated key rather than LIKE: ids may hold % and _.
    const rows = await this.guarded(() =>
      this.db.query(
        `SELECT kind, id, value, expires_at FROM holdfast_console_records
          WHERE kind = $1 AND id >= $2 AND left(id, length($2)) = $2 AND expires_at > ${DB_NOW}
          ORDER BY expires_at, id LIMIT $3`,
        [kind, idPrefix, limit],
      ),
    );
    return rows.map(toRecord);
  }

  private guarded<T>(work: () => Promise<T>): Promise<T> {
    return guardSql(this.backend, work);
  }
}

function toRecord(row: Row): ConsoleRecord {
  return { kind: String(row.kind), id: String(row.id), value: String(row.value), expiresAt: Number(row.expires_at) };
}
