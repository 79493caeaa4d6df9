/**
 * The etcd store: the store SPI on etcd v3 through `etcd3`.
 *
 * - etcd's leases decide every expiry; no server clock does. A session is live
 *   while its liveness key {root}s/{id} exists (it sits on the session's lease;
 *   heartbeat = keep-alive). A lock is live while its liveness key {root}l/{key}
 *   exists (it sits on a lease that lives at least the lock's TTL) AND the
 *   holder session's liveness key exists with the create revision recorded in the
 *   lock. Instants in records are advisory (the answering server's clock, or the
 *   `clock` option), never read to decide anything.
 * - The fencing token is the lock key's create revision (etcd's global revision:
 *   strictly increasing across the cluster, assigned when the granting txn commits)
 *   × 1000 + the grant's slot in that txn: the acquires of one event-loop turn
 *   share one txn (acquire-batcher.ts, grant-tokens.ts).
 * - Beside each leased key sits an unleased record ({root}sr/, {root}lr/), created
 *   and deleted in the same txns, so the sweeper can report what etcd dropped
 *   (session_expired, lock_expired) exactly once: each report is a compare-and-delete.
 * - Every state change is one txn whose compares pin what it was decided on
 *   (create/mod revisions of the session incarnation, the lock, the audit head),
 *   so two server instances racing can never both win. A session-scoped call checks
 *   the token hash of the incarnation whose create revision its txn compares: the
 *   hash never changes within an incarnation, so the check is as good as in-txn.
 * - A write whose connection broke may or may not have been applied; the txn is
 *   retried only through its own compare (which reads back what happened), and
 *   audit appends are checked against the audit head before being redone.
 * - `waitForRelease` is the revision-addressed wait (see shared-release-watch.ts).
 * - The fleet-wide wait state (instance registry, waits, deadlock verdicts) is etcd-fleet.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Etcd3, ICompare, IKeyValue, IRequestOp, ITxnResponse } from 'etcd3';
import { createAuditSealer, type AuditSealer } from '../../audit/chain.js';
import { NotLeaderError } from '../../errors.js';
import type { AuditEntry, BackendName, FencingToken, LockGrant, Page, SessionInfo } from '../../../contract/records.js';
import type {
  AuditDraft,
  AuditHead,
  AuditQuery,
  CloseSessionResult,
  EndedLock,
  EndedSession,
  ForceRevokeResult,
  HeartbeatResult,
  HeldLock,
  KillSessionResult,
  ListQuery,
  LockStore,
  ReleaseResult,
  ReleaseWaiter,
  RenewResult,
  SessionCredential,
  SessionRecord,
  StoreSummary,
  TryAcquireResult,
  WaitResult,
} from '../spi.js';
import * as audit from './audit-log.js';
import { decodeCursor, encodeCursor } from './cursors.js';
import { EtcdFleet } from './etcd-fleet.js';
import { createEtcdClient, isUnavailable, notLeader, range, readTxn } from './etcd-client.js';
import { keyLayout, type KeyLayout } from './keys.js';
import { GrantLeasePool, grantLease, leaseTtlSeconds, revokeLease } from './leases.js';
import { SharedKeepAlive } from './keep-alive-stream.js';
import {
  createRevisionIs,
  createRevisionIsNot,
  deletedResult,
  deleteOp,
  getOp,
  modRevisionIs,
  nothingCreatedUnderAfter,
  prefixRange,
  putOp,
  rangeOp,
  rangeResult,
  rangeResults,
} from './ops.js';
import { AcquireBatcher } from './acquire-batcher.js';
import { grantToken, slotIs, tokenParts } from './grant-tokens.js';
import { PerCallReleaseWatch } from './per-call-release-watch.js';
import { ReleaseBatcher } from './release-batcher.js';
import { decodeLock, decodeSession, encode, toSessionRecord, type LockRow, type SessionRow, type StoredLock, type StoredSession } from './records.js';
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
  /** Seals audit entries (keyed when the server has an audit key). */
  auditSealer?: AuditSealer;
  /**
   * Epoch-millisecond clock for advisory instants only (grantedAt, expiresAt,
   * audit `at`, ...). Liveness never reads it: tests skew it to prove that.
   */
  clock?: () => number;
  /**
   * Acquires of one event-loop turn share one etcd txn (default true; false sends
   * each alone, for benches that compare the two).
   */
  acquireBatching?: boolean;
}

/** A contended write (compare failed because someone else changed the key) is re-decided this many times. */
const MAX_DECISIONS = 16;
/** How long a write keeps re-trying through unavailability (election) before answering NOT_LEADER. */
const UNAVAILABLE_BUDGET_MS = 4_000;
const UNAVAILABLE_PAUSE_MS = 100;
const SCAN_PAGE = 1_000;
/** Gets per read txn when checking many keys at once (below etcd's default --max-txn-ops of 128). */
const READ_BATCH = 100;
const MAX_REMEMBERED_HOLDERS = 10_000;

