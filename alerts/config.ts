/**
 * Deployment-facing knobs of the generated monitoring: the scrape job name the
 * rules select on, where runbooks live, and the health-alert thresholds. One
 * place, so a reviewer can read every number that decides when someone is paged.
 */

/** The Prometheus scrape job that scrapes Holdfast servers (`job_name` in prometheus.yml). */
export const HOLDFAST_JOB = 'holdfast';

/**
 * Where `runbook_url` points. Alertmanager templates need an absolute URL; change
 * this to your fork and run `npm run gen`. The file part always maps to `runbooks/<slug>.md`.
 */
export const RUNBOOK_BASE_URL = 'https://github.com/holdfast/holdfast/blob/main/runbooks/';

/** Thresholds of the health alerts (see runbooks/ for why each value). */
export const HEALTH_THRESHOLDS = {
  /** Session-loss spike: TTL expiries in 10 m above this share of active sessions… */
  sessionTtlExpiryShare: 0.1,
  /** …and above this absolute count, so a 3-session dev cluster does not page. */
  sessionTtlExpiryMin: 5,
  /** Share of acquires refused with CONTENTION_EXCEEDED, sustained. */
  contentionExceededShare: 0.05,
  /** Waiters summed over a backend's instances. */
  waiters: 100,
  /** Share of server-side waits that fell back to polling (broken watches). */
  waitFallbackShare: 0.1,
  /** p99 latency (seconds) of store writes on the request path. */
  storeWriteP99Seconds: 0.5,
} as const;

/** Store operations on the request path whose latency a client waits for. */
export const STORE_WRITE_OPS = ['try_acquire', 'renew', 'release', 'heartbeat'] as const;
