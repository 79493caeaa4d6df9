/**
 * The records and answers of the store SPI (lock/store/spi.ts, where the rules every store keeps are
 * written): what a store is asked and what it answers. Split from spi.ts only to keep each file
 * readable; core and the stores import both through spi.ts.
 */
import type {
  AuditEntry,
  BackendName,
  FencingToken,
  LockGrant,
  LockMode,
  Page,
  SessionEndCause,
  SessionInfo,
} from '../../contract/records.js';
import type { LockPolicy } from '../../contract/policies.js';


export interface AcquireAttempt {
  key: string;
  session: SessionCredential;
  ttlMillis: number;
  /**
   * The caller's recorded wait on this key (FleetWaitState.beginWait): a grant ends it in the grant's
   * own write, so no read after the grant is answered counts the new holder as waiting.
   */
  waitId?: string;
  /**
   * A wait to record should the try find the key held by another live session, in the try's own
   * write (FleetWaitState.recordsOnTry): the answer says whether it was (`waitRecorded`).
   */
  recordWait?: WaitToRecord;
  /** The holder's value, stored with a new grant (an existing grant keeps its own). */
  value?: string;
  /** `shared` grants coexist; `exclusive` (the default) excludes every other grant (spi.ts "Multi-holder keys"). */
  mode?: LockMode;
  /** Grants the key admits at once (a semaphore when > 1; default 1). A shared attempt counts as 1. */
  limit?: number;
}

/** A wait as FleetWaitState.beginWait records it (without the session and key, which the request names). */
export interface WaitToRecord {
  waitId: string;
  instanceId: string;
  ttlMillis?: number;
  deadlineMillis?: number;
  /** The value a grant handed to this wait carries (AcquireAttempt.value). */
  value?: string;
  /** The waiting attempt's mode (default exclusive): an exclusive wait keeps new shared grants out (writer preference). */
  mode?: LockMode;
}

export interface RenewRequest {
  key: string;
  session: SessionCredential;
  fencingToken: FencingToken;
  ttlMillis?: number;
  /** The key's policy's maxHoldMillis (contract/policies.ts), when it has one. */
  maxHoldMillis?: number;
  /** A proclaim: replaces the grant's value in the renew's own write (same token). */
  value?: string;
}

export interface SessionRecord {
  sessionId: string;
  owner: string;
  ttlMillis: number;
  createdAt: number;
  lastHeartbeatAt: number;
  expiresAt: number;
  /**
   * The name of the token the session was opened with (the tokens file's entry), absent when
   * the server needs no client token. Core splits the shared contention budget by it; never on
   * the wire.
   */
  openedBy?: string;
}

export interface OpenSessionRequest {
  sessionId: string;
  owner: string;
  ttlMillis: number;
  tokenHash: string;
  /** Kept with the session and returned by every read of it (SessionRecord.openedBy). */
  openedBy?: string;
}

/**
 * What a caller presents to act on its own session: the id and the SHA-256 (hex)
 * of the bearer sessionToken. Stores keep and compare only the hash.
 */
export interface SessionCredential {
  sessionId: string;
  tokenHash: string;
}

/** Why a session-scoped operation did nothing. */
export type SessionRefusal = { kind: 'session_not_found' } | { kind: 'unauthenticated' };

export interface HeldLock extends LockGrant {
  owner: string;
  /**
   * Every live grant of the key, by token (this one first, as the lowest), when the key admits more
   * than one (limit > 1 or shared: spi.ts "Multi-holder keys"); absent for a mutex key. Set by
   * readLock and listLocks only.
   */
  holders?: readonly HeldLock[];
}

/** A grant that just ended, with the instant it ended (store clock where there is one). */
export interface EndedLock extends HeldLock {
  endedAt: number;
}

export type TryAcquireResult =
  /** `existing`: the session already held the key; the grant is unchanged. */
  | { kind: 'granted'; grant: LockGrant; owner: string; existing: boolean }
  /**
   * Held by another live session. `observedRevision` is the backend's revision
   * at which this was seen (etcd header revision), for revision-addressed waits.
   */
  | { kind: 'held'; holder: HeldLock; observedRevision?: string; waitRecorded?: boolean }
  /** The key is held under another limit (`limit`: the key's): nothing changed, nothing recorded. */
  | { kind: 'limit_mismatch'; limit: number; holder: HeldLock }
  | SessionRefusal;

export type RenewResult =
  | { kind: 'renewed'; lock: HeldLock }
  /** The grant is live but older than the renew's `maxHoldMillis`: it is left as it was and ends at its TTL. */
  | { kind: 'hold_limit'; lock: HeldLock }
  | { kind: 'lost' }
  | SessionRefusal;

