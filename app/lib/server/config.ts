/** Console settings, read from the environment at request time (C5 names). */

export function holdfastUrl(): string {
  return (process.env.HOLDFAST_URL ?? 'http://127.0.0.1:7070').replace(/\/+$/, '');
}

export function prometheusUrl(): string | undefined {
  const url = process.env.PROMETHEUS_URL?.trim();
  return url ? url.replace(/\/+$/, '') : undefined;
}

export function grafanaUrl(): string | undefined {
  const url = process.env.GRAFANA_URL?.trim();
  return url ? url.replace(/\/+$/, '') : undefined;
}

/** Upstream calls give up after this long so a hung server shows as unreachable, not as a spinner. */
export const UPSTREAM_TIMEOUT_MILLIS = 4_000;
