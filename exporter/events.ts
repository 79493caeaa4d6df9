/**
 * The pinned log events of contract C4, one JSON object per line through pino.
 * Every line carries time, level, event, requestId, traceId, spanId, backend;
 * the per-event fields are typed here so an emitter cannot drop one.
 */
import { isSpanContextValid, trace, type SpanContext } from '@opentelemetry/api';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { BackendName } from '../contract/records.js';
import type { EventContext } from '../contract/lock-events.js';

export interface EventFields {
  lock_granted: { key: string; sessionId: string; owner: string; fencingToken: string; ttlMillis: number; waitedMillis: number };
  lock_contended: { key: string; sessionId: string; holderSessionId: string | null; reason: 'contended' | 'exceeded' };
  lock_released: { key: string; sessionId: string; fencingToken: string; heldMillis: number };
  lock_lost: { key: string; sessionId: string; fencingToken: string; op: 'renew' | 'release' };
  lock_expired: { key: string; sessionId: string; fencingToken: string; cause: 'ttl' | 'session_ttl' | 'session_closed' | 'session_killed' };
  session_opened: { sessionId: string; owner: string; ttlMillis: number };
  session_expired: { sessionId: string; owner: string; cause: 'ttl' | 'closed' | 'killed' };
  lock_force_revoked: { key: string; actor: string; reason: string; fencingToken: string | null; outcome: string; auditId: string; auditHeadHash: string };
  /** `auditHeadHash`: the chain head after this entry, so an external log holds it too. */
  session_killed: { sessionId: string; actor: string; reason: string; outcome: string; auditId: string; auditHeadHash: string };
  wait_fallback: { key: string; cause: string };
  /** A wait-for cycle broken by answering its youngest wait (`victimSessionId` on `key`) 409 DEADLOCK_DETECTED. */
  deadlock_detected: { sessions: string[]; keys: string[]; victimSessionId: string; key: string };
  /** Operational events beyond the brief's table (C4 lists them). */
  server_started: { port: number; store: BackendName };
  server_stopping: { signal: string };
  request_failed: { method: string; route: string; status: number; message: string };
  sweep_failed: { message: string };
  /** Issue 20: the server counts its store down (L1, L3, L4, L6 answered 503 at once) or up again. */
  store_down: { cause: string };
  store_up: { downMillis: number };
  /** Issue 26: HOLDFAST_POLICIES_FILE was edited and its new policies are in force. */
  policies_loaded: { file: string; policies: number };
  /** Issue 26: an edit of HOLDFAST_POLICIES_FILE was refused (`message` names the line); the last good policies stay. */
  policies_rejected: { file: string; message: string };
  /** Issue 25: A4p pruned the audit trail (its own audit entry is `auditId`). */
  audit_pruned: { actor: string; reason: string; before: number; pruned: number; checkpointId: string; auditId: string; auditHeadHash: string };
  /** Issue 25: the tokens file or the audit key file was re-read and is in force. */
  credentials_reloaded: { credential: 'tokens' | 'audit_key'; file: string; cause: 'change' | 'sighup'; entries: number };
  /** Issue 25: a changed tokens or audit key file was refused; the last good one stays in force. */
  credentials_reload_refused: { credential: 'tokens' | 'audit_key'; file: string; cause: 'change' | 'sighup'; message: string };
  /** Issue 25: the store was restored (or copied) and not advanced: writes are refused until `holdfast tokens advance`. */
  store_restored: { recordedIdentity: string; liveIdentity: string; message: string };
  /** Issue 25: an advance was seen on a store found restored: writes are served again. */
  store_advanced: { identity: string };
}

export type EventName = keyof EventFields;

export const EVENT_LEVELS: Record<EventName, 'info' | 'warn' | 'error' | 'debug'> = {
  lock_granted: 'info',
  lock_contended: 'info',
  lock_released: 'info',
  lock_lost: 'warn',
  lock_expired: 'warn',
  session_opened: 'info',
  session_expired: 'info',
  lock_force_revoked: 'warn',
  session_killed: 'warn',
  wait_fallback: 'warn',
  deadlock_detected: 'warn',
  server_started: 'info',
  server_stopping: 'info',
  request_failed: 'error',
  sweep_failed: 'error',
  store_down: 'error',
  store_up: 'info',
  policies_loaded: 'info',
  policies_rejected: 'error',
  audit_pruned: 'warn',
  credentials_reloaded: 'info',
  credentials_reload_refused: 'error',
  store_restored: 'error',
  store_advanced: 'info',
};

export type { EventContext } from '../contract/lock-events.js';

export interface EventLog {
  emit<E extends EventName>(event: E, ctx: EventContext, fields: EventFields[E]): void;
  readonly logger: Logger;
}

export function createEventLog(backend: BackendName, options: { destination?: DestinationStream; level?: string } = {}): EventLog {
  const logger = pino(
    {
      level: options.level ?? process.env.HOLDFAST_LOG_LEVEL ?? 'info',
      base: { backend },
      messageKey: 'msg',
      timestamp: pino.stdTimeFunctions.epochTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    options.destination ?? pino.destination({ dest: 1, sync: false }),
  );
  return {
    logger,
    emit(event, ctx, fields) {
      const span = ctx.trace ?? trace.getActiveSpan()?.spanContext();
      const known = span !== undefined && isSpanContextValid(span);
      logger[EVENT_LEVELS[event]]({
        event,
        requestId: ctx.requestId,
        traceId: known ? span.traceId : null,
        spanId: known ? span.spanId : null,
        ...fields,
      });
    },
  };
}
