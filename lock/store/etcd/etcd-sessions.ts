/**
 * Sessions on etcd: open, heartbeat, close, kill, the sweep of lapsed ones, and the listing.
 * A session is live while its liveness key {root}s/{id} (on the session's lease) exists; its
 * unleased record {root}sr/{id} outlives a lapse until expireSessions reports it, once. Ending a
 * session is one txn over its keys and every grant still live, pinned to the state it read.
 */
import type { ICompare, IRequestOp } from 'etcd3';
import { NotLeaderError } from '../../errors.js';
import type { Page, SessionInfo } from '../../../contract/records.js';
import type {
  OpenSessionRequest,
  AuditDraft,
  CloseSessionResult,
  EndedSession,
  HeartbeatResult,
  KillSessionResult,
  ListQuery,
  SessionCredential,
  SessionRecord,
  AuthenticateResult,
} from '../spi.js';
import type { PlannedAppend } from './audit-log.js';
import { decodeSessionCursor, encodeCursor } from './cursors.js';
import { endInRounds } from './sweep-rounds.js';
import { range, readTxn } from './etcd-client.js';
import type { EtcdAudit } from './etcd-audit.js';
import { MAX_DECISIONS, type EtcdContext } from './etcd-context.js';
import { grantLease, leaseTimeToLive, leaseTtlSeconds, revokeLease } from './leases.js';
import {
  createRevisionIs,
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
import { dropAnchorIfEmpty, livenessKey } from './holders.js';
import { landedDelete } from './landed-delete.js';
import { decodeLock, decodeSession, encode, toSessionRecord, type LockRow, type SessionRow, type StoredSession } from './records.js';

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

export class EtcdSessions {
  constructor(
    private readonly ctx: EtcdContext,
    private readonly audit: EtcdAudit,
  ) {}

  async openSession(req: OpenSessionRequest): Promise<SessionRecord> {
    const client = this.ctx.etcd();
    const leaseId = await this.ctx.write(() => grantLease(client, leaseTtlSeconds(req.ttlMillis)));
    const now = this.ctx.clock();
    const stored: StoredSession = {
      sessionId: req.sessionId,
      owner: req.owner,
      ttlMillis: req.ttlMillis,
      createdAt: now,
      lastHeartbeatAt: now,
      expiresAt: now + req.ttlMillis,
      tokenHash: req.tokenHash,
      leaseId,
      ...(req.openedBy !== undefined ? { openedBy: req.openedBy } : {}),
    };
    const key = this.ctx.keys.session(req.sessionId);
    const recordKey = this.ctx.keys.sessionRecord(req.sessionId);
    const response = await this.ctx.write(() =>
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
        this.ctx.sessions.remember(row);
        return toSessionRecord(row.session);
      }
      await revokeLease(client, leaseId);
      throw new Error(`session id ${req.sessionId} already exists`);
    }
    this.ctx.sessions.remember({ session: stored, createRevision: response.header.revision, modRevision: response.header.revision });
    return toSessionRecord(stored);
  }

  /**
   * Lease-only: a keep-alive on the shared stream and one coalesced read of the liveness key,
   * no write. The session's expiry is its lease's (reads derive it from the lease), so nothing
   * else needs rewriting. The read comes after the keep-alive because a close deletes the
   * liveness key before it revokes the lease: a key still there after the lease was renewed
   * means the session was live when the heartbeat landed. The read is about a quarter of the
   * heartbeat's CPU (issue 22). It is not replaced by a watch progress request ("no delete of the key
   * up to the keep-alive's revision"): on etcd before 3.4.24 (Debian's is 3.4.23) a requested progress
   * notification can overtake events it covers (etcd-io/etcd#15220), which would answer "alive" for
   * a session already ended.
   */
  async heartbeat(credential: SessionCredential): Promise<HeartbeatResult> {
    let row = await this.ctx.knownSession(credential.sessionId);
    // A cached row whose hash differs may be a stale incarnation: decide on a fresh read.
    if (row && row.session.tokenHash !== credential.tokenHash) row = await this.ctx.readLiveSession(credential.sessionId);
    if (!row) return { kind: 'session_not_found' };
    if (row.session.tokenHash !== credential.tokenHash) return { kind: 'unauthenticated' };
    const current = row;
    // etcd refuses to renew a lease that has run out, even one not yet revoked: a lapsed session stays lapsed.
    const remaining = await this.ctx.write(() => this.ctx.keepAlives.keepAlive(current.session.leaseId));
    const live = remaining > 0 && (await this.ctx.sessionIncarnationLive(credential.sessionId, current.createRevision));
    if (!live) {
      this.ctx.sessions.forget(credential.sessionId);
      return { kind: 'session_not_found' };
    }
    const now = this.ctx.clock();
    return { kind: 'alive', session: toSessionRecord({ ...current.session, lastHeartbeatAt: now, expiresAt: now + current.session.ttlMillis }) };
  }

  async authenticateSession(credential: SessionCredential): Promise<AuthenticateResult> {
    const row = await this.ctx.readLiveSession(credential.sessionId);
    if (!row) return { kind: 'session_not_found' };
    if (row.session.tokenHash !== credential.tokenHash) return { kind: 'unauthenticated' };
    return { kind: 'authenticated', session: await this.asOfLease(row.session) };
  }

  async getSession(sessionId: string): Promise<SessionRecord | null> {
    const row = await this.ctx.readLiveSession(sessionId);
    return row ? this.asOfLease(row.session) : null;
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
      const [state, head] = await Promise.all([this.readSessionState(sessionId), this.audit.storedHead()]);
      const live = state?.live ? state : null;
      const append = this.audit.plan(head, draft, {
        action: 'session.kill',
        target: sessionId,
        outcome: live ? 'KILLED' : 'NOT_FOUND',
      });
      if (!live) {
        // NOT_FOUND is decided on "no live incarnation": pin that too.
        const compare = [append.compare, createRevisionIs(this.ctx.keys.session(sessionId), '0')];
        if (await this.audit.commit(compare, append.ops, append.entry)) return { ended: null, audit: append.entry };
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
   * Ended in concurrent rounds (sweep-rounds.ts).
   */
  async expireSessions(limit: number): Promise<EndedSession[]> {
    const ended: EndedSession[] = [];
    if (limit <= 0) return ended;
    for await (const records of this.ctx.scanPages(this.ctx.keys.sessionRecordsPrefix)) {
      const ids = records.map((kv) => this.ctx.keys.sessionIdOfRecord(kv.key)).filter((id): id is string => id !== null);
      const liveKeys = await this.ctx.readKeys(ids.map((id) => this.ctx.keys.session(id)));
      const lapsed = ids.filter((_, index) => !liveKeys[index]);
      ended.push(
        ...(await endInRounds(lapsed, limit - ended.length, async (id) => {
          const state = await this.readSessionState(id);
          if (!state || state.live) return null; // ended elsewhere meanwhile, or (impossible) live again
          return this.endSession(state, 'ttl');
        })),
      );
      if (ended.length >= limit) break;
    }
    return ended;
  }

  async listSessions(query: ListQuery): Promise<Page<SessionInfo>> {
    const page = await this.ctx.pageOf(this.ctx.keys.sessionsPrefix, '', decodeSessionCursor(query.cursor), query.limit, (kv) => decodeSession(kv));
    const items = await Promise.all(
      page.items.map(async (row): Promise<SessionInfo> => {
        const records = await range(this.ctx.etcd(), prefixRange(this.ctx.keys.lockRecordsOf(row.session.sessionId)));
        const rows = records.kvs.flatMap((kv) => {
          const named = this.ctx.keys.lockRecordOf(kv.key);
          return named ? [decodeLock(named.key, kv)] : [];
        });
        const liveKeys = await this.ctx.readKeys(rows.map((row) => livenessKey(this.ctx.keys, row)));
        const lockCount = rows.filter((row, index) => String(liveKeys[index]?.create_revision ?? '0') === row.createRevision).length;
        return { ...(await this.asOfLease(row.session)), lockCount };
      }),
    );
    return { items, nextCursor: encodeCursor(page.nextCursor) };
  }

  /**
   * Ends a session in one txn (plus an audit append for kills): its liveness key
   * (if still there), its record, and every grant still live, with their records.
   * Grants whose lease already ran out keep their records for expireLocks.
   * Null when something changed since the read (re-decide).
   */
  private async endSession(state: SessionState, cause: EndedSession['cause'], append?: PlannedAppend): Promise<EndedSession | null> {
    const sessionId = state.record.session.sessionId;
    const sessionKey = this.ctx.keys.session(sessionId);
    const recordKey = this.ctx.keys.sessionRecord(sessionId);
    const compare: ICompare[] = [
      createRevisionIs(recordKey, state.record.createRevision),
      // Live: exactly the incarnation read. Lapsed: still gone (etcd dropped it).
      createRevisionIs(sessionKey, state.live ? state.live.createRevision : '0'),
      // No grant was added to this session after the read (an acquire racing the end).
      nothingCreatedUnderAfter(this.ctx.keys.lockRecordsOf(sessionId), state.readRevision),
    ];
    const ops: IRequestOp[] = [deleteOp(recordKey)];
    if (state.live) ops.push(deleteOp(sessionKey));
    for (const { record, liveModRevision } of state.liveLocks) {
      const lockKey = livenessKey(this.ctx.keys, record);
      const lockRecordKey = this.ctx.keys.lockRecord(sessionId, record.lock.key);
      compare.push(modRevisionIs(lockKey, liveModRevision), modRevisionIs(lockRecordKey, record.modRevision));
      ops.push(deleteOp(lockKey), deleteOp(lockRecordKey));
    }
    let committed: boolean;
    if (append) {
      committed = await this.audit.commit([...compare, append.compare], [...ops, ...append.ops], append.entry);
    } else {
      const { result: response, resent } = await this.ctx.writeTellingResends(() => this.ctx.etcd().kv.txn({ compare, success: ops, failure: [] }));
      committed = response.succeeded || (resent && state.live !== null && (await this.closedEarlier(state, state.live, response.header.revision)));
    }
    if (!committed) return null;
    this.ctx.sessions.forget(sessionId);
    const client = this.ctx.etcd();
    // A lapsed session's lease is already gone (that is how it lapsed): revoking it would only cost
    // a round trip and an error. Grant leases are shared: they run out by themselves.
    if (state.live) void revokeLease(client, state.record.session.leaseId);
    // A multi-holder key whose last grant this was loses its anchor too (holders.ts).
    for (const { record } of state.liveLocks) if (record.stored.mode !== undefined) await dropAnchorIfEmpty(this.ctx, record.lock.key);
    const endedAt = append ? append.entry.at : this.ctx.clock();
    return {
      session: toSessionRecord(state.record.session),
      cause,
      releasedLocks: state.liveLocks.map(({ record }) => ({ ...record.lock, endedAt })),
    };
  }

  /** Whether this holder's own close ended the session incarnation `state` read (landed-delete.ts): its record and liveness key went in one txn, no audit append. */
  private async closedEarlier(state: SessionState, live: SessionRow, goneBy: string): Promise<boolean> {
    const sessionId = state.record.session.sessionId;
    const landed = await landedDelete(this.ctx.etcd(), {
      key: this.ctx.keys.sessionRecord(sessionId),
      createRevision: BigInt(state.record.createRevision),
      companion: { key: this.ctx.keys.session(sessionId), createRevision: BigInt(live.createRevision) },
      auditHead: this.ctx.keys.auditHead,
      goneBy: BigInt(goneBy),
    });
    return landed !== null;
  }

  /**
   * The session as its lease tells it: heartbeats renew only the lease, so the last heartbeat
   * and the expiry are read from it (whole seconds, etcd's granularity); the stored instants
   * are the open's. A lease already gone reports the stored instants.
   */
  private async asOfLease(session: StoredSession): Promise<SessionRecord> {
    const lease = await leaseTimeToLive(this.ctx.etcd(), session.leaseId);
    if (!lease) return toSessionRecord(session);
    const now = this.ctx.clock();
    const expiresAt = now + lease.remainingSeconds * 1000;
    return toSessionRecord({ ...session, lastHeartbeatAt: expiresAt - lease.grantedSeconds * 1000, expiresAt });
  }

  /** The session's record, liveness key and grants, as one consistent read (plus the grants' liveness keys). */
  private async readSessionState(sessionId: string): Promise<SessionState | null> {
    const response = await readTxn(this.ctx.etcd(), {
      success: [getOp(this.ctx.keys.sessionRecord(sessionId)), getOp(this.ctx.keys.session(sessionId)), rangeOp(this.ctx.keys.lockRecordsOf(sessionId))],
    });
    const recordKv = rangeResult(response, 0);
    if (!recordKv) {
      this.ctx.sessions.forget(sessionId);
      return null;
    }
    const record = decodeSession(recordKv);
    const liveKv = rangeResult(response, 1);
    const live = liveKv && String(liveKv.create_revision) === record.createRevision ? decodeSession(liveKv) : null;
    if (live) this.ctx.sessions.remember(live);
    const records = rangeResults(response, 2).flatMap((kv) => {
      const named = this.ctx.keys.lockRecordOf(kv.key);
      return named ? [decodeLock(named.key, kv)] : [];
    });
    const liveKeys = await this.ctx.readKeys(records.map((row) => livenessKey(this.ctx.keys, row)));
    const liveLocks = records.flatMap((row, index) => {
      const kv = liveKeys[index];
      return kv && String(kv.create_revision) === row.createRevision ? [{ record: row, liveModRevision: String(kv.mod_revision) }] : [];
    });
    return { live, record, liveLocks, readRevision: response.header.revision };
  }
}
