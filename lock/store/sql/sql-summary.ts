/** The SQL store's summary: live sessions and held locks by the database clock, and how far the sweep lags. */
import type { BackendName } from '../../../contract/records.js';
import { NO_POLICY, type LockPolicy } from '../../../contract/policies.js';
import { emptyRows } from '../policy-tally.js';
import type { PolicyHeldSummary, StoreSummary, SummaryQuery } from '../spi.js';
import type { SqlDatabase } from './queryable.js';
import { guardSql } from './sql-errors.js';
import { LIVE_LOCK } from './sql-rows.js';

export async function summarize(db: SqlDatabase, backend: BackendName, query: SummaryQuery = {}): Promise<StoreSummary> {
  const [rows, byPolicy] = await Promise.all([
    guardSql(backend, () =>
      db.query(
        `WITH n AS (SELECT holdfast_now_ms() AS now),
           -- Every live grant: lock rows and the holds of multi-holder keys (migration 13), each counted.
           live AS (SELECT l.granted_at FROM holdfast_locks l, n WHERE ${LIVE_LOCK('l', 'n.now')}
                    UNION ALL SELECT h.granted_at FROM holdfast_holds h, n WHERE ${LIVE_LOCK('h', 'n.now')})
           SELECT
             (SELECT count(*) FROM live)::int AS held,
             (SELECT count(*) FROM holdfast_sessions s, n WHERE s.expires_at > n.now)::int AS sessions,
             COALESCE((SELECT n.now - min(granted_at) FROM live, n GROUP BY n.now), 0) AS oldest,
             -- Two index-ordered min() reads: the oldest expiry still in each table.
             (SELECT n.now - LEAST(COALESCE((SELECT min(expires_at) FROM holdfast_sessions), n.now),
                                   COALESCE((SELECT min(expires_at) FROM holdfast_locks), n.now),
                                   COALESCE((SELECT min(expires_at) FROM holdfast_holds), n.now)) FROM n) AS overdue`,
      ),
    ),
    query.policies ? heldByPolicy(db, backend, query.policies) : undefined,
  ]);
  return {
    heldLocks: Number(rows[0]!.held),
    activeSessions: Number(rows[0]!.sessions),
    oldestHeldMillis: Math.max(0, Number(rows[0]!.oldest)),
    sweepLagMillis: Math.max(0, Number(rows[0]!.overdue)),
    ...(byPolicy ? { byPolicy } : {}),
  };
}

/** Each live lock under its longest-prefix policy (contract/policies.ts's rule, restated in SQL once, here). */
async function heldByPolicy(db: SqlDatabase, backend: BackendName, policies: readonly LockPolicy[]): Promise<PolicyHeldSummary[]> {
  const counted = await guardSql(backend, () =>
    db.query(
      `WITH n AS (SELECT holdfast_now_ms() AS now),
         p AS (SELECT * FROM unnest($1::text[], $2::text[]) AS p(name, prefix)),
         grants AS (
           SELECT l.key, l.granted_at FROM holdfast_locks l, n WHERE ${LIVE_LOCK('l', 'n.now')}
           UNION ALL SELECT h.key, h.granted_at FROM holdfast_holds h, n WHERE ${LIVE_LOCK('h', 'n.now')}),
         live AS (
           SELECT l.granted_at,
                  COALESCE((SELECT p.name FROM p WHERE starts_with(l.key, p.prefix) ORDER BY length(p.prefix) DESC LIMIT 1), $3) AS policy
           FROM grants l)
       SELECT live.policy, count(*)::int AS held, n.now - min(live.granted_at) AS oldest FROM live, n GROUP BY live.policy, n.now`,
      [policies.map((p) => p.name), policies.map((p) => p.prefix), NO_POLICY],
    ),
  );
  const rows = emptyRows(policies);
  for (const row of counted) {
    const target = rows.find((r) => r.policy === row.policy);
    if (!target) continue;
    target.heldLocks = Number(row.held);
    target.oldestHeldMillis = Math.max(0, Number(row.oldest));
  }
  return rows;
}
