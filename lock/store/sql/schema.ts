/**
 * Versioned, idempotent schema migrations for the SQL store. Each migration
 * runs once, in order, inside a transaction holding an advisory lock so that
 * several servers starting together do not race.
 */
import { MIGRATIONS } from './migrations/index.js';
import type { SqlDatabase } from './queryable.js';

export async function migrate(db: SqlDatabase): Promise<void> {
  await db.transaction(async (tx) => {
    // The lock comes first: two servers creating the bookkeeping table at once on a fresh
    // database collide in the catalog ("type holdfast_schema_migrations already exists").
    await tx.query(`SELECT pg_advisory_xact_lock(7070707)`);
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
