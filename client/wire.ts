/**
 * The C3 records the SDK reads, declared here so the SDK depends on the HTTP
 * contract only, never on the server's modules. Field names are pinned in
 * docs/contracts/C3-http.md.
 */

/** int64 fencing token as a decimal string; compare numerically (see fenced.ts). */
export type FencingToken = string;

export interface SessionOpened {
  sessionId: string;
  /**
   * The session's bearer capability (C3 "Session capability"): shown once, sent
   * as `Authorization: Bearer` on L2–L6. The SDK keeps it in a private field of
   * the session and never logs, throws or exposes it.
   */
  sessionToken: string;
  owner: string;
  ttlMillis: number;
  /** Server wall-clock epoch ms; informational only — the SDK never schedules from it. */
  expiresAt: number;
}

export interface HeartbeatAck {
  sessionId: string;
  expiresAt: number;
}

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
  waiterCount: number;
}

export interface Released {
  key: string;
  released: true;
}

/** The C3 error codes the SDK acts on; any other code is treated as non-retryable. */
export type WireErrorCode =
  | 'VALIDATION_FAILED'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'SESSION_NOT_FOUND'
  | 'LOCK_CONTENDED'
  | 'LOCK_LOST'
  | 'DEADLOCK_DETECTED'
  | 'CONTENTION_EXCEEDED'
  | 'NOT_LEADER'
  | 'INTERNAL';

export const DECIMAL_TOKEN = /^(0|[1-9][0-9]{0,18})$/;
