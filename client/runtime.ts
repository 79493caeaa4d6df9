/**
 * What every session of one LockClient shares: the API, clock, random source,
 * meters, tracer, logger, round-trip estimate and token watermark.
 */
import type { LockApi } from './api.js';
import type { BackendLabel } from './backend-label.js';
import type { Clock } from './clock.js';
import type { ClientLogger } from './logger.js';
import type { SdkMeters } from './meters.js';
import type { AcquirePolicy } from './policy.js';
import type { RandomSource } from './random.js';
import type { RoundTripEstimator } from './rtt.js';
import type { AcquireTracer } from './tracing.js';
import type { TokenWatermark } from './watermark.js';
import { LOCK_TTL_MILLIS } from './wire.js';

export interface ClientRuntime {
  readonly api: LockApi;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly meters: SdkMeters;
  readonly tracer: AcquireTracer;
  readonly logger: ClientLogger;
  readonly rtt: RoundTripEstimator;
  readonly watermark: TokenWatermark;
  readonly defaultPolicy: AcquirePolicy;
  readonly safetyMarginMillis: number;
  /** How long one request may go unanswered (beyond a server-side wait) before it is retried. */
  readonly requestTimeoutMillis: number;
  /** The latest valid `holdfast-backend` header any session of this client saw. */
  lastBackend: BackendLabel | undefined;
}

/** Delay before retrying after NOT_LEADER or no answer: short, fixed, then jittered above it. */
export const TRANSIENT_FLOOR_MILLIS = 100;

/**
 * The SDK's conservative deadline for something granted with `ttlMillis` by a
 * request sent at `sentAt` (monotonic): the server's clock started no earlier
 * than our send, so sentAt + ttl is never later than the server's expiry; the
 * margin covers clock-rate drift and the time to act on a loss. The margin is
 * capped at a quarter of the TTL so short TTLs stay usable.
 */
export function conservativeDeadline(sentAt: number, ttlMillis: number, marginMillis: number): number {
  return sentAt + ttlMillis - Math.min(marginMillis, Math.floor(ttlMillis / 4));
}

/**
 * The longest server-side wait worth asking for a grant of `ttlMillis` (undefined: C3's default
 * TTL): half the life the SDK can vouch for. A grant is vouched for from the send time of its
 * L4, so one answered at the end of a longer wait is older than that — given back and taken
 * again, a holder for an instant — or too close to its deadline to renew in time. Waiting in
 * such rounds (each answered LOCK_CONTENDED and sent again at once) costs one L4 per round.
 */
export function longestVouchedWaitMillis(ttlMillis: number | undefined, marginMillis: number): number {
  return Math.max(1, Math.floor(conservativeDeadline(0, ttlMillis ?? LOCK_TTL_MILLIS.default, marginMillis) / 2));
}
