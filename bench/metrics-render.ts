/**
 * /metrics render time and size with 10 and with 100,000 held locks (C4).
 *
 * Locks are written straight into the store with one SQL INSERT (not 100,000
 * HTTP calls), into a real server's embedded (PGlite) and PostgreSQL stores.
 * Each scrape is timed end to end over HTTP, in both formats. The store count
 * behind lock_held / lock_sessions_active runs in the background every 5 s
 * (exporter/store-gauges.ts), not in the scrape; its own time is printed beside.
 *
 *   npm run bench:metrics                   # both stores
 *   npm run bench:metrics -- embedded       # one store
 *   BENCH_SCRAPES=50 npm run bench:metrics  # more samples per case
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../lock/config.js';
import { startHoldfastServer } from '../server/holdfast-server.js';
import { PgDatabase } from '../lock/store/sql/pg-database.js';
import { PgliteDatabase } from '../lock/store/sql/pglite-database.js';
import type { SqlDatabase } from '../lock/store/sql/queryable.js';
import { SqlLockStore } from '../lock/store/sql/sql-store.js';
import { startPostgres } from '../test/support/postgres.js';

type StoreName = 'embedded' | 'postgres';
const HELD = [10, 100_000] as const;
const SCRAPES = Number(process.env.BENCH_SCRAPES ?? 20);
const WARMUP = 3;
const OPENMETRICS = 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5';

interface Row {
  store: StoreName;
  held: number;
  format: 'text' | 'openmetrics';
  medianMs: number;
  p95Ms: number;
  bytes: number;
  lines: number;
  storeCountMs: number;
}

async function openDatabase(store: StoreName): Promise<{ db: SqlDatabase; close: () => Promise<void> }> {
  if (store === 'embedded') {
    const db = await PgliteDatabase.open();
    return { db, close: async () => {} };
  }
  const cluster = await startPostgres();
  const db = new PgDatabase(await cluster.createDatabase(), 4);
  return { db, close: () => cluster.stop() };
}

/** One live session holding `count` live locks, written in one statement. */
async function holdLocks(db: SqlDatabase, count: number, now: number): Promise<void> {
  await db.query('DELETE FROM holdfast_locks');
  await db.query('DELETE FROM holdfast_sessions');
  await db.query(
    `INSERT INTO holdfast_sessions (session_id, owner, ttl_millis, created_at, last_heartbeat_at, expires_at)
     VALUES ('s_bench', 'bench', 300000, $1, $1, $2)`,
    [now, now + 3_600_000],
  );
  await db.query(
    `INSERT INTO holdfast_locks (key, session_id, owner, fencing_token, ttl_millis, granted_at, expires_at)
     SELECT 'bench/' || g, 's_bench', 'bench', nextval('holdfast_fencing_seq'), 600000, $1, $2
     FROM generate_series(1, $3::int) AS g`,
    [now, now + 3_600_000, count],
  );
}

async function scrapeOnce(url: string, accept: string | undefined): Promise<{ ms: number; body: string }> {
  const started = performance.now();
  const response = await fetch(`${url}/metrics`, accept ? { headers: { accept } } : {});
  const body = await response.text();
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return { ms: performance.now() - started, body };
}

// One series per policy (issue 26); the bench runs without a policies file: policy="" holds every key.
const heldOnPage = (body: string) => Number(/^lock_held\{[^}]*policy=""[^}]*\} (\d+)$/m.exec(body)?.[1]);

/** Median time of the store's own count (what the background refresh costs). */
async function storeCountMs(store: SqlLockStore): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    await store.summary();
    times.push(performance.now() - started);
  }
  return percentile(times.sort((a, b) => a - b), 0.5);
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;

async function benchStore(store: StoreName): Promise<Row[]> {
  const { db, close } = await openDatabase(store);
  const lockStore = new SqlLockStore(db, store);
  await lockStore.init();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'holdfast-bench-'));
  const server = await startHoldfastServer(
    // The sweeper would race the inserted rows; it is not what this measures.
    loadConfig({ HOLDFAST_STORE: store, HOLDFAST_PORT: '0', HOLDFAST_DATA_DIR: dataDir, HOLDFAST_SWEEP_INTERVAL_MS: '60000', DATABASE_URL: 'unused' }),
    { store: lockStore, logDestination: { write: () => {} } },
  );
  const rows: Row[] = [];
  try {
    for (const held of HELD) {
      await holdLocks(db, held, Date.now());
      // Wait for the background refresh to see the new rows (at most one refresh interval).
      for (let tries = 0; heldOnPage((await scrapeOnce(server.url, undefined)).body) !== held; tries++) {
        if (tries > 100) throw new Error('lock_held never reached the inserted count');
        await new Promise((r) => setTimeout(r, 100));
      }
      const countMs = await storeCountMs(lockStore);
      for (const format of ['text', 'openmetrics'] as const) {
        const accept = format === 'openmetrics' ? OPENMETRICS : undefined;
        for (let i = 0; i < WARMUP; i++) await scrapeOnce(server.url, accept);
        const times: number[] = [];
        let body = '';
        for (let i = 0; i < SCRAPES; i++) ({ ms: times[i], body } = await scrapeOnce(server.url, accept));
        if (heldOnPage(body) !== held) throw new Error(`lock_held says ${heldOnPage(body)}, expected ${held}`);
        times.sort((a, b) => a - b);
        rows.push({
          store,
          held,
          format,
          medianMs: percentile(times, 0.5),
          p95Ms: percentile(times, 0.95),
          bytes: Buffer.byteLength(body),
          lines: body.split('\n').filter((l) => l && !l.startsWith('#')).length,
          storeCountMs: countMs,
        });
      }
    }
  } finally {
    await server.stop();
    await close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}

const requested = process.argv.slice(2).filter((a): a is StoreName => a === 'embedded' || a === 'postgres');
const stores: StoreName[] = requested.length > 0 ? requested : ['embedded', 'postgres'];
const rows: Row[] = [];
for (const store of stores) rows.push(...(await benchStore(store)));

console.log(`/metrics render, ${SCRAPES} scrapes per case after ${WARMUP} warm-up (wall time over HTTP on 127.0.0.1)`);
console.table(
  rows.map((r) => ({
    store: r.store,
    'held locks': r.held.toLocaleString('en'),
    format: r.format,
    'median ms': r.medianMs.toFixed(2),
    'p95 ms': r.p95Ms.toFixed(2),
    'store count ms (background)': r.storeCountMs.toFixed(2),
    bytes: r.bytes,
    samples: r.lines,
  })),
);
process.exit(0);