/** A session's state as one read saw it: liveness key, record, and its grants with their liveness keys. */
interface SessionState {
  /** The liveness key's row, when the session is live. */
  live: SessionRow | null;
  /** The unleased record; null once the session was ended (or never existed). */
  record: SessionRow;
  /** Grants still live (their liveness key exists with the record's token). */
  liveLocks: Array<{ record: LockRow; liveModRevision: string }>;
  /** Revision of the read, for the "no grant created since" compare. */
  readRevision: string;
}

export class EtcdStore implements LockStore, ReleaseWaiter {
  readonly backend: BackendName = 'etcd';
  private readonly keys: KeyLayout;
  private readonly sessions = new SessionCache();
  /** Who held each key when an attempt here last failed on it, so that attempt's wait also ends with that session. */
  private readonly lastHolders = new Map<string, string>();
  private readonly sealer: AuditSealer;
  private readonly clock: () => number;
  private client: Etcd3 | null = null;
  private waits: WaitStrategy | null = null;
  private readonly grantLeases = new GrantLeasePool((seconds) => this.write(() => grantLease(this.etcd(), seconds)));
  /** Every session's keep-alives on one stream of the shared client. */
  private readonly keepAlives = new SharedKeepAlive(() => this.etcd());
  private readonly releases = new ReleaseBatcher(
    () => this.etcd(),
    (attempt) => this.write(attempt),
  );
  private readonly acquires: AcquireBatcher;
  /** Instance registry, fleet-wide waits and deadlock verdicts (etcd-fleet.ts). */
  /** The fleet-wide wait state (etcd-fleet.ts). */
  readonly fleet: EtcdFleet;
  /** Revision-addressed waits (waitForRelease below). */
  readonly releaseWaiter: ReleaseWaiter = { waitForRelease: (req) => this.waitForRelease(req) };

  constructor(private readonly options: EtcdStoreOptions) {
    if (options.endpoints.length === 0) throw new Error('EtcdStore needs at least one endpoint');
    this.acquires = new AcquireBatcher(() => this.etcd(), options.acquireBatching ?? true);
    this.keys = keyLayout(options.prefix ?? '/holdfast/', options.namespace);
    this.sealer = options.auditSealer ?? createAuditSealer();
    this.clock = options.clock ?? Date.now;
    this.fleet = new EtcdFleet({
      etcd: () => this.etcd(),
      keys: this.keys,
      write: (attempt) => this.write(attempt),
      knownSession: (sessionId, fresh) => (fresh ? this.readLiveSession(sessionId) : this.knownSession(sessionId)),
      keepAlive: (leaseId) => this.keepAlives.keepAlive(leaseId),
      clock: () => this.clock(),
    });
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
    this.keepAlives.close();
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

  async openSession(req: { sessionId: string; owner: string; ttlMillis: number; tokenHash: string }): Promise<SessionRecord> {
    const client = this.etcd();
    const leaseId = await this.write(() => grantLease(client, leaseTtlSeconds(req.ttlMillis)));
    const now = this.clock();
    const stored: StoredSession = {
      sessionId: req.sessionId,
      owner: req.owner,
      ttlMillis: req.ttlMillis,
      createdAt: now,
      lastHeartbeatAt: now,
      expiresAt: now + req.ttlMillis,
      tokenHash: req.tokenHash,
      leaseId,
    };
    const key = this.keys.session(req.sessionId);
    const recordKey = this.keys.sessionRecord(req.sessionId);
    const response = await this.write(() =>
      client.kv.txn({
        // The record outlives a lapsed session until the sweeper reports it: its id is not reusable before.
        compare: [createRevisionIs(key, '0'), createRevisionIs(recordKey, '0')],
        success: [putOp(key, encode(stored), leaseId), putOp(recordKey, encode(stored))],
        failure: [getOp(recordKey)],
      }),
    );
    if (!response.succeeded) {
      const existing = rangeResult(response, 0);
      // A retried open whose first attempt landed: the record carries this call's lease.
      if (existing && decodeSession(existing).session.leaseId === leaseId) {
        const row = decodeSession(existing);
        this.sessions.remember(row);
        return toSessionRecord(row.session);
      }
      await revokeLease(client, leaseId);
      throw new Error(`session id ${req.sessionId} already exists`);
    }
    this.sessions.remember({ session: stored, createRevision: response.header.revision, modRevision: response.header.revision });
    return toSessionRecord(stored);
  }

  async heartbeat(credential: SessionCredential): Promise<HeartbeatResult> {
    const client = this.etcd();
    const key = this.keys.session(credential.sessionId);
    let row = await this.knownSession(credential.sessionId);
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      if (!row) return { kind: 'session_not_found' };
      if (row.session.tokenHash !== credential.tokenHash) return { kind: 'unauthenticated' };
      const leaseId = row.session.leaseId;
      // etcd refuses to renew a lease that has run out, even one not yet revoked: a lapsed session stays lapsed.
      const remaining = await this.write(() => this.keepAlives.keepAlive(leaseId));
      const now = this.clock();
      const next: StoredSession = { ...row.session, lastHeartbeatAt: now, expiresAt: now + row.session.ttlMillis };
      const current: SessionRow = row;
      const response = await this.write(() =>
        client.kv.txn({
          // Only the incarnation whose hash was checked; the record follows for advisory reporting.
          compare: [createRevisionIs(key, current.createRevision)],
          success: remaining > 0 ? [putOp(key, encode(next), leaseId), putOp(this.keys.sessionRecord(credential.sessionId), encode(next))] : [],
          failure: [getOp(key)],
        }),
      );
      if (response.succeeded && remaining > 0) {
        this.sessions.remember({ session: next, createRevision: current.createRevision, modRevision: response.header.revision });
        return { kind: 'alive', session: toSessionRecord(next) };
      }
      const fresh = response.succeeded ? undefined : rangeResult(response, 0);
      if (!fresh) {
        this.sessions.forget(credential.sessionId);
        return { kind: 'session_not_found' };
      }
      row = decodeSession(fresh); // another incarnation under this id: check its hash
      this.sessions.remember(row);
    }
    throw new NotLeaderError(`heartbeat of ${credential.sessionId} kept racing other writers`);
  }

