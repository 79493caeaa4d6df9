/**
 * Versioned, idempotent schema migrations for the SQL store. Each migration
 * runs once, in order, inside a transaction holding an advisory lock so that
 * several servers starting together do not race.
 */
import { MIGRATIONS } from './migrations/index.js';
import type { Migration } from './migrations/migration.js';
import type { Queryable, SqlDatabase } from './queryable.js';

/**
 * A migration that meets live traffic (a rolling upgrade: the previous release keeps serving) takes
 * every table it may touch before its first change, in one LOCK, waiting at most LOCK_WAIT for it.
 *
 * Why up front, and why so short: a migration that waits for a table while it already holds another
 * can close a cycle with a serving transaction that holds the first and waits for the second. Of a
 * cycle's members, the first to wait `deadlock_timeout` (1 s by default) runs the check and is
 * aborted; a serving instance aborted there answers 500 (the previous release cannot retry it). The
 * one LOCK acquires its tables one after another with nothing in between, so a serving transaction
 * in such a cycle began waiting no earlier than the LOCK's own wait: LOCK_WAIT well under 1 s makes
 * the migration give up first, every time, and nothing of it is kept. It tries again after a pause.
 */
const LOCK_WAIT = '200ms';
const RETRIED_CODES = new Set(['40P01', '55P03']);
/** How long a migration keeps trying for its tables before startup fails (the fleet keeps serving meanwhile). */
const MIGRATION_PATIENCE_MILLIS = 120_000;

/** Applies `migrations` (every one this release knows; a test names a prefix to stand for an older schema). */
export async function migrate(db: SqlDatabase, migrations: readonly Migration[] = MIGRATIONS): Promise<void> {
  const giveUpAt = Date.now() + MIGRATION_PATIENCE_MILLIS;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await migrateOnce(db, migrations);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (Date.now() >= giveUpAt || typeof code !== 'string' || !RETRIED_CODES.has(code)) throw error;
      // Jittered, so two starting instances and the fleet's own rhythm do not keep meeting.
      await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 50 * attempt) * (0.5 + Math.random())));
    }
  }
}

async function migrateOnce(db: SqlDatabase, migrations: readonly Migration[]): Promise<void> {
  await db.transaction(async (tx) => {
    // The lock comes first: two servers creating the bookkeeping table at once on a fresh
    // database collide in the catalog ("type holdfast_schema_migrations already exists").
    await tx.query(`SELECT pg_advisory_xact_lock(7070707)`);
    await tx.query(`SET LOCAL lock_timeout = '${LOCK_WAIT}'`);
    await tx.query(`CREATE TABLE IF NOT EXISTS holdfast_schema_migrations (
      version integer PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const applied = new Set(
      (await tx.query<{ version: number }>('SELECT version FROM holdfast_schema_migrations')).map((r) => r.version),
    );
    const pending = migrations.filter((migration) => !applied.has(migration.version));
    if (pending.length === 0) return;
    await lockEveryTable(tx);
    for (const migration of pending) {
      const statements = 'sql' in migration ? splitStatements(migration.sql) : migration.statements;
      for (const statement of statements) await tx.query(statement);
      await tx.query('INSERT INTO holdfast_schema_migrations (version) VALUES ($1)', [migration.version]);
    }
  });
}

/** Every table of this schema the store owns, in one statement (see LOCK_WAIT). */
async function lockEveryTable(tx: Queryable): Promise<void> {
  const tables = await tx.query<{ name: string }>(
    `SELECT quote_ident(tablename) AS name FROM pg_tables
      WHERE schemaname = current_schema() AND tablename LIKE 'holdfast\\_%' ORDER BY tablename`,
  );
  if (tables.length === 0) return;
  await tx.query(`LOCK TABLE ${tables.map((t) => t.name).join(', ')} IN ACCESS EXCLUSIVE MODE`);
}

/** `sql` migrations contain no semicolons inside literals or bodies, so a plain split is exact. */
function splitStatements(sql: string): string[] {
  return sql
    .split(';')
    .map((s) => s.replace(/--.*$/gm, '').trim())
    .filter((s) => s.length > 0);
}
