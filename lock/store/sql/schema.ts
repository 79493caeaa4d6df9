/**
 * Versioned, idempotent schema migrations for the SQL store. Each migration
 * runs once, in order, inside a transaction holding an advisory lock so that
 * several servers starting together do not race.
 */
import type { SqlDatabase } from './queryable.js';

const MIGRATIONS: readonly { version: number; sql: string }[] = [
  {
    version: 1,
    sql: `
      CREATE SEQUENCE holdfast_fencing_seq AS bigint START 1;

      CREATE TABLE holdfast_sessions (
        session_id        text PRIMARY KEY,
        owner             text NOT NULL,
        ttl_millis        integer NOT NULL,
        created_at        bigint NOT NULL,
        last_heartbeat_at bigint NOT NULL,
        expires_at        bigint NOT NULL
      );
      CREATE INDEX holdfast_sessions_expires_at ON holdfast_sessions (expires_at);

      -- COLLATE "C": keys sort bytewise, so prefix scans and cursors agree everywhere.
      CREATE TABLE holdfast_locks (
        key           text COLLATE "C" PRIMARY KEY,
        session_id    text NOT NULL,
        owner         text NOT NULL,
        fencing_token bigint NOT NULL,
        ttl_millis    integer NOT NULL,
        granted_at    bigint NOT NULL,
        expires_at    bigint NOT NULL
      );
      CREATE INDEX holdfast_locks_session_id ON holdfast_locks (session_id);
      CREATE INDEX holdfast_locks_expires_at ON holdfast_locks (expires_at);

      CREATE TABLE holdfast_audit (
        id            bigint PRIMARY KEY,
        at            bigint NOT NULL,
        actor         text NOT NULL,
        action        text NOT NULL,
        target        text NOT NULL,
        fencing_token bigint,
        reason        text NOT NULL,
        outcome       text NOT NULL,
        request_id    text NOT NULL,
        prev_hash     text NOT NULL,
        hash          text NOT NULL
      );

      -- One row: the chain head, locked FOR UPDATE by every append so ids are gapless and ordered.
      CREATE TABLE holdfast_audit_head (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        last_id   bigint NOT NULL,
        last_hash text NOT NULL
      );
      INSERT INTO holdfast_audit_head (last_id, last_hash) VALUES (0, repeat('0', 64));
    `,
  },
];

export async function migrate(db: SqlDatabase): Promise<void> {
  await db.exec(`CREATE TABLE IF NOT EXISTS holdfast_schema_migrations (
    version integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
  await db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(7070707)`);
    const applied = new Set(
      (await tx.query<{ version: number }>('SELECT version FROM holdfast_schema_migrations')).map((r) => r.version),
    );
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      for (const statement of splitStatements(migration.sql)) await tx.query(statement);
      await tx.query('INSERT INTO holdfast_schema_migrations (version) VALUES ($1)', [migration.version]);
    }
  });
}

/** Our migrations contain no semicolons inside literals or bodies, so a plain split is exact. */
function splitStatements(sql: string): string[] {
  return sql
    .split(';')
    .map((s) => s.replace(/--.*$/gm, '').trim())
    .filter((s) => s.length > 0);
}
