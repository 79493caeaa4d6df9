/**
 * The store SPI: the one closed interface every backend implements.
 *
 * Rules every implementation keeps (the conformance suite, test/store/conformance/,
 * pins each one against every backend):
 * - Fencing tokens strictly increase across every grant the store ever makes, in
 *   the order grants are answered: a token is drawn only after every row lock or
 *   compare the grant depends on is held, so a grant answered later never carries
 *   a lower token than one answered earlier (even across keys).
 * - The store's clock decides liveness (PostgreSQL's clock_timestamp(), PGlite's,
 *   etcd's leases); no method takes the caller's "now". Instants in records
 *   (grantedAt, expiresAt, endedAt, ...) are the store's epoch milliseconds where
 *   the store has a clock, else advisory (etcd: the answering server's reading).
 * - A lock is live while its own TTL runs AND its session is live; a lock that is
 *   not live is free: try-acquire treats it as absent even before a sweep deletes it,
 *   and renew/release of it answer `lost`.
 * - Session-scoped operations take a SessionCredential and check it in the same
 *   statement/txn as the change: an unknown or lapsed session is
 *   `session_not_found`, a live session with the wrong token hash is
 *   `unauthenticated`, and in both cases nothing changes.
 * - Operations that touch many rows take them in one canonical order
 *   (sessions by id, then locks by key, then the audit head) so they cannot deadlock.
 * - forceRevoke and killSession append the audit entry in the same transaction as
 *   the change: no audit, no change. The store seals entries with the AuditSealer it
 *   was built with, and keeps the chain head (last id and hash) beside the chain.
 * - Issue 25: every write that moves the audit head seals it (with the prune checkpoint) with the
 *   sealer's current key in the same transaction; pruneAudit deletes only the oldest run, moves
 *   the checkpoint and appends its own entry in one transaction (conformance: audit-retention-suite.ts).
 * - A backend that cannot take writes (or cannot be reached in time) throws NotLeaderError.
 * - A write resent after an unanswered try (etcd, through an election) answers for what that try did:
 *   its own landed release is `released`, close `closed`, grant new, not `existing`
 *   (test/etcd/resent-after-lost-answer.test.ts). SQL stores send a write once: a lost answer is NOT_LEADER.
 * - Values (issue 23): a new grant stores AcquireAttempt.value in the grant's own write; a new token
 *   never carries the previous holder's value (SQL: a trigger clears it whoever writes the token);
 *   renew with `value` (a proclaim) replaces it in the renew's own write, same token; an existing
 *   grant answers its own value; a grant handed to a recorded wait carries that wait's value
 *   (conformance: values-suite.ts).
 * - Multi-holder keys (issue 23; conformance: holders-suite.ts). A key's live grants share one mode
 *   and one limit (a shared grant's limit is 1). Decided in one statement or txn, like every grant:
 *   - A session holds at most one grant per key: trying again answers `existing` with that grant,
 *     whatever mode or limit it asks.
 *   - While the key has a live grant, an attempt naming another limit is `limit_mismatch` (nothing
 *     changes, no wait is recorded), whatever its mode.
 *   - `exclusive` with limit N is admitted while fewer than N live grants hold the key, all exclusive.
 *     `shared` is admitted while every live grant is shared and, while the key is held, no live
 *     recorded wait of another session on it is exclusive (writer preference: every wait is
 *     exclusive unless recorded with mode `shared`). Else `held`, naming the live grant with the
 *     lowest token.
 *   - Each admitted attempt is its own grant: its own token (rule 1), TTL, value and session. Ending
 *     one (release, lapse, revoke, session end) ends that grant only, and is announced like any end
 *     (release feed, holder watch).
 *   - readLock and listLocks describe a key by its lowest-token live grant, with `holders` (every
 *     live grant by token) when the key admits more than one. forceRevoke ends the grant
 *     `expectedFencingToken` names, or else the lowest-token one: one permit at a time.
 *   - Only a mutex wait (exclusive, limit 1) is handed a key: core records a wait for a shared or
 *     limit > 1 grant without ttlMillis, so it wakes and tries. resolveDeadlocks decides on edges to
 *     holders of mutex keys only: a cycle through a key that admits several holders need not be a
 *     deadlock. waitForEdges (the operator's view) also answers a wait on such a key, with one edge
 *     to each of its live grants marked with the key's `holderKind`.
 *
 * Waiting for a release is an optional capability of a store (`releaseWaiter`, or
 * `releaseFeed`); so is the fleet-wide wait state (`fleet`). Each is a property fixed when the
 * store is built: core reads them once when wired (its wait strategy) and never names a store.
 * - ReleaseFeed: a release is announced by the transaction that ends the lock
 *   (delivered after commit), for every key some instance has a recorded wait on.
 * - FleetWaitState: a wait row goes with its session (whoever ends it) and with its
 *   instance (swept when the instance's heartbeat lapses on the store's clock). Reads count
 *   a wait only while both are live, so a wait is never counted after either ended, even
 *   before a sweep (etcd: wait keys sit on the waiting session's lease, and are read only
 *   with their session incarnation's and instance's keys present).
 * - FleetWaitState: a deadlock verdict is marked only on a cycle that stands as it was read
 *   at the moment of marking (SQL: under one fleet-wide lock in one transaction; etcd: a txn
 *   comparing the cycle's wait, lock and holder-session revisions and the checker key), and
 *   at most once per wait. At most one instance marks verdicts at a time.
 * - FleetWaitState: wait starts (WaitEdge.startedAt) are in one fleet-wide order, so every
 *   instance picks the same youngest wait.
 * - FleetWaitState: a grant ends the session's recorded wait on that key in the grant's own write
 *   (SQL: every wait of the session on the key; etcd: the attempt's `waitId`, and its `recordWait`,
 *   which an earlier try that got no answer may have recorded), so a read after the grant never
 *   counts its holder as waiting (read-your-writes on waits).
 * - FleetWaitState with `handsOff` (SQL): a release hands the key to the oldest recorded wait
 *   that can take it in the releasing statement (FIFO in that fleet-wide order); the handed wait
 *   stops counting in the same write, is announced on the release feed with its grant, and its
 *   endWait answers the grant (so a wait leaving without the key can give it back). A wait that
 *   answers with the handed grant sends no endWait: its record goes in the write that releases
 *   that grant, or with the sweep once the grant is gone (expireLocks), or with its session or
 *   instance. A wait granted by a try ends in that grant's write, so no later release hands it the
 *   key. A release never waits for a wait's or a session's row lock, to hand off or to delete a
 *   handed record: it passes such a wait over (and leaves such a record to the sweep); the sweep
 *   skips locked records too.
 */
