/** The SQL store's summary: live sessions and held locks by the database clock, and how far the sweep lags. */
import type { BackendName } from '../../../contract/records.js';
import type { StoreSummary } from '../spi.js';
import type { SqlDatabase } from './queryable.js';
import { guardSql } from './sql-errors.js';
import { LIVE_LOCK } from './sql-rows.js';

export async function summarize(db: SqlDatabase, backend: BackendName): Promise<StoreSummary> {
  const rows = await guardSql(backend, () =>
    db.query(
      `WITH n AS (SELECT holdfast_now_ms() AS now),
         live AS (SELECT l.granted_at FROM holdfast_locks l, n WHERE ${LIVE_LOCK('l', 'n.now')})
         SELECT
           (SELECT count(*) FROM live)::int AS held,
           (SELECT count(*) FROM holdfast_sessions s, n WHERE s.expires_at > n.now)::int AS sessions,
           COALESCE((SELECT n.now - min(granted_at) FROM live, n GROUP BY n.now), 0) AS oldest,
           -- Two index-ordered min() reads: the oldest expiry still in each table.
           (SELECT n.now - LEAST(COALESCE((SELECT min(expires_at) FROM holdfast_sessions), n.now),
                                 COALESCE((SELECT min(expires_at) FROM holdfast_locks), n.now)) FROM n) AS overdue`,
    ),
  );
  return {
    heldLocks: Number(rows[0]!.held),
    activeSessions: Number(rows[0]!.sessions),
    oldestHeldMillis: Math.max(0, Number(rows[0]!.oldest)),
    sweepLagMillis: Math.max(0, Number(rows[0]!.overdue)),
  };
}
