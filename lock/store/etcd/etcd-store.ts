/**
 * The etcd store: the store SPI on etcd v3 through `etcd3`.
 *
 * - A session is a record on its own lease; all its locks sit on the same lease,
 *   so etcd deletes them itself when no server is left to heartbeat or sweep.
 * - A lock is a key under {root}l/; its fencing token is the key's create
 *   revision (etcd's global revision: strictly increasing across the cluster).
 * - Every state change is one txn whose compares pin what it was decided on
 *   (create/mod revisions), so two server instances racing can never both win.
 * - A grant compares the session record's create revision in the same txn, so
 *   a session whose lease ended (or which was closed or killed) cannot be
 *   granted anything, including right after a wait (Jepsen, etcd 3.4.3).
 * - A write whose connection broke may or may not have been applied; the txn is
 *   retried only through its own compare (which reads back what happened), and
 *   audit appends are checked against the audit head before being redone.
 * - `waitForRelease` is the revision-addressed wait (see shared-release-watch.ts).
 */
import type { Etcd3, ICompare, IKeyValue, IRequestOp, ITxnResponse } from 'etcd3';
import { NotLeaderError } from '../../errors.js';
import type { AuditEntry, BackendName, FencingToken, Page, SessionInfo } from '../../../contract/records.js';
import type {
  AuditDraft,
  AuditQuery,
  EndedSession,
  ForceRevokeResult,
  HeldLock,
  KillSessionResult,
  ListQuery,
  LockStore,
  ReleaseWaiter,
  SessionRecord,
  StoreSummary,
  TryAcquireResult,
  WaitResult,
} from '../spi.js';
import * as audit from './audit-log.js';
import { decodeCursor, encodeCursor } from './cursors.js';
import { createEtcdClient, isUnavailable, notLeader, range, readTxn } from './etcd-client.js';
import { keyLayout, type KeyLayout } from './keys.js';
import { grantLease, keepAliveOnce, keysOfLease, leaseTtlSeconds, revokeLease } from './leases.js';
import { createRevisionIs, deletedResult, deleteOp, getOp, modRevisionIs, prefixRange, putOp, rangeResult } from './ops.js';
import { PerCallReleaseWatch } from './per-call-release-watch.js';
import { ReleaseBatcher } from './release-batcher.js';
import {
  decodeLock,
  decodeSession,
  encode,
  lockIsLive,
  sessionIsLive,
  toSessionRecord,
  toStoredLock,
  type LockRow,
  type SessionRow,
  type StoredSession,
} from './records.js';
import { SessionCache } from './session-cache.js';
import { SharedReleaseWatch } from './shared-release-watch.js';
import type { EtcdWaitRequest, WaitStrategy } from './wait-request.js';

export type WaitShape = 'shared' | 'per-call';

export interface EtcdStoreOptions {
  endpoints: string[];
  /** Key prefix of every Holdfast key (default "/holdfast/"). */
  prefix?: string;
  /** Optional sub-root under the prefix, so deployments or test runs can share a cluster. */
  namespace?: string;
  /** How waits are served; "shared" unless a bench compares shapes. */
  waitShape?: WaitShape;
  /** Per-call deadline for unary etcd calls (default 3000 ms). */
  requestTimeoutMs?: number;
}

/** A contended write (compare failed because someone else changed the key) is re-decided this many times. */
const MAX_DECISIONS = 16;
/** How long a write keeps re-trying through unavailability (election) before answering NOT_LEADER. */
const UNAVAILABLE_BUDGET_MS = 4_000;
const UNAVAILABLE_PAUSE_MS = 100;
const SCAN_PAGE = 1_000;

interface SessionWithLocks {
  row: SessionRow;
  locks: LockRow[];
}

export class EtcdStore implements LockStore, ReleaseWaiter {
  readonly backend: BackendName = 'etcd';
  private readonly keys: KeyLayout;
  private readonly sessions = new SessionCache();
  private client: Etcd3 | null = null;
  private waits: WaitStrategy | null = null;
  private readonly releases = new ReleaseBatcher(
    () => this.etcd(),
    (attempt) => this.write(attempt),
  );

