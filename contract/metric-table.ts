/**
 * The single declarative source of every Holdfast metric (contract C4).
 *
 * The server registry, the SDK meters, the contract test, the Grafana
 * dashboard generator and the Prometheus rule generator all read this table,
 * so a renamed metric or label breaks the build instead of a panel or a page.
 * No label here may take its value from a key, session, owner, token or request:
 * every label has a closed value set.
 */
import { NO_POLICY } from './policies.js';
import { BACKENDS, LOCK_KINDS, lockKindOf, type LockKind } from './wire-rules.js';

export { LOCK_KINDS, lockKindOf, type LockKind };

export type MetricType = 'counter' | 'gauge' | 'histogram';
export type Emitter = 'server' | 'sdk';

export interface MetricSpec {
  readonly name: string;
  readonly type: MetricType;
  readonly help: string;
  /** Base unit for the name suffix and dashboards ("seconds", "attempts", "locks", ...). */
  readonly unit: string;
  /** Label name → its closed set of values. */
  readonly labels: Readonly<Record<string, readonly string[]>>;
  readonly emitter: Emitter;
  readonly buckets?: readonly number[];
  /**
   * Labels whose value is fixed when the process starts (build version,
   * runtime version), not a closed set: an info metric's one series. Their
   * value lists in `labels` stay empty.
   */
  readonly buildLabels?: readonly string[];
  /**
   * Labels whose values are the names in `HOLDFAST_POLICIES_FILE` (SPEC v3 "teams"), besides the
   * closed set in `labels` (`[NO_POLICY]`, keys under no policy): bounded by the operator's file, not
   * by traffic, so a family has at most (policies + 1) series per closed-set combination.
   */
  readonly policyLabels?: readonly string[];
  /**
   * Histograms only: keep one exemplar per bucket (the latest observation's
   * trace_id / span_id), rendered when the scraper asks for OpenMetrics.
   */
  readonly exemplars?: boolean;
}

/** Lock latencies: sub-millisecond handoffs up to the 30 s maximum wait. */
export const LOCK_LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
] as const;

/** Store round trips: 100 µs (embedded) to 5 s (a stalled backend). */
export const STORE_LATENCY_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
] as const;

/** How long a lock is held, grant to end: a second to a day (TTL renewals can keep a lock for hours). */
export const HOLD_DURATION_BUCKETS = [0.01, 0.1, 0.5, 1, 5, 15, 30, 60, 300, 900, 1800, 3600, 14400, 86400] as const;

/** SDK attempts per acquire: maxAttempts defaults to 12. */
export const ATTEMPT_BUCKETS = [1, 2, 3, 4, 6, 8, 12, 16, 24] as const;

export const ACQUIRE_OUTCOMES = [
  'granted',
  'contended',
  'contention_exceeded',
  'session_not_found',
  'invalid',
  'not_leader',
  // Refused because this instance is draining (SIGTERM): retry elsewhere; not counted by S1.
  'draining',
  'error',
] as const;
export const RELEASE_OUTCOMES = ['released', 'lost', 'invalid', 'error'] as const;
export const RENEW_OUTCOMES = ['renewed', 'lost', 'invalid', 'error'] as const;
export const WAIT_OUTCOMES = ['released', 'deadline', 'aborted', 'fallback'] as const;
export const CONTENTION_REASONS = ['contended', 'exceeded'] as const;
export const SESSION_EXPIRY_CAUSES = ['ttl', 'closed', 'killed'] as const;
export const FORCE_REVOKE_OUTCOMES = ['revoked', 'not_held', 'token_mismatch'] as const;
export const STORE_OPS = [
  'open_session',
  'heartbeat',
  'end_session',
  'expire_sessions',
  'expire_locks',
  'try_acquire',
  'renew',
  'release',
  'read_lock',
  'list_locks',
  'list_sessions',
  'force_revoke',
  'list_audit',
  'summary',
  'ping',
] as const;
export const STORE_OUTCOMES = ['ok', 'not_leader', 'error'] as const;
export const HEARTBEAT_OUTCOMES = ['alive', 'session_not_found', 'unauthenticated', 'not_leader', 'error'] as const;
export const CLIENT_ATTEMPT_OUTCOMES = ['granted', 'not_granted', 'error'] as const;
export const HOLD_OUTCOMES = ['released', 'expired', 'revoked', 'session_ended'] as const;


