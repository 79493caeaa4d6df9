/**
 * Configuration (contract C5): environment variables, all optional on the
 * embedded default. Invalid values stop the server at start with a clear message.
 */
import { z } from 'zod';
import { LOCK_TTL_MILLIS } from '../contract/wire-rules.js';

const intFrom = (min: number, max: number, fallback: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .optional()
    .transform((v) => v ?? fallback);

/**
 * How long a caller may take to send its request, and to stay idle between requests
 * (issue 24 item 8). The handler's own time (an L4 waiting up to 30 s) is not bounded by these.
 */
export interface HttpTimeouts {
  /** Headers and body, from the request's first byte: a trickled body is cut (408) at this. */
  requestMillis: number;
  /** Headers alone, from the request's first byte (a new connection that sends nothing counts from its start). */
  headersMillis: number;
  /** A kept-alive connection with no request in flight is closed this long after its last answer (>= 2000). */
  idleMillis: number;
}

export const HTTP_TIMEOUT_DEFAULTS: HttpTimeouts = {
  requestMillis: 10_000,
  headersMillis: 5_000,
  // Longer than the usual load balancer idle timeout (60 s), so a balancer never reuses a
  // connection the server is just closing.
  idleMillis: 72_000,
};

const schema = z.object({
  HOLDFAST_STORE: z.enum(['embedded', 'postgres', 'etcd']).default('embedded'),
  HOLDFAST_PORT: intFrom(0, 65535, 7070),
  HOLDFAST_HOST: z.string().default('127.0.0.1'),
  DATABASE_URL: z.string().optional(),
  /**
   * Issue 24: a file holding the PostgreSQL password, for a DATABASE_URL without one (so the password
   * is neither in the environment nor in a recipe); refused when others can read it.
   */
  HOLDFAST_DATABASE_PASSWORD_FILE: z.string().optional(),
  ETCD_ENDPOINTS: z.string().optional(),
  HOLDFAST_ADMIN_TOKENS_FILE: z.string().optional(),
  /** v2: a file holding the audit chain's HMAC key (>= 32 bytes); unset = plain SHA-256 chain. */
  HOLDFAST_AUDIT_KEY_FILE: z.string().optional(),
  /**
   * v3 (issue 26): per-prefix lock policies, YAML or JSON (lock/policies-file.ts); re-read on change.
   * A bad file stops the start, naming the line.
   */
  HOLDFAST_POLICIES_FILE: z.string().min(1).optional(),
  HOLDFAST_DATA_DIR: z.string().default('./.holdfast'),
  /** L4's default lock TTL: within the wire's bounds for `ttlMillis` (contract). */
  LOCK_DEFAULT_TTL_MS: intFrom(LOCK_TTL_MILLIS.min, LOCK_TTL_MILLIS.max, LOCK_TTL_MILLIS.default),
  HOLDFAST_SWEEP_INTERVAL_MS: intFrom(50, 60_000, 1000),
  HOLDFAST_CONTENTION_PER_SESSION: intFrom(1, 1_000_000, 50),
  HOLDFAST_CONTENTION_PER_SESSION_BURST: intFrom(1, 1_000_000, 100),
  HOLDFAST_CONTENTION_SHARED: intFrom(1, 10_000_000, 5000),
  HOLDFAST_CONTENTION_SHARED_BURST: intFrom(1, 10_000_000, 10000),
  HOLDFAST_PG_POOL_SIZE: intFrom(1, 1000, 16),
  /** v2: a PostgreSQL that does not answer within these is NOT_LEADER (503), not a hung request. */
  HOLDFAST_PG_CONNECT_TIMEOUT_MS: intFrom(100, 60_000, 1500),
  HOLDFAST_PG_STATEMENT_TIMEOUT_MS: intFrom(100, 600_000, 1500),
  /**
   * v3 (issue 20): a store call unanswered after this counts as failed and turns the server's view of
   * its store down; while down, L1/L3/L4/L6 and the reads answer 503 NOT_LEADER at once. Below the
   * SDK's request timeout (2 s), so a hung store is answered 503 before the caller gives up on it.
   */
  HOLDFAST_STORE_TIMEOUT_MS: intFrom(100, 600_000, 1000),
  /** v3: while the store is counted down, how often the server pings it to see it return. */
  HOLDFAST_STORE_PROBE_INTERVAL_MS: intFrom(10, 10_000, 50),
  /** v2: concurrent server-side waits (L4 with waitMillis > 0) one session may have on one server. */
  HOLDFAST_MAX_WAITS_PER_SESSION: intFrom(1, 10_000, 32),
  /** How often the store-true gauges (lock_held, lock_sessions_active, lock_oldest_held_seconds) are recounted. */
  HOLDFAST_STORE_GAUGE_REFRESH_MS: intFrom(100, 600_000, 5000),
  /**
   * v2: on SIGTERM, how long the server drains (/readyz 503, new L4s 503, everything else still
   * served) before it closes its listener, so load balancers see it leave before connections fail.
   */
  HOLDFAST_DRAIN_DELAY_MS: intFrom(0, 120_000, 5000),
  /** v3 (issue 24): HTTP request, header and idle timeouts (HttpTimeouts); headers <= request. */
  HOLDFAST_HTTP_REQUEST_TIMEOUT_MS: intFrom(1000, 300_000, HTTP_TIMEOUT_DEFAULTS.requestMillis),
  HOLDFAST_HTTP_HEADERS_TIMEOUT_MS: intFrom(500, 300_000, HTTP_TIMEOUT_DEFAULTS.headersMillis),
  HOLDFAST_HTTP_IDLE_TIMEOUT_MS: intFrom(2000, 600_000, HTTP_TIMEOUT_DEFAULTS.idleMillis),
});

export type ServerConfig = z.infer<typeof schema>;

export function loadConfig(env: Record<string, string | undefined> = process.env): ServerConfig {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid configuration: ${problems}`);
  }
  const config = parsed.data;
  if (config.HOLDFAST_STORE === 'postgres' && !config.DATABASE_URL) {
    throw new Error('invalid configuration: HOLDFAST_STORE=postgres needs DATABASE_URL');
  }
  if (config.HOLDFAST_STORE === 'etcd' && !config.ETCD_ENDPOINTS) {
    throw new Error('invalid configuration: HOLDFAST_STORE=etcd needs ETCD_ENDPOINTS');
  }
  if (config.HOLDFAST_HTTP_HEADERS_TIMEOUT_MS > config.HOLDFAST_HTTP_REQUEST_TIMEOUT_MS) {
    throw new Error(
      'invalid configuration: HOLDFAST_HTTP_HEADERS_TIMEOUT_MS must not exceed HOLDFAST_HTTP_REQUEST_TIMEOUT_MS (the request includes its headers)',
    );
  }
  return config;
}

export function httpTimeoutsOf(config: ServerConfig): HttpTimeouts {
  return {
    requestMillis: config.HOLDFAST_HTTP_REQUEST_TIMEOUT_MS,
    headersMillis: config.HOLDFAST_HTTP_HEADERS_TIMEOUT_MS,
    idleMillis: config.HOLDFAST_HTTP_IDLE_TIMEOUT_MS,
  };
}
