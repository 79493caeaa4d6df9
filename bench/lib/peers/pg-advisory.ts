/**
 * `pg_advisory_lock` from a `pg` pool, the PostgreSQL-native lock many services reach for: a
 * worker checks a connection out, locks the key's hash (blocking in PostgreSQL's lock manager
 * while another connection holds it), unlocks on the same connection and returns it. The pool
 * has one connection per worker, so a checkout never waits on the pool.
 */
import pg from 'pg';
import type { PeerLoad, PeerSystem } from './system.js';

const LOCK = 'SELECT pg_advisory_lock(hashtext($1))';
const UNLOCK = 'SELECT pg_advisory_unlock(hashtext($1)) AS released';

export interface PgAdvisoryOptions {
  databaseUrl: string;
  /** The cluster's CPU so far (postmaster and every backend; it serves this system alone). */
  cpuMillis: () => number;
  waitBudgetMillis: number;
}

export function pgAdvisorySystem(options: PgAdvisoryOptions): PeerSystem {
  return {
    id: 'pg-advisory',
    label: 'pg_advisory_lock (pg pool)',
    serverCpuMillis: () => ({ postgres: options.cpuMillis() }),
    async open(workers: number): Promise<PeerLoad> {
      const pool = new pg.Pool({
        connectionString: options.databaseUrl,
        max: workers,
        // PostgreSQL waits forever by default; the bench bounds a wait like every other system's.
        lock_timeout: options.waitBudgetMillis,
      });
      // Every connection is opened before the window: connecting is not a lock cycle.
      const warm = await Promise.all(Array.from({ length: workers }, () => pool.connect()));
      for (const client of warm) client.release();
      return {
        async acquire(_worker, key) {
          const client = await pool.connect();
          try {
            await client.query(LOCK, [key]);
          } catch (error) {
            client.release();
            // 55P03 lock_not_available: the wait budget ran out.
            if ((error as { code?: string }).code === '55P03') return null;
            throw error;
          }
          return {
            async release() {
              try {
                const result = await client.query<{ released: boolean }>(UNLOCK, [key]);
                if (result.rows[0]?.released !== true) throw new Error('pg_advisory_unlock: not held');
              } finally {
                client.release();
              }
            },
          };
        },
        close: () => pool.end(),
      };
    },
  };
}