  async getSession(sessionId: string): Promise<SessionRecord | null> {
    const row = await this.readLiveSession(sessionId);
    return row ? toSessionRecord(row.session) : null;
  }

  async closeSession(credential: SessionCredential): Promise<CloseSessionResult> {
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      const state = await this.readSessionState(credential.sessionId);
      if (!state?.live) return { kind: 'session_not_found' };
      if (state.live.session.tokenHash !== credential.tokenHash) return { kind: 'unauthenticated' };
      const ended = await this.endSession(state, 'closed');
      if (ended) return { kind: 'closed', ended };
    }
    throw new NotLeaderError(`closing ${credential.sessionId} kept racing other writers`);
  }

  async killSession(sessionId: string, draft: AuditDraft): Promise<KillSessionResult> {
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      const [state, head] = await Promise.all([this.readSessionState(sessionId), audit.readAuditHead(this.etcd(), this.keys)]);
      const live = state?.live ? state : null;
      const append = audit.planAuditAppend(this.keys, this.sealer, head, this.clock(), draft, {
        action: 'session.kill',
        target: sessionId,
        outcome: live ? 'KILLED' : 'NOT_FOUND',
      });
      if (!live) {
        // NOT_FOUND is decided on "no live incarnation": pin that too.
        const compare = [append.compare, createRevisionIs(this.keys.session(sessionId), '0')];
        if (await this.commitAudit(compare, append.ops, append.entry)) return { ended: null, audit: append.entry };
        continue;
      }
      const ended = await this.endSession(live, 'killed', append);
      if (ended) return { ended, audit: append.entry };
    }
    throw new NotLeaderError(`killing ${sessionId} kept racing other writers`);
  }

  /**
   * Sessions whose lease ran out (etcd already deleted their liveness key) but
   * whose record is still here: ended with cause ttl, with the grants that were
   * still live when the session went. One compare-and-delete each: reported once.
   */
  async expireSessions(limit: number): Promise<EndedSession[]> {
    const ended: EndedSession[] = [];
    if (limit <= 0) return ended;
    for await (const records of this.scanPages(this.keys.sessionRecordsPrefix)) {
      const ids = records.map((kv) => this.keys.sessionIdOfRecord(kv.key)).filter((id): id is string => id !== null);
      const liveKeys = await this.readKeys(ids.map((id) => this.keys.session(id)));
      for (const [index, id] of ids.entries()) {
        if (ended.length >= limit) return ended;
        if (liveKeys[index]) continue;
        const state = await this.readSessionState(id);
        if (!state || state.live) continue; // ended elsewhere meanwhile, or (impossible) live again
        const result = await this.endSession(state, 'ttl');
        if (result) ended.push(result);
      }
    }
    return ended;
  }

  /**
   * Grants whose lease ran out (etcd already deleted their liveness key, or
   * an acquirer took the key over from a lapsed session) but whose record is
   * still here: the record is deleted and the grant reported, once.
   */
  async expireLocks(limit: number): Promise<EndedLock[]> {
    const removed: EndedLock[] = [];
    if (limit <= 0) return removed;
    for await (const records of this.scanPages(this.keys.lockRecordsPrefix)) {
      const rows = records.flatMap((kv) => {
        const named = this.keys.lockRecordOf(kv.key);
        return named ? [{ kv, row: decodeLock(named.key, kv) }] : [];
      });
      const liveKeys = await this.readKeys(rows.map(({ row }) => this.keys.lock(row.lock.key)));
      for (const [index, { kv, row }] of rows.entries()) {
        if (removed.length >= limit) return removed;
        const live = liveKeys[index];
        if (live && String(live.create_revision) === row.createRevision) continue;
        const response = await this.write(() =>
          this.etcd().kv.txn({ compare: [modRevisionIs(kv.key, row.modRevision)], success: [deleteOp(kv.key)], failure: [] }),
        );
        if (response.succeeded) removed.push({ ...row.lock, endedAt: this.clock() });
      }
    }
    return removed;
  }

  async listSessions(query: ListQuery): Promise<Page<SessionInfo>> {
    const page = await this.pageOf(this.keys.sessionsPrefix, '', decodeCursor(query.cursor), query.limit, (kv) => decodeSession(kv));
    const items = await Promise.all(
      page.items.map(async (row): Promise<SessionInfo> => {
        const records = await range(this.etcd(), prefixRange(this.keys.lockRecordsOf(row.session.sessionId)));
        const named = records.kvs.map((kv) => ({ kv, key: this.keys.lockRecordOf(kv.key)?.key })).filter((r) => r.key !== undefined);
        const liveKeys = await this.readKeys(named.map((r) => this.keys.lock(r.key!)));
        const lockCount = named.filter((r, index) => String(liveKeys[index]?.create_revision ?? '0') === String(r.kv.create_revision)).length;
        return { ...toSessionRecord(row.session), lockCount };
      }),
    );
    return { items, nextCursor: encodeCursor(page.nextCursor) };
  }

  // ---------------------------------------------------------------- locks

  async tryAcquire(req: { key: string; session: SessionCredential; ttlMillis: number }): Promise<TryAcquireResult> {
    const client = this.etcd();
    const sessionId = req.session.sessionId;
    const lockKey = this.keys.lock(req.key);
    const recordKey = this.keys.lockRecord(sessionId, req.key);
    const sessionKey = this.keys.session(sessionId);
    let session = await this.knownSession(sessionId);
    const writeId = randomUUID();
    let uncertain = false;
    const startedAt = Date.now(); // wall time only for the unavailability budget
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      if (!session) return { kind: 'session_not_found' };
      if (session.session.tokenHash !== req.session.tokenHash) return { kind: 'unauthenticated' };
      const leaseId = await this.grantLeases.forTtl(req.ttlMillis);
      const now = this.clock();
      const expiresAt = now + req.ttlMillis;
      const current: SessionRow = session;
      let answer: { response: ITxnResponse; slot: string };
      try {
        // One txn (shared with the other acquires of this turn): create the lock (on its TTL bucket's lease)
        // and its record if both are absent, only while the session is the incarnation whose hash was
        // checked. The token is the commit's revision × 1000 + this grant's slot in the batch.
        answer = await this.acquires.submit(lockKey, (slot) => {
          const mine: StoredLock = {
            slot,
            sessionId,
            sessionRevision: current.createRevision,
            owner: current.session.owner,
            ttlMillis: req.ttlMillis,
            grantedAt: now,
            expiresAt,
            leaseId,
            writeId,
          };
          const value = encode(mine);
          return {
            compare: [createRevisionIs(lockKey, '0'), createRevisionIs(recordKey, '0'), createRevisionIs(sessionKey, current.createRevision)],
            success: [putOp(lockKey, value, leaseId), putOp(recordKey, value)],
            failure: [getOp(lockKey), getOp(sessionKey), getOp(recordKey)],
          };
        });
      } catch (error) {
        // Applied or not? The next round's txn reads back exactly that (this call's writeId on the lock key).
        await this.pauseIfUnavailable(error, startedAt);
        uncertain = true;
        continue;
      }
      const { response } = answer;
      if (response.succeeded) {
        const grant: LockGrant = {
          key: req.key,
          sessionId,
          fencingToken: grantToken(response.header.revision, answer.slot),
          ttlMillis: req.ttlMillis,
          grantedAt: now,
          expiresAt,
        };
        return { kind: 'granted', grant, owner: current.session.owner, existing: false };
      }
      const sessionKv = rangeResult(response, 1);
      if (!sessionKv) {
        this.sessions.forget(sessionId);
        return { kind: 'session_not_found' };
      }
      const fresh = decodeSession(sessionKv);
      this.sessions.remember(fresh);
      if (fresh.createRevision !== session.createRevision) {
        session = fresh; // another incarnation under this id: its hash is checked next round
        continue;
      }
      const lockKv = rangeResult(response, 0);
      const recordKv = rangeResult(response, 2);
      if (!lockKv) {
        // Free, but our record of an earlier grant of this key was not swept yet: it can no
        // longer be reported (its key is being reused), so drop it and take the key.
        if (recordKv) await this.deleteIfUnchanged(recordKv);
        continue;
      }
      const row = decodeLock(req.key, lockKv);
      if (row.stored.sessionId === sessionId && row.stored.sessionRevision === session.createRevision) {
        // Ours already. If our own earlier attempt broke mid-flight and landed, it is this call's grant.
        const landed = uncertain && row.stored.writeId === writeId;
        return { kind: 'granted', grant: stripOwner(row.lock), owner: row.lock.owner, existing: !landed };
      }
      if (await this.sessionIncarnationLive(row.stored.sessionId, row.stored.sessionRevision)) {
        // The failed attempt's revision: a release after it is what a waiter waits for.
        this.rememberHolder(req.key, row.stored.sessionId);
        return { kind: 'held', holder: row.lock, observedRevision: response.header.revision };
      }
      // The holder's session lapsed (its lease ran out) but nobody swept yet: the lock is free.
      // Remove exactly that incarnation of the key (its record stays for the sweeper), then create anew.
      await this.write(() =>
        client.kv.txn({
          compare: [modRevisionIs(lockKey, row.modRevision), createRevisionIsNot(this.keys.session(row.stored.sessionId), row.stored.sessionRevision)],
          success: [deleteOp(lockKey)],
          failure: [],
        }),
      );
    }
    throw new NotLeaderError(`acquire of ${JSON.stringify(req.key)} kept racing other writers`);
  }

  async renew(req: { key: string; session: SessionCredential; fencingToken: FencingToken; ttlMillis?: number }): Promise<RenewResult> {
    const client = this.etcd();
    const sessionId = req.session.sessionId;
    const lockKey = this.keys.lock(req.key);
    const sessionKey = this.keys.session(sessionId);
    const startedAt = Date.now();
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      const read = await readTxn(client, { success: [getOp(lockKey), getOp(sessionKey)] });
      const sessionKv = rangeResult(read, 1);
      if (!sessionKv) {
        this.sessions.forget(sessionId);
        return { kind: 'session_not_found' };
      }
      const session = decodeSession(sessionKv);
      this.sessions.remember(session);
      if (session.session.tokenHash !== req.session.tokenHash) return { kind: 'unauthenticated' };
      const lockKv = rangeResult(read, 0);
      if (!lockKv) return { kind: 'lost' };
      const row = decodeLock(req.key, lockKv);
      if (row.lock.fencingToken !== req.fencingToken) return { kind: 'lost' };
      if (row.stored.sessionId !== sessionId || row.stored.sessionRevision !== session.createRevision) return { kind: 'lost' };

      // The key moves to a fresh lease with the (kept or new) TTL: etcd's clock restarts from there.
      const ttlMillis = req.ttlMillis ?? row.stored.ttlMillis;
      const leaseId = await this.grantLeases.forTtl(ttlMillis);
      const now = this.clock();
      const renewed: StoredLock = { ...row.stored, ttlMillis, expiresAt: now + ttlMillis, leaseId, writeId: randomUUID() };
      let response: ITxnResponse;
      try {
        response = await client.kv.txn({
          compare: [modRevisionIs(lockKey, row.modRevision), createRevisionIs(sessionKey, session.createRevision)],
          // A PUT on an existing key keeps its create revision: same fencing token, new lease.
          success: [putOp(lockKey, encode(renewed), leaseId), putOp(this.keys.lockRecord(sessionId, req.key), encode(renewed))],
          failure: [],
        });
      } catch (error) {
        await this.pauseIfUnavailable(error, startedAt);
        // Applied or not: the lock key carries this call's write exactly when it was.
        const check = (await range(client, { key: lockKey })).kvs[0];
        if (check && decodeLock(req.key, check).lock.fencingToken === req.fencingToken) {
          const landed = decodeLock(req.key, check);
          if (landed.stored.writeId === renewed.writeId) return { kind: 'renewed', lock: landed.lock };
        }
        continue;
      }
      if (response.succeeded) return { kind: 'renewed', lock: { ...row.lock, ttlMillis, expiresAt: renewed.expiresAt } };
    }
    throw new NotLeaderError(`renew of ${JSON.stringify(req.key)} kept racing other writers`);
  }

  async release(req: { key: string; session: SessionCredential; fencingToken: FencingToken }): Promise<ReleaseResult> {
    const sessionId = req.session.sessionId;
    const lockKey = this.keys.lock(req.key);
    const recordKey = this.keys.lockRecord(sessionId, req.key);
    const sessionKey = this.keys.session(sessionId);
    let session = await this.knownSession(sessionId);
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      if (!session) return { kind: 'session_not_found' };
      if (session.session.tokenHash !== req.session.tokenHash) return { kind: 'unauthenticated' };
      // Compare-and-delete on (key, token) of this session incarnation's grant, sharing a round trip with
      // concurrent releases. Retried only on unavailability: a repeat of an applied delete fails its
      // compare and answers `lost` (benign LOCK_LOST), never a second delete. The token names the
      // grant by create revision and slot (grant-tokens.ts): both are compared.
      const token = tokenParts(req.fencingToken);
      if (!token) return { kind: 'lost' };
      const response = await this.releases.submit(lockKey, {
        compare: [
          createRevisionIs(lockKey, token.revision),
          ...slotIs(lockKey, token.slot),
          createRevisionIs(recordKey, token.revision),
          createRevisionIs(sessionKey, session.createRevision),
        ],
        // Only the lock key's deleted value is read back (the record is its copy).
        success: [deleteOp(lockKey), deleteOp(recordKey, false)],
        failure: [getOp(sessionKey)],
      });
      if (response.succeeded) {
        const deleted = deletedResult(response, 0);
        if (!deleted) return { kind: 'lost' };
        const row = decodeLock(req.key, deleted);
        return { kind: 'released', lock: { ...row.lock, endedAt: this.clock() } };
      }
      const sessionKv = rangeResult(response, 0);
      if (!sessionKv) {
        this.sessions.forget(sessionId);
        return { kind: 'session_not_found' };
      }
      const fresh = decodeSession(sessionKv);
      this.sessions.remember(fresh);
      if (fresh.createRevision === session.createRevision) return { kind: 'lost' };
      session = fresh;
    }
    throw new NotLeaderError(`release of ${JSON.stringify(req.key)} kept racing other writers`);
  }

  async readLock(key: string): Promise<HeldLock | null> {
    const response = await range(this.etcd(), { key: this.keys.lock(key) });
    const kv = response.kvs[0];
    if (!kv) return null;
    const row = decodeLock(key, kv);
    return (await this.sessionIncarnationLive(row.stored.sessionId, row.stored.sessionRevision)) ? row.lock : null;
  }

  async listLocks(query: ListQuery & { prefix?: string }): Promise<Page<HeldLock>> {
    const checked = new Map<string, Promise<boolean>>();
    const page = await this.pageOf(this.keys.locksPrefix, query.prefix ?? '', decodeCursor(query.cursor), query.limit, async (kv) => {
      const key = this.keys.lockKeyOf(kv.key);
      if (key === null) return null;
      const row = decodeLock(key, kv);
      const incarnation = `${row.stored.sessionId}@${row.stored.sessionRevision}`;
      let live = checked.get(incarnation);
      if (!live) {
        live = this.sessionIncarnationLive(row.stored.sessionId, row.stored.sessionRevision);
        checked.set(incarnation, live);
      }
      return (await live) ? row.lock : null;
    });
    return { items: page.items, nextCursor: encodeCursor(page.nextCursor) };
  }

  async forceRevoke(req: { key: string; expectedFencingToken?: FencingToken; audit: AuditDraft }): Promise<ForceRevokeResult> {
    const lockKey = this.keys.lock(req.key);
    for (let decision = 0; decision < MAX_DECISIONS; decision += 1) {
      const [lockResponse, head] = await Promise.all([range(this.etcd(), { key: lockKey }), audit.readAuditHead(this.etcd(), this.keys)]);
      const kv = lockResponse.kvs[0];
      const row = kv ? decodeLock(req.key, kv) : null;
      const compare: ICompare[] = [modRevisionIs(lockKey, row?.modRevision ?? '0')];
      let live: LockRow | null = null;
      if (row) {
        const holderKey = this.keys.session(row.stored.sessionId);
        if (await this.sessionIncarnationLive(row.stored.sessionId, row.stored.sessionRevision)) {
          live = row;
          compare.push(createRevisionIs(holderKey, row.stored.sessionRevision));
        } else {
          compare.push(createRevisionIsNot(holderKey, row.stored.sessionRevision));
        }
      }
      const outcome = !live
        ? 'NOT_HELD'
        : req.expectedFencingToken !== undefined && req.expectedFencingToken !== live.lock.fencingToken
          ? 'TOKEN_MISMATCH'
          : 'REVOKED';
      const append = audit.planAuditAppend(this.keys, this.sealer, head, this.clock(), req.audit, {
        action: 'lock.revoke',
        target: req.key,
        fencingToken: live?.lock.fencingToken ?? req.expectedFencingToken,
        outcome,
      });
      let ops = append.ops;
      if (outcome === 'REVOKED' && live) {
        const recordKey = this.keys.lockRecord(live.stored.sessionId, req.key);
        compare.push(createRevisionIs(recordKey, live.createRevision));
        ops = [deleteOp(lockKey), deleteOp(recordKey), ...append.ops];
      }
      if (!(await this.commitAudit([...compare, append.compare], ops, append.entry))) continue;
      if (outcome === 'REVOKED' && live) {
        return { outcome, revoked: { ...live.lock, endedAt: append.entry.at }, audit: append.entry };
      }
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

  async readAuditHead(): Promise<AuditHead> {
    return audit.publicHead(await audit.readAuditHead(this.etcd(), this.keys));
  }

  /**
   * Live sessions and grants by the same test as everything else (leased keys
   * present, holder incarnation matching). `oldestHeldMillis` is advisory: this
   * server's clock minus the granting server's grantedAt, floored at 0.
   */
  async summary(): Promise<StoreSummary> {
    const liveSessions = new Map<string, string>();
    for await (const page of this.scanPages(this.keys.sessionsPrefix)) {
      for (const kv of page) {
        const id = this.keys.sessionIdOf(kv.key);
        if (id !== null) liveSessions.set(id, String(kv.create_revision));
      }
    }
    let heldLocks = 0;
    let oldestGrantedAt = Number.POSITIVE_INFINITY;
    for await (const page of this.scanPages(this.keys.locksPrefix)) {
      for (const kv of page) {
        const key = this.keys.lockKeyOf(kv.key);
        if (key === null) continue;
        const row = decodeLock(key, kv);
        if (liveSessions.get(row.stored.sessionId) !== row.stored.sessionRevision) continue;
        heldLocks += 1;
        oldestGrantedAt = Math.min(oldestGrantedAt, row.stored.grantedAt);
      }
    }
    const oldestHeldMillis = heldLocks === 0 ? 0 : Math.max(0, this.clock() - oldestGrantedAt);
    return { heldLocks, activeSessions: liveSessions.size, oldestHeldMillis };
  }

  // ---------------------------------------------------------------- waiting

  async waitForRelease(req: EtcdWaitRequest): Promise<WaitResult> {
    const waits = this.waits;
    if (!waits) return { outcome: 'fallback', cause: 'store not initialised' };
    if (req.signal.aborted) return { outcome: 'aborted' };
    if (req.observedRevision !== undefined) {
      return waits.wait({ ...req, observedRevision: req.observedRevision, holderSessionId: this.lastHolders.get(req.key) });
    }
    // No failed attempt to anchor on: anchor on now, and a key already free is a release.
    const response = await range(this.etcd(), { key: this.keys.lock(req.key) });
    const kv = response.kvs[0];
    if (!kv) return { outcome: 'released' };
    return waits.wait({ ...req, observedRevision: response.header.revision, holderSessionId: decodeLock(req.key, kv).stored.sessionId });
  }

  private rememberHolder(key: string, sessionId: string): void {
    this.lastHolders.delete(key);
    this.lastHolders.set(key, sessionId);
    if (this.lastHolders.size > MAX_REMEMBERED_HOLDERS) {
      const oldest = this.lastHolders.keys().next();
      if (!oldest.done) this.lastHolders.delete(oldest.value);
    }
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
   * Ends a session in one txn (plus an audit append for kills): its liveness key
   * (if still there), its record, and every grant still live, with their records.
   * Grants whose lease already ran out keep their records for expireLocks.
   * Null when something changed since the read (re-decide).
   */
  private async endSession(state: SessionState, cause: EndedSession['cause'], append?: audit.PlannedAppend): Promise<EndedSession | null> {
    const sessionId = state.record.session.sessionId;
    const sessionKey = this.keys.session(sessionId);
    const recordKey = this.keys.sessionRecord(sessionId);
    const compare: ICompare[] = [
      createRevisionIs(recordKey, state.record.createRevision),
      // Live: exactly the incarnation read. Lapsed: still gone (etcd dropped it).
      createRevisionIs(sessionKey, state.live ? state.live.createRevision : '0'),
      // No grant was added to this session after the read (an acquire racing the end).
      nothingCreatedUnderAfter(this.keys.lockRecordsOf(sessionId), state.readRevision),
    ];
    const ops: IRequestOp[] = [deleteOp(recordKey)];
    if (state.live) ops.push(deleteOp(sessionKey));
    for (const { record, liveModRevision } of state.liveLocks) {
      const lockKey = this.keys.lock(record.lock.key);
      const lockRecordKey = this.keys.lockRecord(sessionId, record.lock.key);
      compare.push(modRevisionIs(lockKey, liveModRevision), modRevisionIs(lockRecordKey, record.modRevision));
      ops.push(deleteOp(lockKey), deleteOp(lockRecordKey));
    }
    let committed: boolean;
    if (append) {
      committed = await this.commitAudit([...compare, append.compare], [...ops, ...append.ops], append.entry);
    } else {
      const response = await this.write(() => this.etcd().kv.txn({ compare, success: ops, failure: [] }));
      committed = response.succeeded;
    }
    if (!committed) return null;
    this.sessions.forget(sessionId);
    const client = this.etcd();
    void revokeLease(client, state.record.session.leaseId); // grant leases are shared: they run out by themselves
    const endedAt = append ? append.entry.at : this.clock();
    return {
      session: toSessionRecord(state.record.session),
      cause,
      releasedLocks: state.liveLocks.map(({ record }) => ({ ...record.lock, endedAt })),
    };
  }

  /** The session's record, liveness key and grants, as one consistent read (plus the grants' liveness keys). */
  private async readSessionState(sessionId: string): Promise<SessionState | null> {
    const response = await readTxn(this.etcd(), {
      success: [getOp(this.keys.sessionRecord(sessionId)), getOp(this.keys.session(sessionId)), rangeOp(this.keys.lockRecordsOf(sessionId))],
    });
    const recordKv = rangeResult(response, 0);
    if (!recordKv) {
      this.sessions.forget(sessionId);
      return null;
    }
    const record = decodeSession(recordKv);
    const liveKv = rangeResult(response, 1);
    const live = liveKv && String(liveKv.create_revision) === record.createRevision ? decodeSession(liveKv) : null;
    if (live) this.sessions.remember(live);
    const records = rangeResults(response, 2).flatMap((kv) => {
      const named = this.keys.lockRecordOf(kv.key);
      return named ? [decodeLock(named.key, kv)] : [];
    });
    const liveKeys = await this.readKeys(records.map((row) => this.keys.lock(row.lock.key)));
    const liveLocks = records.flatMap((row, index) => {
      const kv = liveKeys[index];
      return kv && String(kv.create_revision) === row.createRevision ? [{ record: row, liveModRevision: String(kv.mod_revision) }] : [];
    });
    return { live, record, liveLocks, readRevision: response.header.revision };
  }

  /** The live incarnation of a session, read now (never from the cache). */
  private async readLiveSession(sessionId: string): Promise<SessionRow | null> {
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

  /**
   * The incarnation a session-scoped txn will compare: from the cache when known
   * (the txn's compare on its create revision catches an ended one), else read.
   */
  private async knownSession(sessionId: string): Promise<SessionRow | null> {
    return this.sessions.get(sessionId) ?? (await this.readLiveSession(sessionId));
  }

  /** Whether that incarnation of the session is live now: its leased key exists with that create revision. */
  private async sessionIncarnationLive(sessionId: string, createRevision: string): Promise<boolean> {
    const response = await range(this.etcd(), { key: this.keys.session(sessionId), keys_only: true });
    const kv = response.kvs[0];
    return kv !== undefined && String(kv.create_revision) === createRevision;
  }

  /** Reads many keys (consistently per batch); undefined where a key is absent. */
  private async readKeys(keys: Buffer[]): Promise<Array<IKeyValue | undefined>> {
    const found: Array<IKeyValue | undefined> = [];
    for (let start = 0; start < keys.length; start += READ_BATCH) {
      const batch = keys.slice(start, start + READ_BATCH);
      const response = await readTxn(this.etcd(), { success: batch.map((key) => getOp(key)) });
      batch.forEach((_, index) => found.push(rangeResult(response, index)));
    }
    return found;
  }

  /** Deletes a key exactly as it was read (a no-op if it changed meanwhile). */
  private async deleteIfUnchanged(kv: IKeyValue): Promise<void> {
    await this.write(() =>
      this.etcd().kv.txn({ compare: [modRevisionIs(kv.key, String(kv.mod_revision))], success: [deleteOp(kv.key)], failure: [] }),
    );
  }

  /** Every key-value under a prefix, a page at a time, in key order. */
  private async *scanPages(prefix: Buffer): AsyncIterable<IKeyValue[]> {
    const { range_end } = prefixRange(prefix);
    let from = prefix;
    for (;;) {
      const response = await range(this.etcd(), { key: from, range_end, limit: SCAN_PAGE });
      if (response.kvs.length > 0) yield response.kvs;
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

function stripOwner(lock: HeldLock): LockGrant {
  const { owner: _owner, ...grant } = lock;
  void _owner;
  return grant;
}