import type { AuditEntry, BackendName, FencingToken, LockMode, Page, SessionInfo } from '../../contract/records.js';
import type {
  AcquireAttempt,
  PruneAuditResult,
  AuditDraft,
  AuditHead,
  AuditQuery,
  AuthenticateResult,
  CloseSessionResult,
  EndedLock,
  EndedSession,
  ForceRevokeResult,
  HandedGrant,
  HeartbeatResult,
  HeldLock,
  KillSessionResult,
  ListQuery,
  OpenSessionRequest,
  PolicyHeldSummary,
  ReleaseResult,
  RenewRequest,
  RenewResult,
  SessionCredential,
  SessionRecord,
  SessionRefusal,
  StoreIdentityCheck,
  StoreSummary,
  SummaryQuery,
  TokenAdvanceResult,
  TryAcquireResult,
} from './spi-records.js';

import type { ConsoleRecordStore } from './console-records.js';
import type { MultiHolderKind } from '../../contract/wire-rules.js';

export type * from './spi-records.js';
export type { ConsoleRecord, ConsoleRecordStore } from './console-records.js';

export interface LockStore {
  readonly backend: BackendName;

  /** Connect and create/migrate the schema; idempotent. */
  init(): Promise<void>;
  close(): Promise<void>;
  /** Throws (NotLeaderError) when the backend cannot serve (readiness). */
  ping(): Promise<void>;

