/**
 * A5: the overview the console shows — counts from the store, recent rates
 * and S1 availability from what this server answered in the last minutes.
 * For a scoped viewer the lock, session and waiter counts are of its keys only;
 * the rates, SLO and deadlock count stay the service's (they name no key).
 */
import type { LockService } from '../core/lock-service.js';
import {
  ACQUIRE_OUTCOMES,
  CONTENTION_REASONS,
  FORCE_REVOKE_OUTCOMES,
  RELEASE_OUTCOMES,
  RENEW_OUTCOMES,
  SESSION_EXPIRY_CAUSES,
  SLO_S1,
} from '../../contract/metric-table.js';
import type { Summary } from './schemas.js';

const WINDOWS = { '1m': 60, '5m': 300 } as const;

/**
 * What the summary reads of the activity window (lock/core/activity-window.ts): counts the
 * telemetry wrote (exporter/lock-telemetry.ts) under `<route>:<outcome>`, `slo:requests`,
 * `slo:bad`, `contention:<reason>`, `session_expired:<cause>` and `force_revoke:<outcome>`.
 */
export interface RecentActivity {
  /** Events per second over the last `seconds`. */
  rate(name: string, seconds: number): number;
  count(name: string, seconds: number): number;
  /** Since this server started. */
  total(name: string): number;
}

/** The counts a scoped viewer's summary shows instead of the store's (its keys and their holders). */
export type ScopedCounts = () => Promise<{ heldLocks: number; activeSessions: number; waiters: number }>;

export async function buildSummary(service: LockService, activity: RecentActivity, scopedCounts?: ScopedCounts): Promise<Summary> {
  const [{ heldLocks, activeSessions, waiters }, deadlockCycles] = await Promise.all([
    scopedCounts
      ? scopedCounts()
      : Promise.all([service.storeSummary(), service.waiterTotal()]).then(([store, waiters]) => ({ ...store, waiters })),
    service.deadlockCycles(),
  ]);
  const ratesOver = (seconds: number) => {
    const per = (prefix: string, names: readonly string[]) =>
      Object.fromEntries(names.map((n) => [n, round(activity.rate(`${prefix}:${n}`, seconds))]));
    return {
      acquire: per('acquire', ACQUIRE_OUTCOMES),
      renew: per('renew', RENEW_OUTCOMES),
      release: per('release', RELEASE_OUTCOMES),
      contention: per('contention', CONTENTION_REASONS),
      sessionExpired: per('session_expired', SESSION_EXPIRY_CAUSES),
      forceRevoke: per('force_revoke', FORCE_REVOKE_OUTCOMES),
    };
  };
  const slo = (requests: number, bad: number) => ({
    requests,
    bad,
    availability: requests === 0 ? null : 1 - bad / requests,
  });
  const sloOver = (seconds: number) => slo(activity.count('slo:requests', seconds), activity.count('slo:bad', seconds));
  return {
    backend: service.backend,
    at: Date.now(),
    heldLocks,
    activeSessions,
    waiters,
    deadlockCycles,
    rates: { '1m': ratesOver(WINDOWS['1m']), '5m': ratesOver(WINDOWS['5m']) },
    slo: {
      objective: SLO_S1.objective,
      windows: {
        '1m': sloOver(WINDOWS['1m']),
        '5m': sloOver(WINDOWS['5m']),
        sinceStart: slo(activity.total('slo:requests'), activity.total('slo:bad')),
      },
    },
  };
}

function round(rate: number): number {
  return Math.round(rate * 1000) / 1000;
}
