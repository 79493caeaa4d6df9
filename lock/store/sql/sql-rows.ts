/**
 * The SQL store's shared vocabulary: the column lists every statement selects, the database
 * clock and the liveness test as SQL fragments, and rows turned into SPI records. Written once
 * so that sessions, grants, audit and summary agree on what "live" and "now" mean.
 */
import { MUTEX, type AuditEntry, type LockGrant, type LockMode } from '../../../contract/records.js';
import type { EndedLock, HeldLock, SessionRecord } from '../spi.js';
import type { Row } from './queryable.js';

export const LOCK_COLUMNS = `key, session_id, owner, fencing_token::text AS fencing_token, ttl_millis, granted_at, expires_at, value`;
export const QUALIFIED_LOCK_COLUMNS = `l.key, l.session_id, l.owner, l.fencing_token::text AS fencing_token, l.ttl_millis, l.granted_at, l.expires_at, l.value`;
export const SESSION_COLUMNS = `session_id, owner, ttl_millis, created_at, last_heartbeat_at, expires_at, opened_by`;
export const AUDIT_COLUMNS = `id::text AS id, at, actor, action, target, fencing_token::text AS fencing_token, reason, outcome, request_id, prev_hash, hash, key_id, actor_scope`;
/**
 * The database clock, read once per statement. An uncorrelated sub-select is an InitPlan:
 * evaluated once and usable as an index bound (a bare volatile call is neither). A statement
 * that blocks on a row lock keeps its earlier reading, which only ever errs towards "still
 * live" for a holder (no early grant) and towards a shorter new expiry.
 */
export const DB_NOW = '(SELECT holdfast_now_ms())';
/** A lock is live while its TTL has not passed and its session is alive (store clock). */
export const LIVE_LOCK = (alias: string, now = DB_NOW) =>
  `${alias}.expires_at > ${now} AND EXISTS (SELECT 1 FROM holdfast_sessions hs WHERE hs.session_id = ${alias}.session_id AND hs.expires_at > ${now})`;

export function prefixed(alias: string, columns: string): string {
  return columns
    .split(',')
    .map((c) => `${alias}.${c.trim()}`)
    .join(', ');
}

export function toSession(r: Row): SessionRecord {
  return {
    sessionId: String(r.session_id),
    owner: String(r.owner),
    ttlMillis: Number(r.ttl_millis),
    createdAt: Number(r.created_at),
    lastHeartbeatAt: Number(r.last_heartbeat_at),
    expiresAt: Number(r.expires_at),
    ...(r.opened_by !== null && r.opened_by !== undefined ? { openedBy: String(r.opened_by) } : {}),
  };
}

export function toLock(r: Row): HeldLock {
  return {
    key: String(r.key),
    sessionId: String(r.session_id),
    owner: String(r.owner),
    fencingToken: String(r.fencing_token),
    ttlMillis: Number(r.ttl_millis),
    grantedAt: Number(r.granted_at),
    expiresAt: Number(r.expires_at),
    // A multi-holder key's grants carry the key's mode and limit (migration 13); a mutex row has neither.
    mode: typeof r.mode === 'string' ? (r.mode as LockMode) : MUTEX.mode,
    limit: r.holder_limit !== null && r.holder_limit !== undefined ? Number(r.holder_limit) : MUTEX.limit,
    ...(typeof r.value === 'string' ? { value: r.value } : {}),
  };
}

export function toEndedLock(r: Row): EndedLock {
  return { ...toLock(r), endedAt: Number(r.ended_at) };
}

export function withoutEnd(lock: EndedLock): HeldLock {
  const { endedAt: _endedAt, ...held } = lock;
  return held;
}

export function toGrant(lock: HeldLock): LockGrant {
  const { owner: _owner, ...grant } = lock;
  return grant;
}

export function toAudit(r: Row): AuditEntry {
  return {
    id: String(r.id),
    at: Number(r.at),
    actor: String(r.actor),
    ...(Array.isArray(r.actor_scope) ? { actorScope: (r.actor_scope as unknown[]).map(String) } : {}),
    action: String(r.action) as AuditEntry['action'],
    target: String(r.target),
    ...(r.fencing_token !== null && r.fencing_token !== undefined ? { fencingToken: String(r.fencing_token) } : {}),
    reason: String(r.reason),
    outcome: String(r.outcome),
    requestId: String(r.request_id),
    prevHash: String(r.prev_hash),
    hash: String(r.hash),
    ...(r.key_id !== null && r.key_id !== undefined ? { keyId: String(r.key_id) } : {}),
  };
}