  /** The store stamps createdAt/lastHeartbeatAt/expiresAt with its own clock. */
  openSession(req: OpenSessionRequest): Promise<SessionRecord>;
  /** Extends a live session by its TTL from the store's now. */
  heartbeat(credential: SessionCredential): Promise<HeartbeatResult>;
  /**
   * Checks a credential and changes nothing (core asks before a decision that needs to know whose
   * session it is, such as a scoped token's reach): the refusals are those of every session-scoped call.
   */
  authenticateSession(credential: SessionCredential): Promise<AuthenticateResult>;
  /** A live session (admin views); null when unknown or lapsed. */
  getSession(sessionId: string): Promise<SessionRecord | null>;
  /** Ends a live session and releases its locks (closed by its owner). */
  closeSession(credential: SessionCredential): Promise<CloseSessionResult>;
  /** Ends a session by operator order, with its audit entry in the same transaction. */
  killSession(sessionId: string, audit: AuditDraft): Promise<KillSessionResult>;
  /** Sweeper: ends up to `limit` sessions whose TTL passed (store clock), releasing their locks. */
  expireSessions(limit: number): Promise<EndedSession[]>;
  /** Sweeper: deletes up to `limit` locks whose own TTL passed (locks of ended sessions go with them). */
  expireLocks(limit: number): Promise<EndedLock[]>;
  listSessions(query: ListQuery): Promise<Page<SessionInfo>>;

  tryAcquire(req: AcquireAttempt): Promise<TryAcquireResult>;
  /**
   * Extends a lock held by (key, token, session). Without `ttlMillis` the grant keeps
   * its own TTL (a renew never shortens a lock by accident). With `maxHoldMillis`, a grant at
   * least that old (store clock, from grantedAt) is not extended: `hold_limit`, nothing changes.
   */
  renew(req: RenewRequest): Promise<RenewResult>;
  /** Compare-and-delete on (key, token) of the calling session's live grant. */
  release(req: { key: string; session: SessionCredential; fencingToken: FencingToken }): Promise<ReleaseResult>;
  /** The live holder of a key, or null. */
  readLock(key: string): Promise<HeldLock | null>;
  listLocks(query: ListQuery & { prefix?: string }): Promise<Page<HeldLock>>;
  forceRevoke(req: { key: string; expectedFencingToken?: FencingToken; audit: AuditDraft }): Promise<ForceRevokeResult>;

  /** Newest first; optional exact-match filters. */
  listAudit(query: AuditQuery): Promise<Page<AuditEntry>>;
  /** Every audit entry in chain order, for verification. */
  readAuditChain(): AsyncIterable<AuditEntry>;
  readAuditHead(): Promise<AuditHead>;
  /**
   * Retention (issue 25): deletes the oldest entries — the longest run from the checkpoint whose
   * `at` is before `before` (store clock) — records the last deleted one as the checkpoint in the
   * sealed head, and appends its own `audit.prune` entry, all in one transaction.
   */
  pruneAudit(req: { before: number; audit: AuditDraft }): Promise<PruneAuditResult>;

  summary(query?: SummaryQuery): Promise<StoreSummary>;

  /** Expiring records the console keeps here so its replicas share sign-ins (issue 25; console-records.ts). */
  readonly consoleRecords: ConsoleRecordStore;

  /** Wakes a waiter when the key it failed on is released (etcd: a revision-addressed watch). */
  readonly releaseWaiter?: ReleaseWaiter;
  /** Releases anywhere in the fleet, announced after commit (SQL: LISTEN/NOTIFY). */
  readonly releaseFeed?: ReleaseFeed;
  /** Wait state shared by every instance on the store, and the instance registry. */
  readonly fleet?: FleetWaitState;
  /** Restores never re-issue a token (issue 25): the store's identity and its token floor. */
  readonly tokenFloor?: TokenFloor;
  /** Holder changes anywhere in the fleet, for L8 watches (issue 23). */
  readonly holderWatch?: HolderWatch;
  /**
   * True when the store keeps the multi-holder rules ("Multi-holder keys": shared mode, limit > 1).
   * A store without it is asked for mutex grants only (core refuses the others before asking).
   */
  readonly multiHolder?: boolean;
}

