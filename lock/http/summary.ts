/**
 * A5: the overview the console shows — counts from the store, recent rates
 * and S1 availability from what this server answered in the last minutes.
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

const WINDOWS = { '1m': 60, '5m': 300 } as const;

export async function buildSummary(service: LockService) {
  const [{ heldLocks, activeSessions }, waiters, deadlockCycles] = await Promise.all([
    service.store.summary(),
    service.waiterTotal(),
    service.deadlockCycles(),
  ]);
  const { activity } = service;
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
  return {
    backend: service.backend,
    at: Date.now(),
    heldLocks,
    activeSessions,
    waiters,
    deadlockCycles,
    rates: Object.fromEntries(Object.entries(WINDOWS).map(([name, seconds]) => [name, ratesOver(seconds)])),
    slo: {
      objective: SLO_S1.objective,
      windows: {
        ...Object.fromEntries(
          Object.entries(WINDOWS).map(([name, seconds]) => [
            name,
            slo(activity.count('slo:requests', seconds), activity.count('slo:bad', seconds)),
          ]),
        ),
        sinceStart: slo(activity.total('slo:requests'), activity.total('slo:bad')),
      },
    },
  };
}

function round(rate: number): number {
  return Math.round(rate * 1000) / 1000;
}
