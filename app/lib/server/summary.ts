/**
 * Turns the server's A5 summary into the console's Overview. A5 is pinned only
 * loosely by the brief ("counts, 1m/5m rates, SLO figures"), so the mapping
 * lives in this one function.
 */
import type { AvailabilityWindow, Overview } from '../overview';

type Json = Record<string, unknown>;

const S1_OBJECTIVE = 0.999;

function obj(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

function num(value: unknown, fallback = 0): number {
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) ? n : fallback;
}

function numOrNull(value: unknown): number | null {
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) ? n : null;
}

function numberRecord(value: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(obj(value))) out[k] = num(v);
  return out;
}

export function normalizeSummary(raw: unknown, backendHeader: string | null, now: number): Overview {
  const body = obj(raw);
  const counts = { ...body, ...obj(body.counts) };
  const rates1m = obj(obj(body.rates)['1m']);
  const slo = obj(body.slo);
  const windows = obj(slo.windows ?? slo.availability);
  const availability: AvailabilityWindow[] = Object.entries(windows).map(([window, value]) => {
    const w = obj(value);
    return { window, ratio: numOrNull(typeof value === 'number' ? value : w.ratio ?? w.availability), requests: num(w.requests ?? w.total, 0) };
  });
  if (availability.length === 0) availability.push({ window: '5m', ratio: null });
  return {
    at: num(body.at ?? body.now, now),
    backend: typeof body.backend === 'string' ? body.backend : backendHeader ?? 'unknown',
    heldLocks: num(counts.heldLocks ?? counts.held),
    activeSessions: num(counts.activeSessions ?? counts.sessions),
    waiters: num(counts.waiters),
    acquireRates: numberRecord(rates1m.acquire ?? rates1m.acquireByOutcome),
    contentionRate: num(rates1m.contention),
    sessionLossRate: num(rates1m.sessionLoss ?? rates1m.sessionsLost ?? rates1m.sessionExpired),
    availability,
    slo: { objective: num(slo.objective, S1_OBJECTIVE) },
    links: {},
  };
}
