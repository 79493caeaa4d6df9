/**
 * One-off check behind the design note's PGlite paragraph: the raw
 * acquire+release work on an in-memory PGlite, one statement per row versus
 * the multi-row statements of the coalescing prototype, same rows, same thread.
 * Run: `npx tsx bench/lib/pglite-coalescing-check.ts` (bounded: ROWS cycles per variant).
 */
import { PGlite } from '@electric-sql/pglite';
import { RAW_ACQUIRE_MANY_SQL, RAW_ACQUIRE_SQL, RAW_RELEASE_MANY_SQL, RAW_RELEASE_SQL, RAW_SCHEMA } from './raw-backend.js';

const ROWS = Number(process.env.ROWS ?? 4096);
const BATCH = Number(process.env.BATCH ?? 16);

const db = await PGlite.create();
for (const statement of RAW_SCHEMA) await db.query(statement);

async function timed(label: string, work: () => Promise<void>): Promise<void> {
  await work(); // warm-up pass: plans, caches, JIT
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  console.log(`${label.padEnd(32)} ${(ROWS / seconds).toFixed(0).padStart(6)} cycles/s  ${((cpu.user + cpu.system) / 1000 / ROWS).toFixed(3)} CPU ms/cycle`);
}

let round = 0;
await timed('one row per statement', async () => {
  round += 1;
  for (let i = 0; i < ROWS; i += 1) {
    const key = `r${round}-${i}`;
    const token = (await db.query<{ fencing_token: string }>(RAW_ACQUIRE_SQL, [key, 's', Date.now()])).rows[0]!.fencing_token;
    await db.query(RAW_RELEASE_SQL, [key, token]);
  }
});
await timed(`${BATCH} rows per statement (unnest)`, async () => {
  round += 1;
  for (let i = 0; i < ROWS; i += BATCH) {
    const keys = Array.from({ length: BATCH }, (_, j) => `r${round}-${i + j}`);
    const won = await db.query<{ key: string; fencing_token: string }>(RAW_ACQUIRE_MANY_SQL, [keys, keys.map(() => 's'), Date.now()]);
    await db.query(RAW_RELEASE_MANY_SQL, [won.rows.map((r) => r.key), won.rows.map((r) => r.fencing_token)]);
  }
});
await db.close();
