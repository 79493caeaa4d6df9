/**
 * The `backend` label of `lock_session_lost_total`, taken from the
 * `holdfast-backend` response header.
 *
 * The label's value set is closed (postgres | embedded | etcd, read from the
 * metric table). A header that is missing or outside that set (a proxy that
 * strips headers, a newer server with a backend this SDK does not know) must
 * not leak into the label, so: a session keeps the backend named by the latest
 * valid header it saw; a session that never saw a valid one reports
 * `embedded`, the server's default store (C5).
 */
import { METRICS } from '../contract/metric-table.js';

export type BackendLabel = (typeof METRICS.lockSessionLostTotal.labels.backend)[number];

const KNOWN: readonly string[] = METRICS.lockSessionLostTotal.labels.backend;

export const FALLBACK_BACKEND: BackendLabel = 'embedded';

export function parseBackend(header: string | null): BackendLabel | undefined {
  if (header === null) return undefined;
  const value = header.trim().toLowerCase();
  return KNOWN.includes(value) ? (value as BackendLabel) : undefined;
}
