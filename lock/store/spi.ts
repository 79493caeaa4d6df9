/**
 * The store SPI: the one closed interface every backend implements.
 *
 * Rules every implementation keeps:
 * - Fencing tokens strictly increase across every grant the store ever makes.
 * - Time comes from the caller (`now`, epoch ms) so core owns the clock.
 * - A lock whose TTL has passed, or whose session is gone, is free: try-acquire
 *   treats it as absent even before a sweep deletes it.
 * - Operations that touch many rows take them in one canonical order
 *   (sessions by id, then locks by key) so they cannot deadlock.
 * - forceRevoke and endSession-with-audit append the audit entry in the same
 *   transaction as the change: no audit, no change.
 * - A backend that cannot take writes throws NotLeaderError.
 *
 * Waiting for a release is an optional capability beside this interface
 * (ReleaseWaiter below); core detects it once when wired.
 */
import type {
  AuditEntry,
  BackendName,
  FencingToken,
  LockGrant,
  Page,
  SessionEndCause,
  SessionInfo,
} from '../../contract/records.js';

export interface SessionRecord {
  sessionId: string;
  owner: string;
  ttlMillis: number;
  createdAt: number;
  lastHeartbeatAt: number;
  expiresAt: number;
}

export interface HeldLock extends LockGrant {
  owner: string;
}

export type TryAcquireResult =
  /** `existing`: the session already held the key; the grant is unchanged. */
  | { kind: 'granted'; grant: LockGrant; owner: string; existing: boolean }
  /**
   * Held by another live session. `observedRevision` is the backend's revision
   * at which this was seen (etcd header revision), for revision-addressed waits.
   */
  | { kind: 'held'; holder: HeldLock; observedRevision?: string }
  | { kind: 'session_not_found' };

/** A lock the store removed, and why (for lock_expired / lock_released events). */
export interface RemovedLock {
  lock: HeldLock;
}

export interface EndedSession {
  session: SessionRecord;
  cause: SessionEndCause;
  releasedLocks: HeldLock[];
}

/** What core asks the store to append; the store assigns id, prevHash and hash. */
export interface AuditDraft {
  at: number;
  actor: string;
  requestId: string;
  reason: string;
}

export interface ForceRevokeResult {
  outcome: 'REVOKED' | 'NOT_HELD' | 'TOKEN_MISMATCH';
  revoked?: HeldLock;
  /** The current holder when the outcome is TOKEN_MISMATCH. */
  holder?: HeldLock;
  audit: AuditEntry;
}

export interface KillSessionResult {
  ended: EndedSession | null;
  audit: AuditEntry;
}

export interface StoreSummary {
  heldLocks: number;
  activeSessions: number;
}

export interface ListQuery {
  limit: number;
  cursor?: string;
}

export interface AuditQuery extends ListQuery {
  actor?: string;
  action?: string;
  /** The lock key or session id the entry is about. */
  target?: string;
}

export interface LockStore {
  readonly backend: BackendName;

  /** Connect and create/migrate the schema; idempotent. */
  init(): Promise<void>;
  close(): Promise<void>;
  /** Throws when the backend cannot serve (readiness). */
  ping(): Promise<void>;

  openSession(session: SessionRecord): Promise<SessionRecord>;
  /** Extends a live session; null when unknown or already expired. */
  heartbeat(sessionId: string, now: number): Promise<SessionRecord | null>;
  getSession(sessionId: string, now: number): Promise<SessionRecord | null>;
  /** Ends a live session and releases its locks (closed by its owner). Null if not live. */
  closeSession(sessionId: string, now: number): Promise<EndedSession | null>;
  /** Ends a session by operator order, with its audit entry in the same transaction. */
  killSession(sessionId: string, now: number, audit: AuditDraft): Promise<KillSessionResult>;
  /** Sweeper: ends up to `limit` sessions whose TTL passed, releasing their locks. */
  expireSessions(now: number, limit: number): Promise<EndedSession[]>;
  /** Sweeper: deletes up to `limit` locks whose own TTL passed (locks of ended sessions go with them). */
  expireLocks(now: number, limit: number): Promise<HeldLock[]>;
  listSessions(query: ListQuery, now: number): Promise<Page<SessionInfo>>;

  tryAcquire(req: { key: string; sessionId: string; ttlMillis: number; now: number }): Promise<TryAcquireResult>;
  /** Extends a lock held by (key, token, session); null when it no longer holds. */
  renew(req: {
    key: string;
    sessionId: string;
    fencingToken: FencingToken;
    ttlMillis: number;
    now: number;
  }): Promise<HeldLock | null>;
  /** Compare-and-delete on (key, token); null when that grant no longer holds. */
  release(req: { key: string; fencingToken: FencingToken; now: number }): Promise<HeldLock | null>;
  /** The live holder of a key, or null. */
  readLock(key: string, now: number): Promise<HeldLock | null>;
  listLocks(query: ListQuery & { prefix?: string }, now: number): Promise<Page<HeldLock>>;
  forceRevoke(req: {
    key: string;
    expectedFencingToken?: FencingToken;
    now: number;
    audit: AuditDraft;
  }): Promise<ForceRevokeResult>;

  /** Newest first; optional exact-match filters. */
  listAudit(query: AuditQuery): Promise<Page<AuditEntry>>;
  /** Every audit entry in chain order, for verification. */
  readAuditChain(): AsyncIterable<AuditEntry>;

  summary(now: number): Promise<StoreSummary>;
}

export type WaitResult =
  | { outcome: 'released' | 'deadline' | 'aborted' }
  /** The wait mechanism failed (watch error, compaction, ...); core polls for the rest of the budget. */
  | { outcome: 'fallback'; cause: string };

/**
 * Optional capability: wake a waiter when the key it failed on is released.
 * Returns a hint, never a grant: core re-runs tryAcquire and may lose again.
 */
export interface ReleaseWaiter {
  waitForRelease(req: {
    key: string;
    /** The waiting session: a store may also wake when that session ends elsewhere. */
    sessionId?: string;
    /** From the failed TryAcquireResult, when the backend reports one. */
    observedRevision?: string;
    /** Milliseconds the wait may last. */
    timeoutMillis: number;
    signal: AbortSignal;
  }): Promise<WaitResult>;
}

export function hasReleaseWaiter(store: LockStore): store is LockStore & ReleaseWaiter {
  return typeof (store as Partial<ReleaseWaiter>).waitForRelease === 'function';
}
