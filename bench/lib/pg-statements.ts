/**
 * Where PostgreSQL's time goes per cycle, from pg_stat_statements (tracking the statements inside
 * Holdfast's SQL functions too): which statements run, how often per cycle, how many rows each
 * answers, and their execution time (which includes time spent waiting on row locks).
 */
import pg from 'pg';

/** Server settings for startPostgres: the extension must be preloaded when the cluster starts. */
export const PG_STATEMENTS_SETTINGS = { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all' } as const;

async function withClient<T>(databaseUrl: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** Starts counting from zero: call it as the measured window opens (the extension is created once, before). */
export function resetStatements(databaseUrl: string): Promise<void> {
  return withClient(databaseUrl, async (client) => {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await client.query('SELECT pg_stat_statements_reset()');
  });
}

export interface StatementCounts {
  statements: { calls: number; rows: number; execMillis: number; nested: boolean; query: string }[];
}

/** The `limit` statements of this database with the most execution time since the last reset. */
export function readStatements(databaseUrl: string, limit = 15): Promise<StatementCounts> {
  return withClient(databaseUrl, async (client) => {
    const { rows } = await client.query<{ calls: string; rows: string; ms: number; toplevel: boolean; query: string }>(
      `SELECT s.calls, s.rows, s.total_exec_time AS ms, s.toplevel, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 110) AS query
       FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
       WHERE d.datname = current_database() ORDER BY s.total_exec_time DESC LIMIT $1`,
      [limit],
    );
    // Not pg_stat_database's commit count: backends flush it at most once a second, too coarse for a few-second window.
    return { statements: rows.map((r) => ({ calls: Number(r.calls), rows: Number(r.rows), execMillis: r.ms, nested: !r.toplevel, query: r.query })) };
  });
}

/** One printable line per statement, per measured cycle. */
export function formatStatements(counts: StatementCounts, cycles: number): string[] {
  const perCycle = (n: number) => (n / cycles).toFixed(3);
  return [
    'calls/cycle  rows/call  exec ms/cycle  statement (nested = inside a Holdfast SQL function; exec time includes row-lock waits)',
    ...counts.statements.map(
      (s) =>
        `${perCycle(s.calls).padStart(11)}  ${(s.rows / Math.max(1, s.calls)).toFixed(1).padStart(9)}  ${perCycle(s.execMillis).padStart(13)}  ${s.nested ? 'nested: ' : ''}${s.query}`,
    ),
  ];
}