/**
 * A store's optional `holderWatch` (L8): tells a parked watch that its key's holder set may have
 * changed, anywhere in the fleet — a hint, like ReleaseWaiter: core reads the key again and
 * compares. Rules:
 * - `watch` resolves only once the store will report changes (SQL: the key's watch row is committed
 *   and the instance listens; etcd: the key watch is created), so core watches first and reads
 *   second. etcd reports every later write; SQL reports a change whose statement saw the watch row,
 *   so a change racing the registration itself (its statement began before the row committed) is
 *   left to core's re-read.
 * - Reported: every new token (grant, takeover, handoff) and every end of a grant (release, sweep,
 *   revoke, session end). A renew or a proclaim may be reported too (core compares and parks again).
 * - A lapse no write has recorded yet is not reported: core re-reads now and then while parked.
 * - When the store cannot promise delivery (its feed is down, the instance is not registered),
 *   `changed` resolves `fallback` and core re-reads on its own schedule.
 */
export interface HolderWatch {
  watch(req: { key: string; instanceId?: string }): Promise<HolderWatchSubscription>;
}

export interface HolderWatchSubscription {
  /** Resolves at the first reported change of the key (`changed`), or when delivery cannot be promised (`fallback`). */
  readonly changed: Promise<'changed' | 'fallback'>;
  /** Ends the subscription (idempotent). */
  stop(): void;
}

/**
 * A store's optional `tokenFloor` (issue 25). A store records where its data lives; a restored or
 * copied store finds another place recorded than where it runs (`check` says `restored`), and
 * lock/store/restore-guard.ts then refuses writes until `advance` has run.
 * - advance raises the token sequence to at least the store clock in microseconds: a store never
 *   draws more than one token per microsecond on average, and its sequence only ever jumps to a
 *   clock reading, so every token issued before now is below now in microseconds — without trusting
 *   the backup or keeping anything outside it (assumption: the store clock does not run back past
 *   the restore). It records the live identity and appends a `tokens.advance` audit entry, in one
 *   transaction.
 * - check claims a store that has recorded no identity yet (a new store, or one from before this
 *   release); claiming a store whose sequence has already drawn tokens advances it first.
 * - A store only one process opens at a time (embedded: the data directory's lock) raises the floor
 *   at every check that finds it current: it starts on the store clock's microseconds, so a data
 *   directory copied back whole (its identity with it) cannot issue a token again either.
 */
export interface TokenFloor {
  check(): Promise<StoreIdentityCheck>;
  advance(req: { audit: AuditDraft }): Promise<TokenAdvanceResult>;
}

export type WaitResult =
  | { outcome: 'released' | 'deadline' | 'aborted' }
  /** The wait mechanism failed (watch error, compaction, ...); core polls for the rest of the budget. */
  | { outcome: 'fallback'; cause: string };

/**
 * A store's optional `releaseWaiter`: wake a waiter when the key it failed on is released.
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


/**
 * A store's optional `releaseFeed`: keys released anywhere in the fleet (any instance on this store),
 * announced after the releasing transaction commits, for keys that have a recorded wait
 * (FleetWaitState.beginWait). A hint, like ReleaseWaiter: core re-runs tryAcquire.
 * Not every release reaches every wait: a release whose statement ran before the wait's
 * record committed, but which committed only after the wait's last try read the key as
 * held, announces nothing to it. Core therefore records a wait, tries once more (unless the try
 * itself recorded it under the lock row's lock: FleetWaitState.recordsOnTry), and
 * while parked still re-checks now and then (LockServiceOptions.feedRecheckMillis).
 */
export interface ReleaseFeed {
  /** Resolves once the first attempt to listen has ended (up or not); the returned function unsubscribes. */
  subscribeReleases(listener: ReleaseFeedListener): Promise<() => void>;
}

export interface ReleaseFeedListener {
  released(keys: readonly string[]): void;
  /** Keys a release handed to a recorded wait (FleetWaitState.handsOff), announced like releases. */
  handedOff(grants: readonly HandedGrant[]): void;
  /**
   * `up` false: the feed may miss releases (its connection is lost; it re-listens with backoff),
   * so waits poll meanwhile. `up` true after a loss: releases in between were missed.
   */
  health(up: boolean, cause: string): void;
}


/** One recorded wait whose key is held by another live session: an edge of the wait-for graph. */
export interface WaitEdge {
  waitId: string;
  /** The waiting session. */
  sessionId: string;
  key: string;
  /** The live holder of `key` at the store's reading. */
  holderSessionId: string;
  instanceId: string;
  /**
   * When the wait was recorded, in one fleet-wide order (only compared, never shown): the store's
   * clock on SQL, the wait key's create revision on etcd (etcd's global revision order).
   */
  startedAt: number;
  /** Already chosen as a deadlock victim, not yet answered. */
  victim: boolean;
  /** Owners for the operator's view (waitForEdges answers them; resolveDeadlocks need not). */
  owner?: string;
  holderOwner?: string;
  /** Set on an edge to one grant of a key that admits several holders (waitForEdges only); absent: a mutex. */
  holderKind?: MultiHolderKind;
}

