/**
 * The facts the lock core reports, once each: core calls one LockEvents method
 * per fact, and the observability side (exporter/lock-telemetry.ts) fans it out
 * to the metrics, the activity window and the event log. Core therefore knows no
 * metric or log format, and each fact is written by one call, not three.
 */
import type { RevokeOutcome, SessionEndCause } from './records.js';
import type { ContentionReason, HeartbeatOutcome, HoldOutcome, LockKind, WaitOutcome } from './metric-table.js';

/** A span a fact belongs to (the shape of OpenTelemetry's SpanContext, without the dependency). */
export interface TraceRef {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
}

export interface EventContext {
  requestId: string;
  /**
   * The span this fact belongs to: the server span of an L4/L5/L6 request, or the
   * caller's span from its `traceparent`. Passed explicitly so it is known without
   * any OpenTelemetry context lookup (and when no SDK runs at all).
   */
  trace?: TraceRef;
}

export type LockExpiryCause = 'ttl' | 'session_ttl' | 'session_closed' | 'session_killed';

/** Why a lock went with its session, by how the session ended. */
export const LOCK_EXPIRY_CAUSE_OF_SESSION_END: Record<SessionEndCause, LockExpiryCause> = {
  ttl: 'session_ttl',
  closed: 'session_closed',
  killed: 'session_killed',
};

export interface LockEvents {
  sessionOpened(ctx: EventContext, fact: { sessionId: string; owner: string; ttlMillis: number }): void;
  /** A session ended (lapsed, closed or killed), with every lock that went with it. */
  sessionEnded(
    ctx: EventContext,
    fact: { sessionId: string; owner: string; cause: SessionEndCause; releasedLocks: readonly { key: string; sessionId: string; fencingToken: string }[] },
  ): void;
  /** A heartbeat's answer (a counter only: heartbeats are the steady load, no log line each). */
  heartbeat(fact: { outcome: HeartbeatOutcome }): void;
  sessionKilled(ctx: EventContext, fact: { sessionId: string; actor: string; reason: string; outcome: 'KILLED' | 'NOT_FOUND'; auditId: string; auditHeadHash: string }): void;
  /** A new grant (not a holder re-acquiring its own lock). */
  granted(ctx: EventContext, fact: { key: string; sessionId: string; owner: string; fencingToken: string; ttlMillis: number; waitedMillis: number; kind: LockKind }): void;
  contended(ctx: EventContext, fact: { key: string; sessionId: string; holderSessionId: string | null; reason: ContentionReason }): void;
  released(ctx: EventContext, fact: { key: string; sessionId: string; fencingToken: string; heldMillis: number }): void;
  lost(ctx: EventContext, fact: { key: string; sessionId: string; fencingToken: string; op: 'renew' | 'release' }): void;
  /** A lock whose own TTL lapsed, ended by the sweeper. */
  expired(ctx: EventContext, fact: { key: string; sessionId: string; fencingToken: string }): void;
  forceRevoked(
    ctx: EventContext,
    fact: { key: string; actor: string; reason: string; fencingToken: string | null; outcome: RevokeOutcome; auditId: string; auditHeadHash: string },
  ): void;
  /** A grant ended (released, expired, revoked, or with its session): its hold time, grant to end. */
  holdEnded(fact: { outcome: HoldOutcome; seconds: number; kind: LockKind }): void;
  /** A server-side wait ended (granted after a wait, deadline, abort, or through the polling fallback). */
  waitEnded(fact: { outcome: WaitOutcome; seconds: number }): void;
  /** The store's release notification failed and this wait polls instead. */
  waitFellBack(ctx: EventContext, fact: { key: string; cause: string }): void;
  /** A wait closed a wait-for cycle and was chosen as the victim. */
  deadlockDetected(ctx: EventContext, fact: { sessions: string[]; keys: string[]; victimSessionId: string; key: string }): void;
  /** The fleet coordinator's periodic check failed (it retries on its own). */
  fleetCheckFailed(ctx: EventContext, fact: { message: string }): void;
  /** This server now counts its store down (a call failed as unreachable or outlived its timeout). */
  storeDown(fact: { cause: string }): void;
  /** The store answers again (a probe or a call succeeded) after `downMillis` down. */
  storeUp(fact: { downMillis: number }): void;
}
