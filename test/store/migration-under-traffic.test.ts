/**
 * A migration meets live traffic (a rolling upgrade: the previous release keeps serving, and it cannot
 * retry a deadlock). The migration takes its tables in one LOCK and gives up on a short wait, so a
 * serving transaction that holds one of them and then needs another is never the one aborted: it is
 * answered, and the migration completes after it, by retrying.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MIGRATIONS } from '../../lock/store/sql/migrations/index.js';
import { PgDatabase } from '../../lock/store/sql/pg-database.js';
import { migrate } from '../../lock/store/sql/schema.js';
import { sharedPostgres } from '../support/server.js';

let url: string;
let db: PgDatabase;
const clients: pg.Client[] = [];

beforeAll(async () => {
  url = await (await sharedPostgres()).createDatabase();
  db = new PgDatabase(url);
  // The schema the previous release serves on: every migration but the newest.
  await migrate(db, MIGRATIONS.slice(0, -1));
}, 60_000);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.end()));
  await db.close();
});

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  clients.push(client);
  return client;
}

/** Whether backend `pid` waits for a lock on `table`. */
async function someoneWaitsFor(observer: pg.Client, table: string, pid: number): Promise<boolean> {
  const found = await observer.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE NOT l.granted AND c.relname = $1 AND l.pid = $2`,
    [table, pid],
  );
  return Number(found.rows[0]!.n) > 0;
}

async function migrationPid(observer: pg.Client, others: number[]): Promise<number> {
  for (let i = 0; ; i++) {
    const found = await observer.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND NOT (pid = ANY($1::int[]))`,
      [others],
    );
    if (found.rows.length > 0) return Number(found.rows[0]!.pid);
    expect(i, 'the migration comes to wait for a table').toBeLessThan(2_000);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const pidOf = async (client: pg.Client) => Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);

it('a serving transaction that waits behind the migration for one table while holding another is answered, and the migration completes', async () => {
  // The order that aborted a serving instance mid-roll: the migration queues for holdfast_locks behind an
  // in-flight transaction, a serving transaction holding holdfast_waiters queues behind the migration (so it
  // waited first, and runs the deadlock check first), then the migration gets holdfast_locks and needs
  // holdfast_waiters. Default deadlock_timeout (1 s).
  const inFlight = await connect();
  const serving = await connect();
  const observer = await connect();
  await inFlight.query('BEGIN');
  await inFlight.query('LOCK TABLE holdfast_locks IN ROW EXCLUSIVE MODE');
  await serving.query('BEGIN');
  await serving.query('LOCK TABLE holdfast_waiters IN ROW EXCLUSIVE MODE');
  const [inFlightPid, servingPid] = [await pidOf(inFlight), await pidOf(serving)];

  let migrationError: unknown;
  const migrating = migrate(db).catch((error: unknown) => {
    migrationError = error;
  });
  const migrator = await migrationPid(observer, [inFlightPid, servingPid]);
  const read = serving.query<{ n: string }>('SELECT count(*) AS n FROM holdfast_locks').then(
    (result) => Number(result.rows[0]!.n),
    (error: unknown) => error,
  );
  for (let i = 0; !(await someoneWaitsFor(observer, 'holdfast_locks', servingPid)); i++) {
    expect(i, 'the serving read queues for holdfast_locks').toBeLessThan(2_000);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await inFlight.query('COMMIT');

  expect(await read).toBe(0);
  expect(migrator).toBeGreaterThan(0);
  // Held a while longer, past several of the migration's waits: it keeps giving up, never the server.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  await serving.query('SELECT count(*) FROM holdfast_waiters');
  await serving.query('COMMIT');

  await migrating;
  expect(migrationError).toBeUndefined();
  const versions = (await observer.query<{ version: number }>('SELECT version FROM holdfast_schema_migrations ORDER BY version')).rows.map((r) => r.version);
  expect(versions).toEqual(MIGRATIONS.map((m) => m.version));
}, 60_000);
