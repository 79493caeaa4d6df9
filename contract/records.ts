/**
 * The wire records of contract C3. Every field name and meaning is pinned in
 * docs/contracts/C3-http.md; change both together.
 */

/** int64 fencing token as a decimal string (proto3 JSON convention); compare numerically. */
export type FencingToken = string;

export const BACKENDS = ['postgres', 'embedded', 'etcd'] as const;
export type BackendName = (typeof BACKENDS)[number];

export interface LockGrant {
  key: string;
  sessionId: string;
  fencingToken: FencingToken;
  ttlMillis: number;
  grantedAt: number;
  expiresAt: number;
}

export interface LockInfo {
  key: string;
  held: boolean;
  sessionId?: string;
  owner?: string;
  fencingToken?: FencingToken;
  grantedAt?: number;
  expiresAt?: number;
  /** Advisory: waiters known to the answering server instance. */
  waiterCount: number;
}

export const REVOKE_OUTCOMES = ['REVOKED', 'NOT_HELD', 'TOKEN_MISMATCH'] as const;
export type RevokeOutcome = (typeof REVOKE_OUTCOMES)[number];

/** Force-revoke's result only; never on an acquire path. */
export interface LockOutcome {
  key: string;
  outcome: RevokeOutcome;
  revokedFencingToken?: FencingToken;
  auditId: string;
}

export const AUDIT_ACTIONS = ['lock.revoke', 'session.kill'] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditEntry {
  id: string;
  at: number;
  actor: string;
  action: AuditAction;
  /** The lock key for lock.revoke, the session id for session.kill. */
  target: string;
  fencingToken?: FencingToken;
  reason: string;
  /** REVOKED / NOT_HELD / TOKEN_MISMATCH for revokes; KILLED / NOT_FOUND for kills. */
  outcome: string;
  requestId: string;
  prevHash: string;
  hash: string;
}

export interface SessionInfo {
  sessionId: string;
  owner: string;
  ttlMillis: number;
  createdAt: number;
  lastHeartbeatAt: number;
  expiresAt: number;
  lockCount: number;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export const SESSION_END_CAUSES = ['ttl', 'closed', 'killed'] as const;
export type SessionEndCause = (typeof SESSION_END_CAUSES)[number];

/** Numeric comparison of two decimal fencing tokens. */
export function compareTokens(a: FencingToken, b: FencingToken): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}