  constructor(private readonly options: EtcdStoreOptions) {
    if (options.endpoints.length === 0) throw new Error('EtcdStore needs at least one endpoint');
    this.keys = keyLayout(options.prefix ?? '/holdfast/', options.namespace);
  }

  // ---------------------------------------------------------------- lifecycle

  async init(): Promise<void> {
    if (this.client) return;
    const client = createEtcdClient({ endpoints: this.options.endpoints, requestTimeoutMs: this.options.requestTimeoutMs });
    this.client = client;
    try {
      await this.ping();
    } catch (error) {
      this.client = null;
      client.close();
      throw error;
    }
    this.waits =
      this.options.waitShape === 'per-call' ? new PerCallReleaseWatch(client, this.keys) : new SharedReleaseWatch(client, this.keys);
    await this.waits.start();
  }

  async close(): Promise<void> {
    const client = this.client;
    if (!client) return;
    await this.waits?.stop();
    this.waits = null;
    this.client = null;
    client.close();
  }

  async ping(): Promise<void> {
    // A linearizable read needs a leader: exactly "can this backend take writes".
    await range(this.etcd(), { key: this.keys.auditHead, count_only: true });
  }

  /** The etcd key prefix all of this store's state lives under. */
  get keyRoot(): string {
    return this.keys.root;
  }

  /** Waits (and per-call etcd watches) open right now; tests assert it returns to 0. */
  openWatchCount(): number {
    return this.waits?.openWatchCount() ?? 0;
  }

  // ---------------------------------------------------------------- sessions

  async openSession(session: SessionRecord): Promise<SessionRecord> {
    const client = this.etcd();
    const leaseId = await this.write(() => grantLease(client, leaseTtlSeconds(session.ttlMillis)));
    const stored: StoredSession = { ...session, leaseId };
    const key = this.keys.session(session.sessionId);
    const response = await this.write(() =>
      client.kv.txn({
        compare: [createRevisionIs(key, '0')],
        success: [putOp(key, encode(stored), leaseId)],
        failure: [getOp(key)],
      }),
    );
    if (!response.succeeded) {
      const existing = rangeResult(response, 0);
      // A retried open whose first attempt landed: the record carries this call's lease.
      if (existing && decodeSession(existing).session.leaseId === leaseId) {
        this.sessions.remember(decodeSession(existing));
        return session;
      }
      await revokeLease(client, leaseId);
      throw new Error(`session id ${session.sessionId} already exists`);
    }
    this.sessions.remember({ session: stored, createRevision: response.header.revision, modRevision: response.header.revision });
    return session;
  }