/** A wait chosen to answer DEADLOCK_DETECTED, with the cycle it closed. */
export interface DeadlockVerdict {
  waitId: string;
  sessions: string[];
  keys: string[];
}

export interface InstancePublication {
  instanceId: string;
  published: unknown;
}

/**
 * A store's optional `fleet`: wait state shared by every instance on the store, and the
 * instance registry (heartbeats on the store's clock).
 */
export interface FleetWaitState {
  /**
   * Joins or renews this instance (expiry = store now + ttlMillis) with what it publishes.
   * `joined` is true when the row was (re)created: after a lapse, the instance's waits were swept
   * and must be recorded again.
   */
  heartbeatInstance(req: { instanceId: string; ttlMillis: number; published?: unknown }): Promise<{ liveInstances: number; joined: boolean }>;
  /** Leaves the registry; this instance's waits go with it. */
  leaveFleet(instanceId: string): Promise<void>;
  /** Sweeper: deletes up to `limit` instances whose heartbeat lapsed (and their waits). */
  expireInstances(limit: number): Promise<number>;
  /** What each live instance last published. */
  instancePublications(): Promise<InstancePublication[]>;
  /**
   * True when a release hands the key to the oldest recorded wait that can take it (FIFO handoff),
   * in the same statement as the release: the wait's session and instance live, its budget not
   * spent (`deadlineMillis` from its record, on the store's clock), not a deadlock victim, recorded
   * with a `ttlMillis`. The grant's token is drawn like any other (rule 1); the wait is marked
   * with it and counts as a waiter no more.
   */
  readonly handsOff: boolean;
  /**
   * True when tryAcquire records `recordWait` in its own write on finding the key held by another
   * live session (SQL: decided under the lock row's lock, so a release of that grant comes after
   * the record and hands the key to the wait or announces the release; etcd: a nested txn in the
   * try's failure branch, so the wait's revision-addressed watch starts at the record). The answer's
   * `waitRecorded` says this try recorded it; absent, this try recorded nothing: the key was free or
   * the session's own, the instance is gone (or ending), the wait id is recorded already (an earlier
   * try that got no answer may have recorded it), or the try was retried without records (a key that
   * changed hands too often in one call). Core then records the wait with beginWait, as before.
   */
  readonly recordsOnTry: boolean;
  /**
   * Records a wait; a no-op when the session (or instance) is already gone. `ttlMillis` is the
   * grant's TTL should a release hand it the key, `deadlineMillis` what is left of its budget; a
   * wait recorded without them is never handed a key (it wakes and tries, as before handoff).
   */
  beginWait(req: { waitId: string; sessionId: string; key: string; instanceId: string; ttlMillis?: number; deadlineMillis?: number; value?: string; mode?: LockMode }): Promise<void>;
  /**
   * Ends a wait's record; answers the grant a release handed it, if one did and the grant is still
   * live (a wait leaving without the key must give such a grant back).
   */
  endWait(waitId: string): Promise<HeldLock | null>;
  /** Waits recorded on each key by live instances. */
  waiterCounts(keys: readonly string[]): Promise<Map<string, number>>;
  totalWaiters(): Promise<number>;
  /** Up to `limit` edges of the fleet-wide wait-for graph, oldest waits first. */
  waitForEdges(limit: number): Promise<WaitEdge[]>;
  /**
   * Under one fleet-wide lock: reads up to `limit` edges, lets `decide` choose victims and marks
   * them. Null when another instance checks (SQL: it holds the lock right now; etcd: it holds the
   * checker key, on its lease, for as long as it lives).
   */
  resolveDeadlocks(limit: number, decide: (edges: readonly WaitEdge[]) => DeadlockVerdict[]): Promise<DeadlockVerdict[] | null>;
  /** This instance's waits marked as deadlock victims. */
  deadlockVictims(instanceId: string): Promise<DeadlockVerdict[]>;
}
