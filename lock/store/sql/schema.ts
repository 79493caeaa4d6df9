/**
 * Versioned, idempotent schema migrations for the SQL store. Each migration
 * runs once, in order, inside a transaction holding an advisory lock so that
 * several servers starting together do not race.
 */
import { MIGRATIONS } from './migrations/index.js';
import type { SqlDatabase } from './queryable.js';

/**
 * A migration that meets live traffic (a rolling upgrade: the previous release keeps serving) can
 * lose a deadlock to it, or wait out its lock timeout: nothing of it is kept, so it is tried again.
 */
const RETRIED_CODES = new Set(['40P01', '55P03']);
const MIGRATION_ATTEMPTS = 10;

export async function migrate(db: SqlDatabase): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await migrateOnce(db);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (attempt >= MIGRATION_ATTEMPTS || typeof code !== 'string' || !RETRIED_CODES.has(code)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

async function migrateOnce(db: SqlDatabase): Promise<void> {
  await db.transaction(async (tx) => {
    // The lock comes first: two servers creating the bookkeeping table at once on a fresh
    // database collide in the catalog ("type holdfast_schema_migrations already exists").
    await tx.query(`SELECT pg_advisory_xact_lock(7070707)`);
    // Past it, no table lock is waited for long: an ALTER queued behind live transactions would
    // hold up every later statement on its table (the serving fleet's); it gives up and retries.
    await tx.query(`SET LOCAL lock_timeout = '5s'`);
    await tx.query(`CREATE TABLE IF NOT EXISTS holdfast_schema_migrations (
      version integer PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const applied = new Set(
      (await tx.query<{ version: number }>('SELECT version FROM holdfast_schema_migrations')).map((r) => r.version),
    );
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      const statements = 'sql' in migration ? splitStatements(migration.sql) : migration.statements;
      for (const statement of statements) await tx.query(statement);
      await tx.query('INSERT INTO holdfast_schema_migrations (version) VALUES ($1)', [migration.version]);
    }
  });
}

/** `sql` migrations contain no semicolons inside literals or bodies, so a plain split is exact. */
function splitStatements(sql: string): string[] {
  return sql
    .split(';')
    .map((s) => s.replace(/--.*$/gm, '').trim())
    .filter((s) => s.length > 0);
}