export type AcquireOutcome = (typeof ACQUIRE_OUTCOMES)[number];
export type ReleaseOutcome = (typeof RELEASE_OUTCOMES)[number];
export type RenewOutcome = (typeof RENEW_OUTCOMES)[number];
export type WaitOutcome = (typeof WAIT_OUTCOMES)[number];
export type ContentionReason = (typeof CONTENTION_REASONS)[number];
export type ForceRevokeOutcome = (typeof FORCE_REVOKE_OUTCOMES)[number];
export type StoreOp = (typeof STORE_OPS)[number];
export type StoreOutcome = (typeof STORE_OUTCOMES)[number];
export type HeartbeatOutcome = (typeof HEARTBEAT_OUTCOMES)[number];
export type ClientAttemptOutcome = (typeof CLIENT_ATTEMPT_OUTCOMES)[number];
export type HoldOutcome = (typeof HOLD_OUTCOMES)[number];

const backend = { backend: BACKENDS } as const;
/** `policy`: a policy's name from the policies file, or `NO_POLICY` (""); see `policyLabels`. */
const byPolicy = { ...backend, policy: [NO_POLICY] } as const;

export const METRICS = {
  lockAcquireSeconds: {
    name: 'lock_acquire_seconds',
    type: 'histogram',
    help: 'Time to answer an acquire request, including any server-side wait, by outcome and the kind of grant asked for.',
    unit: 'seconds',
    labels: { ...backend, outcome: ACQUIRE_OUTCOMES, kind: LOCK_KINDS },
    emitter: 'server',
    buckets: LOCK_LATENCY_BUCKETS,
    exemplars: true,
  },
  lockReleaseTotal: {
    name: 'lock_release_total',
    type: 'counter',
    help: 'Release requests answered, by outcome.',
    unit: 'requests',
    labels: { ...backend, outcome: RELEASE_OUTCOMES },
    emitter: 'server',
  },
  lockRenewTotal: {
    name: 'lock_renew_total',
    type: 'counter',
    help: 'Renew requests answered, by outcome.',
    unit: 'requests',
    labels: { ...backend, outcome: RENEW_OUTCOMES },
    emitter: 'server',
  },
  lockWaitSeconds: {
    name: 'lock_wait_seconds',
    type: 'histogram',
    help: 'Time an acquire with waitMillis > 0 spent waiting for a release, by how the wait ended.',
    unit: 'seconds',
    labels: { ...backend, outcome: WAIT_OUTCOMES },
    emitter: 'server',
    buckets: LOCK_LATENCY_BUCKETS,
  },
  lockContentionTotal: {
    name: 'lock_contention_total',
    type: 'counter',
    help: 'Acquire requests refused because the lock was held (contended) or a contention budget was spent (exceeded).',
    unit: 'requests',
    labels: { ...backend, reason: CONTENTION_REASONS },
    emitter: 'server',
  },
  lockHeld: {
    name: 'lock_held',
    type: 'gauge',
    help: 'Locks currently held in the store, by the policy their key falls under ("" for none); read from the store in the background.',
    unit: 'locks',
    labels: byPolicy,
    policyLabels: ['policy'],
    emitter: 'server',
  },
  lockWaiters: {
    name: 'lock_waiters',
    type: 'gauge',
    help: 'Acquire requests currently waiting on this server instance (sum across instances).',
    unit: 'requests',
    labels: backend,
    emitter: 'server',
  },
  lockSessionsActive: {
    name: 'lock_sessions_active',
    type: 'gauge',
    help: 'Sessions currently alive in the store (read from the store at scrape time).',
    unit: 'sessions',
    labels: backend,
    emitter: 'server',
  },
  lockSessionExpiredTotal: {
    name: 'lock_session_expired_total',
    type: 'counter',
    help: 'Sessions ended, by cause: ttl (no heartbeat in time), closed (by the client) or killed (by an operator).',
    unit: 'sessions',
    labels: { ...backend, cause: SESSION_EXPIRY_CAUSES },
    emitter: 'server',
  },
  lockForceRevokeTotal: {
    name: 'lock_force_revoke_total',
    type: 'counter',
    help: 'Locks an operator tried to force-revoke, by outcome.',
    unit: 'requests',
    labels: { ...backend, outcome: FORCE_REVOKE_OUTCOMES },
    emitter: 'server',
  },
  lockDeadlockCycles: {
    name: 'lock_deadlock_cycles',
    type: 'gauge',
    help: 'Cycles in the fleet-wide wait-for graph of waiting sessions, from the store (every instance reports the same figure).',
    unit: 'cycles',
    labels: backend,
    emitter: 'server',
  },
  lockOldestHeldSeconds: {
    name: 'lock_oldest_held_seconds',
    type: 'gauge',
    help: 'Age of the oldest lock currently held in the store, from its grant, by the policy its key falls under ("" for none); 0 when none is held.',
    unit: 'seconds',
    labels: byPolicy,
    policyLabels: ['policy'],
    emitter: 'server',
  },
  lockHoldSeconds: {
    name: 'lock_hold_seconds',
    type: 'histogram',
    help: 'How long locks were held, from grant to end, by how the hold ended and the kind of grant.',
    unit: 'seconds',
    labels: { ...backend, outcome: HOLD_OUTCOMES, kind: LOCK_KINDS },
    emitter: 'server',
    buckets: HOLD_DURATION_BUCKETS,
  },
  lockSweepLagSeconds: {
    name: 'lock_sweep_lag_seconds',
    type: 'gauge',
    help: 'Age of the oldest session or lock expiry that is overdue and not yet swept; 0 when the sweeper is up to date.',
    unit: 'seconds',
    labels: backend,
    emitter: 'server',
  },
  lockStoreUp: {
    name: 'lock_store_up',
    type: 'gauge',
    help: "1 while this server's view of its store is healthy, 0 while it counts the store down (calls failing or outliving their timeout; a probe brings it back).",
    unit: 'state',
    labels: backend,
    emitter: 'server',
  },
  holdfastBuildInfo: {
    name: 'holdfast_build_info',
    type: 'gauge',
    help: 'Always 1; its labels say which Holdfast version and Node.js version this server runs.',
    unit: 'info',
    labels: { version: [], node_version: [] },
    buildLabels: ['version', 'node_version'],
    emitter: 'server',
  },
  lockHeartbeatTotal: {
    name: 'lock_heartbeat_total',
    type: 'counter',
    help: 'Session heartbeats answered, by outcome (counted instead of logged one line each).',
    unit: 'requests',
    labels: { ...backend, outcome: HEARTBEAT_OUTCOMES },
    emitter: 'server',
  },
  lockStoreSeconds: {
    name: 'lock_store_seconds',
    type: 'histogram',
    help: 'Latency of store operations, by operation and outcome.',
    unit: 'seconds',
    labels: { ...backend, op: STORE_OPS, outcome: STORE_OUTCOMES },
    emitter: 'server',
    buckets: STORE_LATENCY_BUCKETS,
  },
  lockSessionLostTotal: {
    name: 'lock_session_lost_total',
    type: 'counter',
    help: 'Sessions the SDK declared lost (heartbeat refused or conservative deadline passed).',
    unit: 'sessions',
    labels: backend,
    emitter: 'sdk',
  },
  lockClientAcquireAttempts: {
    name: 'lock_client_acquire_attempts',
    type: 'histogram',
    help: 'Acquire requests the SDK sent per acquire call, by how the call ended.',
    unit: 'attempts',
    labels: { outcome: CLIENT_ATTEMPT_OUTCOMES },
    emitter: 'sdk',
    buckets: ATTEMPT_BUCKETS,
  },
} as const satisfies Record<string, MetricSpec>;

export type MetricKey = keyof typeof METRICS;
export const METRIC_SPECS: readonly MetricSpec[] = Object.values(METRICS);

/** Requests of L4, L5 and L6 answered with one of these count against availability SLO S1. */
export const SLO_S1 = {
  objective: 0.999,
  windowDays: 30,
  badOutcomes: ['not_leader', 'error'] as const,
  /**
   * Answers S1 leaves out of both numerator and denominator: a draining instance's refusals are a
   * planned hand-over (rolling deploy), retried on another instance, neither good nor bad service.
   */
  excludedOutcomes: ['draining'] as const,
} as const;
