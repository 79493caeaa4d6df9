/**
 * The raw backend: the same acquire+release work issued straight to PostgreSQL
 * from a `pg` pool, the floor Holdfast's HTTP path is compared against. The
 * table mirrors holdfast_locks (columns, "C" key collation, secondary indexes)
 * and tokens come from a sequence, so the statements touch what the store's do,
 * minus the session check, the liveness predicate and HTTP.
 */
import pg from 'pg';
import { StatementBatcher } from './statement-batcher.js';

export const RAW_SCHEMA = [
  `CREATE SEQUENCE IF NOT EXISTS bench_fencing_seq AS bigint`,
  `CREATE TABLE IF NOT EXISTS bench_locks (
     key           text COLLATE "C" PRIMARY KEY,
     session_id    text NOT NULL,
     owner         text NOT NULL,
     fencing_token bigint NOT NULL,
     ttl_millis    integer NOT NULL,
     granted_at    bigint NOT NULL,
     expires_at    bigint NOT NULL
   )`,
  `CREATE INDEX IF NOT EXISTS bench_locks_session_id ON bench_locks (session_id)`,
  `CREATE INDEX IF NOT EXISTS bench_locks_expires_at ON bench_locks (expires_at)`,
];

export const RAW_ACQUIRE_SQL = `
INSERT INTO bench_locks (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at)
VALUES ($1, $2, 'bench', nextval('bench_fencing_seq'), 30000, $3::bigint, $3::bigint + 30000)
ON CONFLICT (key) DO NOTHING
RETURNING fencing_token::text AS fencing_token`;

export const RAW_RELEASE_SQL = `DELETE FROM bench_locks WHERE key = $1 AND fencing_token = $2::bigint`;

export async function createRawSchema(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    for (const statement of RAW_SCHEMA) await client.query(statement);
  } finally {
    await client.end();
  }
}

/** One acquire+release; false when the insert found the key taken (never, with a key per worker). */
export async function rawCycle(pool: pg.Pool, key: string, sessionId: string): Promise<boolean> {
  const inserted = await pool.query<{ fencing_token: string }>(RAW_ACQUIRE_SQL, [key, sessionId, Date.now()]);
  const token = inserted.rows[0]?.fencing_token;
  if (token === undefined) return false;
  const deleted = await pool.query(RAW_RELEASE_SQL, [key, token]);
  return deleted.rowCount === 1;
}

/**
 * The coalesced variant: acquires submitted in one event-loop turn become one
 * multi-row INSERT, releases one multi-row DELETE, each its own commit. Rows
 * go in key order, so two batches that share keys lock them in the same order
 * and cannot deadlock. Results map back by key (acquire: the session that won
 * it; release: the key and token deleted).
 */
export const RAW_ACQUIRE_MANY_SQL = `
INSERT INTO bench_locks (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at)
SELECT r.key, r.session_id, 'bench', nextval('bench_fencing_seq'), 30000, $3::bigint, $3::bigint + 30000
FROM unnest($1::text[], $2::text[]) AS r(key, session_id)
ORDER BY r.key
ON CONFLICT (key) DO NOTHING
RETURNING key, session_id, fencing_token::text AS fencing_token`;

export const RAW_RELEASE_MANY_SQL = `
DELETE FROM bench_locks l
USING unnest($1::text[], $2::bigint[]) AS r(key, token)
WHERE l.key = r.key AND l.fencing_token = r.token
RETURNING l.key, l.fencing_token::text AS fencing_token`;

export class CoalescingRawBackend {
  private readonly acquires: StatementBatcher<{ key: string; sessionId: string }, string | null>;
  private readonly releases: StatementBatcher<{ key: string; token: string }, boolean>;

  constructor(pool: pg.Pool, maxBatch: number) {
    this.acquires = new StatementBatcher(async (calls) => {
      const result = await pool.query<{ key: string; session_id: string; fencing_token: string }>(RAW_ACQUIRE_MANY_SQL, [
        calls.map((c) => c.key),
        calls.map((c) => c.sessionId),
        Date.now(),
      ]);
      const won = new Map(result.rows.map((r) => [r.key, r]));
      return calls.map((c) => (won.get(c.key)?.session_id === c.sessionId ? won.get(c.key)!.fencing_token : null));
    }, maxBatch);
    this.releases = new StatementBatcher(async (calls) => {
      const result = await pool.query<{ key: string; fencing_token: string }>(RAW_RELEASE_MANY_SQL, [
        calls.map((c) => c.key),
        calls.map((c) => c.token),
      ]);
      const deleted = new Set(result.rows.map((r) => `${r.key}\u0000${r.fencing_token}`));
      return calls.map((c) => deleted.has(`${c.key}\u0000${c.token}`));
    }, maxBatch);
  }

  async cycle(key: string, sessionId: string): Promise<boolean> {
    const token = await this.acquires.submit({ key, sessionId });
    if (token === null) return false;
    return this.releases.submit({ key, token });
  }

  /** Mean rows per statement, acquires and releases together. */
  meanBatchSize(): number {
    const sizes = [...this.acquires.batchSizes, ...this.releases.batchSizes];
    return sizes.length === 0 ? 0 : sizes.reduce((a, b) => a + b, 0) / sizes.length;
  }
}