/** A credential checked and nothing changed (AuthenticateResult). */
export type AuthenticateResult = { kind: 'authenticated'; session: SessionRecord } | SessionRefusal;
export type ReleaseResult =
  /** `handedTo`: the release granted the key to a recorded wait in the same write (FleetWaitState.handsOff). */
  | { kind: 'released'; lock: EndedLock; handedTo?: HandedGrant }
  | { kind: 'lost' }
  | SessionRefusal;

/** A grant a release made to a recorded wait (FIFO handoff): the wait's acquire answers with it. */
export interface HandedGrant extends HeldLock {
  waitId: string;
}
export type HeartbeatResult = { kind: 'alive'; session: SessionRecord } | SessionRefusal;
export type CloseSessionResult = { kind: 'closed'; ended: EndedSession } | SessionRefusal;

export interface EndedSession {
  session: SessionRecord;
  cause: SessionEndCause;
  releasedLocks: EndedLock[];
}

/** What core asks the store to append; the store stamps `at` and assigns id, prevHash and hash. */
export interface AuditDraft {
  actor: string;
  /** The prefixes of the actor's token when it is scoped (kept in the entry and its hash). */
  actorScope?: readonly string[];
  requestId: string;
  reason: string;
}

export interface ForceRevokeResult {
  outcome: 'REVOKED' | 'NOT_HELD' | 'TOKEN_MISMATCH';
  revoked?: EndedLock;
  /** The current holder when the outcome is TOKEN_MISMATCH. */
  holder?: HeldLock;
  audit: AuditEntry;
}

export interface KillSessionResult {
  ended: EndedSession | null;
  audit: AuditEntry;
}

/**
 * The recorded head of the audit chain: verification compares the chain with it. Issue 25: it
 * carries the prune checkpoint and is sealed with the audit key (lock/audit/chain.ts `sealHead`)
 * by every write that moves it, in the transaction of that write.
 */
export interface AuditHead {
  /** Id of the newest entry ("0" when the chain is empty). */
  lastId: string;
  lastHash: string;
  /** The last pruned entry: "0" and the genesis hash while nothing was pruned. */
  checkpointId: string;
  checkpointHash: string;
  /** The audit key that sealed the head; absent when the trail has no audit key. */
  keyId?: string;
  /** null while unsealed (a trail never written, or a head written by a release before head seals). */
  seal: string | null;
  /**
   * Set by the witness around the store (lock/audit/witness.ts), never by a store: the newest entry
   * this process saw committed before the head was read.
   */
  witnessed?: { id: string; hash: string };
}

/** What a prune did: entries older than `before` deleted up to the new checkpoint, and its own audit entry. */
export interface PruneAuditResult {
  /** How many entries were deleted (0 when none were older than `before`). */
  pruned: number;
  checkpoint: { id: string; hash: string };
  audit: AuditEntry;
}

/** Held locks of one policy (the `policy` label): keys under no policy count under NO_POLICY (""). */
export interface PolicyHeldSummary {
  policy: string;
  heldLocks: number;
  /** Age (store clock) of the policy's oldest live grant; 0 when it holds nothing. */
  oldestHeldMillis: number;
}

export interface SummaryQuery {
  /** When given, the summary splits held locks by policy (each key under its longest-prefix policy). */
  policies?: readonly LockPolicy[];
}

export interface StoreSummary {
  heldLocks: number;
  activeSessions: number;
  /** Age (store clock) of the oldest live grant in milliseconds; 0 when nothing is held. */
  oldestHeldMillis: number;
  /**
   * Age (store clock) of the oldest session or lock expiry that has passed and is not yet
   * swept, in milliseconds; 0 when the sweeper is up to date. Absent where the backend
   * expires by itself (etcd leases).
   */
  sweepLagMillis?: number;
  /** With SummaryQuery.policies: one row per policy name and one for NO_POLICY, in the query's order then "". */
  byPolicy?: PolicyHeldSummary[];
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

/** Issue 25: whether the store's data lives where it was last recorded (TokenFloor.check). */
export interface StoreIdentityCheck {
  /** `restored`: the data was recorded at another place (restored from a backup, or copied) and not advanced here since. */
  state: 'current' | 'restored';
  /** Where the data says it lives; null on a store that has never recorded one. */
  recorded: string | null;
  /** Where it lives now (PostgreSQL: cluster system identifier and database oid; embedded: the data dir's store id). */
  live: string;
}

/** Issue 25: what `holdfast tokens advance` did (TokenFloor.advance). */
export interface TokenAdvanceResult {
  /** The sequence's last value before: at least every token issued before the advance. */
  previous: FencingToken;
  /** Every token drawn after the advance is above this (the store clock in microseconds, or `previous` if higher). */
  floor: FencingToken;
  /** The identity recorded: writes are served again. */
  identity: string;
  /** The advance's own `tokens.advance` audit entry, in the same transaction. */
  audit: AuditEntry;
}
