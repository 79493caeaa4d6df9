/**
 * The one fan-out of the lock core's facts (contract/lock-events.ts): each fact
 * becomes its metric, its activity-window count and its C4 log event here, so
 * core makes one call per fact and knows none of the three formats.
 */
import { LOCK_EXPIRY_CAUSE_OF_SESSION_END, type LockEvents } from '../contract/lock-events.js';
import type { SessionEndCause } from '../contract/records.js';
import type { EventLog } from './events.js';
import type { ServerMetrics } from './server-metrics.js';

/** What the fan-out needs of the activity window (lock/core/activity-window.ts). */
export interface ActivityCounter {
  record(name: string): void;
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
    holdEnded({ outcome, seconds }) {
      metrics.observe('lockHoldSeconds', { outcome }, seconds);
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
