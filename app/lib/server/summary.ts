/**
 * Turns the server's A5 summary (lock/http/summary.ts) into the console's
 * Overview; the mapping lives in this one function.
 *
 * A5: { backend, at, heldLocks, activeSessions, waiters, deadlockCycles,
 *       rates: { '1m'|'5m': { acquire{outcome}, renew, release, contention{contended,exceeded},
 *                             sessionExpired{ttl,closed,killed}, forceRevoke } },
 *       slo: { objective, windows: { '1m'|'5m'|'sinceStart': { requests, bad, availability|null } } } }
 */
import type { AvailabilityWindow, Overview } from '../overview';

type Json = Record<string, unknown>;

const S1_OBJECTIVE = 0.999;

function obj(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

function num(value: unknown, fallback = 0): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function numberRecord(value: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(obj(value))) out[k] = num(v);
  return out;
}

function sum(record: Record<string, number>, names?: readonly string[]): number {
  return (names ?? Object.keys(record)).reduce((total, name) => total + (record[name] ?? 0), 0);
}

const WINDOW_LABELS: Record<string, string> = { sinceStart: 'since start' };

export function normalizeSummary(raw: unknown, now: number): Overview {
  const body = obj(raw);
  const rates1m = obj(obj(body.rates)['1m']);
  const slo = obj(body.slo);
  const availability: AvailabilityWindow[] = Object.entries(obj(slo.windows)).map(([window, value]) => {
    const w = obj(value);
    return {
      window: WINDOW_LABELS[window] ?? window,
      ratio: typeof w.availability === 'number' ? w.availability : null,
      requests: num(w.requests),
    };
  });
  if (availability.length === 0) availability.push({ window: '5m', ratio: null });
  const expired = numberRecord(rates1m.sessionExpired);
  return {
    at: num(body.at, now),
    backend: typeof body.backend === 'string' ? body.backend : 'unknown',
    heldLocks: num(body.heldLocks),
    activeSessions: num(body.activeSessions),
    waiters: num(body.waiters),
    acquireRates: numberRecord(rates1m.acquire),
    contentionRate: sum(numberRecord(rates1m.contention)),
    // A session closed by its owner is not lost; one that expired or was killed is.
    sessionLossRate: sum(expired, ['ttl', 'killed']),
    availability,
    slo: { objective: num(slo.objective, S1_OBJECTIVE) },
    links: {},
  };
}
