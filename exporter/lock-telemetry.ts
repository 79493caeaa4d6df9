/**
 * The one fan-out of the lock server's facts: the core's (contract/lock-events.ts)
 * and the HTTP surface's (contract/http-events.ts). Each fact becomes its metric,
 * its activity-window count and its C4 log event here, so core and lock/http make
 * one call per fact and know none of the three formats. This file is the only
 * writer of the activity window the admin summary (A5) reads.
 */
import type { HttpTelemetry, MeasuredRoute } from '../contract/http-events.js';
import { LOCK_EXPIRY_CAUSE_OF_SESSION_END, type LockEvents } from '../contract/lock-events.js';
import type { EventLog } from './events.js';
import { isS1Bad, isS1Counted, type MeasuredOutcome } from './outcomes.js';
import { beginMeasuredRequest } from './request-telemetry.js';
import type { ServerMetrics } from './server-metrics.js';
import { callerSpanContext } from './trace-context.js';

/** What the fan-out needs of the activity window (lock/core/activity-window.ts). */
export interface ActivityCounter {
  record(name: string): void;
}

/**
 * L4/L5/L6: span, metric and exemplar (exporter/request-telemetry.ts), then the answer's
 * activity counts, from the same outcome the metric got (A5's recent rates and S1 figures).
 */
export function createHttpTelemetry(deps: { metrics: ServerMetrics; log: EventLog; activity: ActivityCounter }): HttpTelemetry {
  const { metrics, log, activity } = deps;
  const counted = (route: MeasuredRoute, outcome: MeasuredOutcome) => {
    activity.record(`${route}:${outcome}`);
    if (!isS1Counted(outcome)) return;
    activity.record('slo:requests');
    if (isS1Bad(outcome)) activity.record('slo:bad');
  };
  return {
    beginMeasured: (route, headers) => beginMeasuredRequest(route, headers, metrics, counted),
    callerTrace: (headers) => callerSpanContext(headers),
    requestFailed(ctx, fact) {
      log.emit('request_failed', ctx, fact);
    },
  };
}


const REVOKE_OUTCOME = { REVOKED: 'revoked', NOT_HELD: 'not_held', TOKEN_MISMATCH: 'token_mismatch' } as const;

export function createLockTelemetry(deps: { metrics: ServerMetrics; log: EventLog; activity: ActivityCounter }): LockEvents {
  const { metrics, log, activity } = deps;
  return {
    sessionOpened(ctx, fact) {
      log.emit('session_opened', ctx, fact);
    },
    sessionEnded(ctx, { sessionId, owner, cause, releasedLocks }) {
      metrics.inc('lockSessionExpiredTotal', { cause });
      activity.record(`session_expired:${cause}`);
      log.emit('session_expired', ctx, { sessionId, owner, cause });
      const lockCause = LOCK_EXPIRY_CAUSE_OF_SESSION_END[cause];
      for (const lock of releasedLocks) {
        log.emit('lock_expired', ctx, { key: lock.key, sessionId: lock.sessionId, fencingToken: lock.fencingToken, cause: lockCause });
      }
    },
    sessionKilled(ctx, fact) {
      log.emit('session_killed', ctx, fact);
    },
    heartbeat({ outcome }) {
      metrics.inc('lockHeartbeatTotal', { outcome });
    },
    granted(ctx, fact) {
      log.emit('lock_granted', ctx, fact);
    },
    contended(ctx, fact) {
      metrics.inc('lockContentionTotal', { reason: fact.reason });
      activity.record(`contention:${fact.reason}`);
      log.emit('lock_contended', ctx, fact);
    },
    released(ctx, fact) {
      log.emit('lock_released', ctx, fact);
    },
    lost(ctx, fact) {
      log.emit('lock_lost', ctx, fact);
    },
    expired(ctx, fact) {
      log.emit('lock_expired', ctx, { ...fact, cause: 'ttl' });
    },
    forceRevoked(ctx, fact) {
      const outcome = REVOKE_OUTCOME[fact.outcome];
      metrics.inc('lockForceRevokeTotal', { outcome });
      activity.record(`force_revoke:${outcome}`);
      log.emit('lock_force_revoked', ctx, fact);
    },
    holdEnded({ outcome, seconds, kind }) {
      metrics.observe('lockHoldSeconds', { outcome, kind }, seconds);
    },
    waitEnded({ outcome, seconds }) {
      metrics.observe('lockWaitSeconds', { outcome }, seconds);
    },
    waitFellBack(ctx, fact) {
      log.emit('wait_fallback', ctx, fact);
    },
    deadlockDetected(ctx, fact) {
      log.emit('deadlock_detected', ctx, fact);
    },
    fleetCheckFailed(ctx, fact) {
      log.emit('sweep_failed', ctx, fact);
    },
    storeDown(fact) {
      log.emit('store_down', { requestId: 'store-health' }, fact);
    },
    storeUp(fact) {
      log.emit('store_up', { requestId: 'store-health' }, fact);
    },
  };
}
