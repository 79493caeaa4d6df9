/**
 * The store-true gauges (`lock_held`, `lock_sessions_active`) without putting
 * the store on the scrape path. Counting live locks is O(locks) in every store
 * (SQL count, etcd prefix scan): 50–100 ms at 100,000 locks. So the count is
 * refreshed in the background and a scrape reads the latest figure, which
 * keeps /metrics time flat in the number of keys and keeps /metrics answering
 * — with the last known figure — while the store is unreachable (refreshes
 * are refused at once while the server counts its store down, `lock_store_up` 0;
 * ones that reach a failing store show as lock_store_seconds{op="summary",outcome!="ok"}).
 */
import { NO_POLICY } from '../contract/policies.js';
import type { PolicyHeldSummary, StoreSummary } from '../lock/store/spi.js';
import type { GaugeSeries } from './server-metrics.js';
import { singleFlight } from './single-flight.js';

/** Fresh enough for a 15 s scrape interval; one count per 5 s per instance (HOLDFAST_STORE_GAUGE_REFRESH_MS). */
export const STORE_GAUGE_REFRESH_MILLIS = 5_000;

export interface StoreGauges {
  /** The latest summary; waits only for the very first count. */
  latest(): Promise<StoreSummary>;
  stop(): void;
}

export function refreshStoreGauges(read: () => Promise<StoreSummary>, intervalMillis = STORE_GAUGE_REFRESH_MILLIS): StoreGauges {
  let last: StoreSummary | undefined;
  const refresh = singleFlight(async () => {
    last = await read();
    return last;
  });
  const first = refresh();
  first.catch(() => {}); // a failed first count is retried by the timer and by the first scrape
  const timer = setInterval(() => refresh().catch(() => {}), intervalMillis);
  timer.unref();
  return {
    latest: () => (last ? Promise.resolve(last) : refresh()),
    stop: () => clearInterval(timer),
  };
}

/**
 * `lock_held{policy}` and `lock_oldest_held_seconds{policy}` from a summary: a series per policy row,
 * or — without policies (the core asks for no split then) — the totals as `policy=""`.
 */
export function policySeries(summary: StoreSummary, figure: 'heldLocks' | 'oldestHeldSeconds'): GaugeSeries[] {
  const rows: readonly PolicyHeldSummary[] = summary.byPolicy ?? [
    { policy: NO_POLICY, heldLocks: summary.heldLocks, oldestHeldMillis: summary.oldestHeldMillis },
  ];
  return rows.map((row) => ({
    labels: { policy: row.policy },
    value: figure === 'heldLocks' ? row.heldLocks : row.oldestHeldMillis / 1000,
  }));
}