  async heartbeat(sessionId: string, now: number): Promise<SessionRecord | null> {
    const client = this.etcd();
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      const row = await this.readSession(sessionId);
      if (!row || !sessionIsLive(row.session, now)) return null;
      const remaining = await this.write(() => keepAliveOnce(client, row.session.leaseId));
      if (remaining <= 0) {
        this.sessions.forget(sessionId);
        return null;
      }
      const next: StoredSession = { ...row.session, lastHeartbeatAt: now, expiresAt: now + row.session.ttlMillis };
      const key = this.keys.session(sessionId);
      const response = await this.write(() =>
        client.kv.txn({
          compare: [modRevisionIs(key, row.modRevision)],
          success: [putOp(key, encode(next), next.leaseId)],
          failure: [],
        }),
      );
      if (response.succeeded) {
        this.sessions.remember({ session: next, createRevision: row.createRevision, modRevision: response.header.revision });
        return toSessionRecord(next);
      }
    }
    throw new NotLeaderError(`heartbeat of ${sessionId} kept racing other writers`);
  }

  async getSession(sessionId: string, now: number): Promise<SessionRecord | null> {
    const row = await this.readSession(sessionId);
    return row && sessionIsLive(row.session, now) ? toSessionRecord(row.session) : null;
  }

  async closeSession(sessionId: string, now: number): Promise<EndedSession | null> {
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      const found = await this.readSessionWithLocks(sessionId);
      if (!found || !sessionIsLive(found.row.session, now)) return null;
      const ended = await this.endSession(found, 'closed', now);
      if (ended) return ended;
    }
    throw new NotLeaderError(`closing ${sessionId} kept racing other writers`);
  }

  async killSession(sessionId: string, now: number, draft: AuditDraft): Promise<KillSessionResult> {
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      const [found, head] = await Promise.all([this.readSessionWithLocks(sessionId), audit.readAuditHead(this.etcd(), this.keys)]);
      const live = found && sessionIsLive(found.row.session, now) ? found : null;
      const append = audit.planAuditAppend(this.keys, head, draft, {
        action: 'session.kill',
        target: sessionId,
        outcome: live ? 'KILLED' : 'NOT_FOUND',
      });
      if (!live) {
        if (await this.commitAudit([append.compare], append.ops, append.entry)) return { ended: null, audit: append.entry };
        continue;
      }
      const ended = await this.endSession(live, 'killed', now, append);
      if (ended) return { ended, audit: append.entry };
    }
    throw new NotLeaderError(`killing ${sessionId} kept racing other writers`);
  }

  async expireSessions(now: number, limit: number): Promise<EndedSession[]> {
    const ended: EndedSession[] = [];
    for await (const kv of this.scan(this.keys.sessionsPrefix)) {
      if (ended.length >= limit) break;
      const row = decodeSession(kv);
      if (sessionIsLive(row.session, now)) continue;
      const found = await this.readSessionWithLocks(row.session.sessionId);
      if (!found || found.row.modRevision !== row.modRevision) continue; // heartbeated or ended meanwhile
      const result = await this.endSession(found, 'ttl', now);
      if (result) ended.push(result);
    }
    return ended;
  }

  async expireLocks(now: number, limit: number): Promise<HeldLock[]> {
    const removed: HeldLock[] = [];
    for await (const kv of this.scan(this.keys.locksPrefix)) {
      if (removed.length >= limit) break;
      const key = this.keys.lockKeyOf(kv.key);
      if (key === null) continue;
      const row = decodeLock(key, kv);
      if (lockIsLive(row.lock, await this.holderSession(row.lock.sessionId, now), now)) continue;
      const response = await this.write(() =>
        this.etcd().kv.txn({
          compare: [modRevisionIs(this.keys.lock(key), row.modRevision)],
          success: [deleteOp(this.keys.lock(key))],
          failure: [],
        }),
      );
      if (response.succeeded) removed.push(row.lock);
    }
    return removed;
  }

  async listSessions(query: ListQuery, now: number): Promise<Page<SessionInfo>> {
    const page = await this.pageOf(this.keys.sessionsPrefix, '', decodeCursor(query.cursor), query.limit, (kv) => {
      const row = decodeSession(kv);
      return sessionIsLive(row.session, now) ? row : null;
    });
    const items = await Promise.all(
      page.items.map(async (row): Promise<SessionInfo> => {
        const attached = await keysOfLease(this.etcd(), row.session.leaseId);
        const lockCount = attached.filter((key) => this.keys.lockKeyOf(key) !== null).length;
        return { ...toSessionRecord(row.session), lockCount };
      }),
    );
    return { items, nextCursor: encodeCursor(page.nextCursor) };
  }

  // ---------------------------------------------------------------- locks

  async tryAcquire(req: { key: string; sessionId: string; ttlMillis: number; now: number }): Promise<TryAcquireResult> {
    const lockKey = this.keys.lock(req.key);
    const sessionKey = this.keys.session(req.sessionId);
    let session = await this.liveSession(req.sessionId, req.now);
    let uncertain = false;
    const startedAt = Date.now(); // wall time for the unavailability budget; req.now may come from a test clock
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      if (!session) return { kind: 'session_not_found' };
      const mine = { sessionId: req.sessionId, owner: session.session.owner, ttlMillis: req.ttlMillis, grantedAt: req.now, expiresAt: req.now + req.ttlMillis };
      let response: ITxnResponse;
      try {
        // One txn: create the lock if absent, on the session's lease, only while the session is this incarnation.
        response = await this.etcd().kv.txn({
          compare: [createRevisionIs(lockKey, '0'), createRevisionIs(sessionKey, session.createRevision)],
          success: [putOp(lockKey, encode(mine), session.session.leaseId)],
          failure: [getOp(lockKey), getOp(sessionKey)],
        });
      } catch (error) {
        // Applied or not? The next round's txn reads back exactly that (the lock key and the session).
        await this.pauseIfUnavailable(error, startedAt);
        uncertain = true;
        continue;
      }
      if (response.succeeded) {
        const grant = { key: req.key, sessionId: req.sessionId, fencingToken: response.header.revision, ttlMillis: req.ttlMillis, grantedAt: mine.grantedAt, expiresAt: mine.expiresAt };
        return { kind: 'granted', grant, owner: mine.owner, existing: false };
      }
      const sessionKv = rangeResult(response, 1);
      if (!sessionKv || String(sessionKv.create_revision) !== session.createRevision) {
        this.sessions.forget(req.sessionId);
        return { kind: 'session_not_found' };
      }
      const freshSession = decodeSession(sessionKv);
      this.sessions.remember(freshSession);
      if (!sessionIsLive(freshSession.session, req.now)) return { kind: 'session_not_found' };
      session = freshSession;
      const lockKv = rangeResult(response, 0);
      if (!lockKv) continue; // released between the compare and the read: try again
      const row = decodeLock(req.key, lockKv);
      const holder = row.lock.sessionId === req.sessionId ? session.session : await this.holderSession(row.lock.sessionId, req.now);
      if (lockIsLive(row.lock, holder, req.now)) {
        if (row.lock.sessionId === req.sessionId) {
          // Ours already. If our own earlier attempt broke mid-flight and landed, it is this call's grant.
          const existing = !(uncertain && row.lock.grantedAt === req.now);
          return { kind: 'granted', grant: stripOwner(row.lock), owner: row.lock.owner, existing };
        }
        return { kind: 'held', holder: row.lock, observedRevision: response.header.revision };
      }
      // Expired (its TTL or its session): free. Remove exactly that incarnation, then create a new one (new token).
      await this.write(() =>
        this.etcd().kv.txn({ compare: [modRevisionIs(lockKey, row.modRevision)], success: [deleteOp(lockKey)], failure: [] }),
      );
    }
    throw new NotLeaderError(`acquire of ${JSON.stringify(req.key)} kept racing other writers`);
  }

  async renew(req: { key: string; sessionId: string; fencingToken: FencingToken; ttlMillis: number; now: number }): Promise<HeldLock | null> {
    const lockKey = this.keys.lock(req.key);
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      const read = await readTxn(this.etcd(), { success: [getOp(lockKey), getOp(this.keys.session(req.sessionId))] });
      const lockKv = rangeResult(read, 0);
      const sessionKv = rangeResult(read, 1);
      if (!lockKv || !sessionKv || String(lockKv.create_revision) !== req.fencingToken) return null;
      const row = decodeLock(req.key, lockKv);
      const session = decodeSession(sessionKv);
      this.sessions.remember(session);
      if (row.lock.sessionId !== req.sessionId || !lockIsLive(row.lock, session.session, req.now)) return null;
      const renewed: HeldLock = { ...row.lock, ttlMillis: req.ttlMillis, expiresAt: req.now + req.ttlMillis };
      const response = await this.write(() =>
        this.etcd().kv.txn({
          compare: [modRevisionIs(lockKey, row.modRevision), createRevisionIs(this.keys.session(req.sessionId), session.createRevision)],
          // A PUT on an existing key keeps its create revision: same fencing token, later expiry.
          success: [putOp(lockKey, encode(toStoredLock(renewed)), row.leaseId)],
          failure: [],
        }),
      );
      if (response.succeeded) return renewed;
    }
    throw new NotLeaderError(`renew of ${JSON.stringify(req.key)} kept racing other writers`);
  }

  async release(req: { key: string; fencingToken: FencingToken; now: number }): Promise<HeldLock | null> {
    const lockKey = this.keys.lock(req.key);
    // Compare-and-delete on (key, token), sharing a round trip with concurrent releases. Retried
    // only on unavailability: a repeat of an applied delete finds the token gone and answers null
    // (benign LOCK_LOST), never a second delete.
    const deleted = await this.releases.release(lockKey, req.fencingToken);
    if (!deleted) return null;
    const row = decodeLock(req.key, deleted);
    return row.lock.expiresAt > req.now ? row.lock : null;
  }

  async readLock(key: string, now: number): Promise<HeldLock | null> {
    const response = await range(this.etcd(), { key: this.keys.lock(key) });
    const kv = response.kvs[0];
    if (!kv) return null;
    const row = decodeLock(key, kv);
    return lockIsLive(row.lock, await this.holderSession(row.lock.sessionId, now), now) ? row.lock : null;
  }

  async listLocks(query: ListQuery & { prefix?: string }, now: number): Promise<Page<HeldLock>> {
    const page = await this.pageOf(this.keys.locksPrefix, query.prefix ?? '', decodeCursor(query.cursor), query.limit, async (kv) => {
      const key = this.keys.lockKeyOf(kv.key);
      if (key === null) return null;
      const lock = decodeLock(key, kv).lock;
      return lockIsLive(lock, await this.holderSession(lock.sessionId, now), now) ? lock : null;
    });
    return { items: page.items, nextCursor: encodeCursor(page.nextCursor) };
  }

  async forceRevoke(req: { key: string; expectedFencingToken?: FencingToken; now: number; audit: AuditDraft }): Promise<ForceRevokeResult> {
    const lockKey = this.keys.lock(req.key);
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      const [lockResponse, head] = await Promise.all([range(this.etcd(), { key: lockKey }), audit.readAuditHead(this.etcd(), this.keys)]);
      const kv = lockResponse.kvs[0];
      const row = kv ? decodeLock(req.key, kv) : null;
      const live = row && lockIsLive(row.lock, await this.holderSession(row.lock.sessionId, req.now), req.now) ? row : null;
      const outcome = !live
        ? 'NOT_HELD'
        : req.expectedFencingToken !== undefined && req.expectedFencingToken !== live.lock.fencingToken
          ? 'TOKEN_MISMATCH'
          : 'REVOKED';
      const append = audit.planAuditAppend(this.keys, head, req.audit, {
        action: 'lock.revoke',
        target: req.key,
        fencingToken: live?.lock.fencingToken ?? req.expectedFencingToken,
        outcome,
      });
      const compare = [append.compare, modRevisionIs(lockKey, row?.modRevision ?? '0')];
      const ops = outcome === 'REVOKED' ? [deleteOp(lockKey), ...append.ops] : append.ops;
      if (!(await this.commitAudit(compare, ops, append.entry))) continue;
      if (outcome === 'REVOKED' && live) return { outcome, revoked: live.lock, audit: append.entry };
      if (outcome === 'TOKEN_MISMATCH' && live) return { outcome, holder: live.lock, audit: append.entry };
      return { outcome: 'NOT_HELD', audit: append.entry };
    }
    throw new NotLeaderError(`revoke of ${JSON.stringify(req.key)} kept racing other writers`);
  }

  // ---------------------------------------------------------------- audit, summary

  listAudit(query: AuditQuery): Promise<Page<AuditEntry>> {
    return audit.listAudit(this.etcd(), this.keys, query);
  }

  readAuditChain(): AsyncIterable<AuditEntry> {
    return audit.readAuditChain(this.etcd(), this.keys);
  }

  async summary(now: number): Promise<StoreSummary> {
    let activeSessions = 0;
    const liveSessionIds = new Set<string>();
    for await (const kv of this.scan(this.keys.sessionsPrefix)) {
      const row = decodeSession(kv);
      if (sessionIsLive(row.session, now)) {
        activeSessions += 1;
        liveSessionIds.add(row.session.sessionId);
      }
    }
    let heldLocks = 0;
    for await (const kv of this.scan(this.keys.locksPrefix)) {
      const key = this.keys.lockKeyOf(kv.key);
      if (key === null) continue;
      const lock = decodeLock(key, kv).lock;
      if (lock.expiresAt > now && liveSessionIds.has(lock.sessionId)) heldLocks += 1;
    }
    return { heldLocks, activeSessions };
  }

  // ---------------------------------------------------------------- waiting

  async waitForRelease(req: EtcdWaitRequest): Promise<WaitResult> {
    const waits = this.waits;
    if (!waits) return { outcome: 'fallback', cause: 'store not initialised' };
    if (req.signal.aborted) return { outcome: 'aborted' };
    let observedRevision = req.observedRevision;
    if (observedRevision === undefined) {
      // No failed attempt to anchor on: anchor on now, and a key already free is a release.
      const response = await range(this.etcd(), { key: this.keys.lock(req.key) });
      if (response.kvs.length === 0) return { outcome: 'released' };
      observedRevision = response.header.revision;
    }
    return waits.wait({ ...req, observedRevision });
  }

  // ---------------------------------------------------------------- internals

  private etcd(): Etcd3 {
    if (!this.client) throw new Error('EtcdStore used before init() or after close()');
    return this.client;
  }

  /**
   * Runs a write, re-trying through unavailability for a bounded time. Only for
   * writes that are safe to repeat: txns whose compares make a second
   * application a no-op, lease grants and keep-alives.
   */
  private async write<T>(attempt: () => Promise<T>): Promise<T> {
    const started = Date.now();
    for (;;) {
      try {
        return await attempt();
      } catch (error) {
        await this.pauseIfUnavailable(error, started);
      }
    }
  }

  /** Rethrows bugs; turns unavailability into a short pause, or NOT_LEADER once the budget is spent. */
  private async pauseIfUnavailable(error: unknown, startedAt: number): Promise<void> {
    if (!isUnavailable(error)) throw error;
    if (Date.now() - startedAt > UNAVAILABLE_BUDGET_MS) throw notLeader(error);
    await new Promise((resolve) => setTimeout(resolve, UNAVAILABLE_PAUSE_MS));
  }

  /**
   * Commits a txn carrying an audit append. If the outcome is unknown (connection
   * broke), the planned entry decides: present means applied, absent means the
   * compare on the audit head will make a repeat safe. False when a compare failed.
   */
  private async commitAudit(compare: ICompare[], ops: IRequestOp[], entry: AuditEntry): Promise<boolean> {
    const started = Date.now();
    for (;;) {
      try {
        const response = await this.etcd().kv.txn({ compare, success: ops, failure: [] });
        return response.succeeded;
      } catch (error) {
        await this.pauseIfUnavailable(error, started);
        if (await audit.wasAppended(this.etcd(), this.keys, entry)) return true;
      }
    }
  }

  /**
   * Deletes a session and its locks in one txn (plus an audit append for kills),
   * then revokes its lease. Null when something changed since the read (re-decide).
   */
  private async endSession(
    found: SessionWithLocks,
    cause: EndedSession['cause'],
    now: number,
    append?: audit.PlannedAppend,
  ): Promise<EndedSession | null> {
    const sessionKey = this.keys.session(found.row.session.sessionId);
    const compare: ICompare[] = [modRevisionIs(sessionKey, found.row.modRevision)];
    const ops: IRequestOp[] = [deleteOp(sessionKey)];
    for (const lock of found.locks) {
      compare.push(modRevisionIs(this.keys.lock(lock.lock.key), lock.modRevision));
      ops.push(deleteOp(this.keys.lock(lock.lock.key)));
    }
    let committed: boolean;
    if (append) {
      committed = await this.commitAudit([...compare, append.compare], [...ops, ...append.ops], append.entry);
    } else {
      const response = await this.write(() => this.etcd().kv.txn({ compare, success: ops, failure: [] }));
      committed = response.succeeded;
    }
    if (!committed) return null;
    this.sessions.forget(found.row.session.sessionId);
    // Locks a concurrent acquire attached after our read go with the lease.
    await revokeLease(this.etcd(), found.row.session.leaseId);
    return {
      session: toSessionRecord(found.row.session),
      cause,
      releasedLocks: found.locks.map((row) => row.lock).filter((lock) => lock.expiresAt > now),
    };
  }

  private async readSession(sessionId: string): Promise<SessionRow | null> {
    const response = await range(this.etcd(), { key: this.keys.session(sessionId) });
    const kv = response.kvs[0];
    if (!kv) {
      this.sessions.forget(sessionId);
      return null;
    }
    const row = decodeSession(kv);
    this.sessions.remember(row);
    return row;
  }

  /** The session if live at `now`: from the cache when it vouches for that, else read. */
  private async liveSession(sessionId: string, now: number): Promise<SessionRow | null> {
    const cached = this.sessions.get(sessionId);
    if (cached && sessionIsLive(cached.session, now)) return cached;
    const row = await this.readSession(sessionId);
    return row && sessionIsLive(row.session, now) ? row : null;
  }

  /** A lock holder's session, for liveness checks; null when gone or expired. */
  private async holderSession(sessionId: string, now: number): Promise<SessionRecord | null> {
    const row = await this.liveSession(sessionId, now);
    return row ? row.session : null;
  }

  private async readSessionWithLocks(sessionId: string): Promise<SessionWithLocks | null> {
    const row = await this.readSession(sessionId);
    if (!row) return null;
    const lockKeys = (await keysOfLease(this.etcd(), row.session.leaseId)).filter((key) => this.keys.lockKeyOf(key) !== null);
    if (lockKeys.length === 0) return { row, locks: [] };
    const response = await readTxn(this.etcd(), { success: lockKeys.map((key) => getOp(key)) });
    const locks: LockRow[] = [];
    response.responses.forEach((_, index) => {
      const kv = rangeResult(response, index);
      const key = kv ? this.keys.lockKeyOf(kv.key) : null;
      if (kv && key !== null && String(kv.lease) === row.session.leaseId) locks.push(decodeLock(key, kv));
    });
    return { row, locks };
  }

  /** Every key-value under a prefix, in pages, in key order. */
  private async *scan(prefix: Buffer): AsyncIterable<IKeyValue> {
    const { range_end } = prefixRange(prefix);
    let from = prefix;
    for (;;) {
      const response = await range(this.etcd(), { key: from, range_end, limit: SCAN_PAGE });
      yield* response.kvs;
      const last = response.kvs[response.kvs.length - 1];
      if (!response.more || !last) return;
      from = Buffer.concat([last.key, Buffer.from([0])]);
    }
  }

  /**
   * Up to `limit` kept items under `base` + `namePrefix`, after the name `cursor`
   * (a lock key or session id: the last item of the previous page).
   */
  private async pageOf<T>(
    base: Buffer,
    namePrefix: string,
    cursor: string | undefined,
    limit: number,
    keep: (kv: IKeyValue) => Promise<T | null> | T | null,
  ): Promise<Page<T>> {
    const within = Buffer.concat([base, Buffer.from(namePrefix)]);
    const { range_end } = prefixRange(within);
    let from = cursor !== undefined ? Buffer.concat([base, Buffer.from(cursor), Buffer.from([0])]) : within;
    if (Buffer.compare(from, within) < 0) from = within;
    const items: T[] = [];
    let lastName: string | null = null;
    for (;;) {
      const response = await range(this.etcd(), { key: from, range_end, limit: Math.min(SCAN_PAGE, limit + 1) });
      for (const kv of response.kvs) {
        const item = await keep(kv);
        if (item === null) continue;
        // One more kept item exists beyond a full page: that is what makes a next page.
        if (items.length === limit) return { items, nextCursor: lastName };
        items.push(item);
        lastName = kv.key.subarray(base.length).toString('utf8');
      }
      const last = response.kvs[response.kvs.length - 1];
      if (!response.more || !last) return { items, nextCursor: null };
      from = Buffer.concat([last.key, Buffer.from([0])]);
    }
  }
}

function stripOwner(lock: HeldLock): Omit<HeldLock, 'owner'> {
  const { owner: _owner, ...grant } = lock;
  void _owner;
  return grant;
}
