/**
 * The store SPI in memory, for one process: the same rules as the durable stores (the
 * conformance suite runs on it), with the clock as a seam. It exists so core can be built and
 * tested on its own — fast, and on a clock a test moves — not to serve: nothing survives a
 * restart, and two servers cannot share it. It offers no release waiter, feed or fleet state,
 * so core waits by polling, as on any store without them.
 *
 * Every method does all its reads and writes in one synchronous turn of the event loop, which
 * is what makes each one atomic here (the durable stores use a transaction or a txn).
 */
import { createAuditSealer, GENESIS_HASH, type AuditSealer } from '../../audit/chain.js';
import { MUTEX, type AuditEntry, type BackendName, type FencingToken, type Page, type SessionEndCause, type SessionInfo } from '../../../contract/records.js';
import type {
  OpenSessionRequest,
  AuditDraft,
  AuditHead,
  AuditQuery,
  AuthenticateResult,
  CloseSessionResult,
  PruneAuditResult,
  EndedLock,
  EndedSession,
  ForceRevokeResult,
  HeartbeatResult,
  HeldLock,
  KillSessionResult,
  ListQuery,
  LockStore,
  ReleaseResult,
  RenewRequest,
  RenewResult,
  SessionCredential,
  SessionRecord,
  SessionRefusal,
  StoreSummary,
  SummaryQuery,
  TokenFloor,
  TryAcquireResult,
  AcquireAttempt,
} from '../spi.js';
import { decodeCursor, decodeKeyCursor, decodeSessionCursor, encodeCursor } from '../cursor.js';
import { tallyByPolicy } from '../policy-tally.js';
import { admission, describeKey } from '../multi-holder.js';
import { holdingOf } from '../../../contract/wire-rules.js';
import { MemoryConsoleRecords } from './memory-console-records.js';

interface StoredSession extends SessionRecord {
  tokenHash: string;
}

export interface MemoryStoreOptions {
  /** The store's clock (epoch milliseconds); a test passes one it moves. */
  now?: () => number;
  sealer?: AuditSealer;
  /** Reported as the backend; the in-memory store stands in for the embedded one in core tests. */
  backend?: BackendName;
}

export class MemoryLockStore implements LockStore {
  readonly backend: BackendName;
  private readonly now: () => number;
  private readonly sealer: AuditSealer;
  private readonly sessions = new Map<string, StoredSession>();
  /** Every grant of each key, in token order (a mutex key has at most one live). */
  private readonly locks = new Map<string, HeldLock[]>();
  private audit: AuditEntry[] = [];
  private auditHead: AuditHead = { lastId: '0', lastHash: GENESIS_HASH, checkpointId: '0', checkpointHash: GENESIS_HASH, seal: null };
  private lastToken = 0n;
  readonly consoleRecords = new MemoryConsoleRecords(() => this.now());
  readonly multiHolder: boolean = true;

  constructor(options: MemoryStoreOptions = {}) {
    this.now = options.now ?? Date.now;
    this.sealer = options.sealer ?? createAuditSealer();
    this.backend = options.backend ?? 'embedded';
  }

  /**
   * Issue 25: nothing here outlives the process, so it is never restored (always `current`); advance
   * raises the counter to the store clock in microseconds like the durable stores (conformance).
   */
  readonly tokenFloor: TokenFloor = {
    check: async () => ({ state: 'current', recorded: 'memory', live: 'memory' }),
    advance: async (req) => {
      const previous = this.lastToken.toString();
      const clockMicros = BigInt(this.now()) * 1000n;
      if (clockMicros > this.lastToken) this.lastToken = clockMicros;
      const floor = this.lastToken.toString();
      const audit = this.append({ ...req.audit, action: 'tokens.advance', target: 'tokens', outcome: 'ADVANCED', fencingToken: floor });
      return { previous, floor, identity: 'memory', audit };
    },
  };

  async init(): Promise<void> {}
  async close(): Promise<void> {}
  async ping(): Promise<void> {}

  // ---- sessions -----------------------------------------------------------

  async openSession(req: OpenSessionRequest): Promise<SessionRecord> {
    const now = this.now();
    const session: StoredSession = { ...req, createdAt: now, lastHeartbeatAt: now, expiresAt: now + req.ttlMillis };
    this.sessions.set(req.sessionId, session);
    return record(session);
  }

  async heartbeat(credential: SessionCredential): Promise<HeartbeatResult> {
    const session = this.checked(credential);
    if ('kind' in session) return session;
    const now = this.now();
    session.lastHeartbeatAt = now;
    session.expiresAt = now + session.ttlMillis;
    return { kind: 'alive', session: record(session) };
  }

  async authenticateSession(credential: SessionCredential): Promise<AuthenticateResult> {
    const session = this.checked(credential);
    return 'kind' in session ? session : { kind: 'authenticated', session: record(session) };
  }

  async getSession(sessionId: string): Promise<SessionRecord | null> {
    const session = this.liveSession(sessionId);
    return session ? record(session) : null;
  }

  async closeSession(credential: SessionCredential): Promise<CloseSessionResult> {
    const session = this.checked(credential);
    if ('kind' in session) return session;
    return { kind: 'closed', ended: this.endSession(session, 'closed') };
  }

  async killSession(sessionId: string, draft: AuditDraft): Promise<KillSessionResult> {
    const session = this.liveSession(sessionId);
    const ended = session ? this.endSession(session, 'killed') : null;
    const audit = this.append({ ...draft, action: 'session.kill', target: sessionId, outcome: ended ? 'KILLED' : 'NOT_FOUND' });
    return { ended, audit };
  }

  async expireSessions(limit: number): Promise<EndedSession[]> {
    const now = this.now();
    const lapsed = [...this.sessions.values()].filter((s) => s.expiresAt <= now).sort(by((s) => s.sessionId));
    return lapsed.slice(0, limit).map((session) => this.endSession(session, 'ttl'));
  }

  async expireLocks(limit: number): Promise<EndedLock[]> {
    const now = this.now();
    const lapsed = this.allGrants().filter((lock) => lock.expiresAt <= now).sort(by((l) => l.key));
    return lapsed.slice(0, limit).map((lock) => {
      this.remove(lock);
      return { ...lock, endedAt: now };
    });
  }

  async listSessions(query: ListQuery): Promise<Page<SessionInfo>> {
    const after = decodeSessionCursor(query.cursor);
    const now = this.now();
    const live = [...this.sessions.values()].filter((s) => s.expiresAt > now && (after === null || s.sessionId > after)).sort(by((s) => s.sessionId));
    const lockCount = (sessionId: string) => this.allGrants().filter((l) => l.sessionId === sessionId && this.isLive(l, now)).length;
    return page(
      live.map((s) => ({ ...record(s), lockCount: lockCount(s.sessionId) })),
      query.limit,
      (s) => s.sessionId,
    );
  }

  // ---- locks --------------------------------------------------------------

  async tryAcquire(req: AcquireAttempt): Promise<TryAcquireResult> {
    const session = this.checked(req.session);
    if ('kind' in session) return session;
    const now = this.now();
    const live = this.liveGrants(req.key, now);
    const own = live.find((lock) => lock.sessionId === req.session.sessionId);
    if (own) {
      const { owner, ...grant } = own;
      return { kind: 'granted', grant, owner, existing: true };
    }
    const asked = holdingOf(req);
    const decided = admission(live, asked);
    if (decided.kind !== 'admitted') return decided;
    // Drawn last, after every check the grant depends on: tokens rise in answer order.
    const lock: HeldLock = {
      key: req.key,
      sessionId: session.sessionId,
      owner: session.owner,
      fencingToken: String(++this.lastToken),
      ttlMillis: req.ttlMillis,
      grantedAt: now,
      expiresAt: now + req.ttlMillis,
      ...asked,
      ...(req.value !== undefined ? { value: req.value } : {}),
    };
    this.locks.set(req.key, [...live, lock]);
    const { owner, ...grant } = lock;
    return { kind: 'granted', grant, owner, existing: false };
  }

  async renew(req: RenewRequest): Promise<RenewResult> {
    const session = this.checked(req.session);
    if ('kind' in session) return session;
    const lock = this.ownLiveLock(req);
    if (!lock) return { kind: 'lost' };
    const now = this.now();
    if (req.maxHoldMillis !== undefined && now - lock.grantedAt >= req.maxHoldMillis) return { kind: 'hold_limit', lock: { ...lock } };
    lock.ttlMillis = req.ttlMillis ?? lock.ttlMillis;
    lock.expiresAt = now + lock.ttlMillis;
    if (req.value !== undefined) lock.value = req.value;
    return { kind: 'renewed', lock: { ...lock } };
  }

  async release(req: { key: string; session: SessionCredential; fencingToken: FencingToken }): Promise<ReleaseResult> {
    const session = this.checked(req.session);
    if ('kind' in session) return session;
    const lock = this.ownLiveLock(req);
    if (!lock) return { kind: 'lost' };
    this.remove(lock);
    return { kind: 'released', lock: { ...lock, endedAt: this.now() } };
  }

  async readLock(key: string): Promise<HeldLock | null> {
    return describeKey(this.liveGrants(key, this.now()));
  }

  async listLocks(query: ListQuery & { prefix?: string }): Promise<Page<HeldLock>> {
    const after = decodeKeyCursor(query.cursor);
    const now = this.now();
    const items = [...this.locks.keys()]
      .filter((key) => (!query.prefix || key.startsWith(query.prefix)) && (after === null || key > after))
      .sort()
      .map((key) => describeKey(this.liveGrants(key, now)))
      .filter((lock): lock is HeldLock => lock !== null);
    return page(items, query.limit, (l) => l.key);
  }

  async forceRevoke(req: { key: string; expectedFencingToken?: FencingToken; audit: AuditDraft }): Promise<ForceRevokeResult> {
    const now = this.now();
    const live = this.liveGrants(req.key, now);
    // One permit at a time: the grant the token names, else the lowest-token one.
    const current = req.expectedFencingToken === undefined ? live[0] : (live.find((l) => l.fencingToken === req.expectedFencingToken) ?? live[0]);
    let outcome: ForceRevokeResult['outcome'] = 'REVOKED';
    if (!current) outcome = 'NOT_HELD';
    else if (req.expectedFencingToken !== undefined && req.expectedFencingToken !== current.fencingToken) outcome = 'TOKEN_MISMATCH';
    if (outcome === 'REVOKED') this.remove(current!);
    const audit = this.append({
      ...req.audit,
      action: 'lock.revoke',
      target: req.key,
      fencingToken: outcome === 'REVOKED' ? current!.fencingToken : req.expectedFencingToken,
      outcome,
    });
    return {
      outcome,
      ...(outcome === 'REVOKED' ? { revoked: { ...current!, endedAt: now } } : {}),
      ...(outcome === 'TOKEN_MISMATCH' ? { holder: { ...current! } } : {}),
      audit,
    };
  }

  // ---- audit, summary -------------------------------------------------------

  async listAudit(query: AuditQuery): Promise<Page<AuditEntry>> {
    const before = decodeCursor(query.cursor, /^[1-9][0-9]{0,17}$/);
    const items = this.audit
      .filter(
        (e) =>
          (before === null || Number(e.id) < Number(before)) &&
          (query.actor === undefined || e.actor === query.actor) &&
          (query.action === undefined || e.action === query.action) &&
          (query.target === undefined || e.target === query.target),
      )
      .reverse();
    return page(items, query.limit, (e) => e.id);
  }

  async *readAuditChain(): AsyncIterable<AuditEntry> {
    yield* [...this.audit];
  }

  async readAuditHead(): Promise<AuditHead> {
    return { ...this.auditHead };
  }

  async pruneAudit(req: { before: number; audit: AuditDraft }): Promise<PruneAuditResult> {
    const firstKept = this.audit.findIndex((e) => e.at >= req.before);
    const pruned = firstKept === -1 ? this.audit.length : firstKept;
    if (pruned > 0) {
      const last = this.audit[pruned - 1]!;
      this.audit = this.audit.slice(pruned);
      this.auditHead = { ...this.auditHead, checkpointId: last.id, checkpointHash: last.hash };
    }
    const audit = this.append({ ...req.audit, action: 'audit.prune', target: 'audit', outcome: pruned > 0 ? 'PRUNED' : 'NOTHING_PRUNED' });
    return { pruned, checkpoint: { id: this.auditHead.checkpointId, hash: this.auditHead.checkpointHash }, audit };
  }

  async summary(query: SummaryQuery = {}): Promise<StoreSummary> {
    const now = this.now();
    const live = this.allGrants().filter((l) => this.isLive(l, now));
    const byPolicy = query.policies ? { byPolicy: tallyByPolicy(live, query.policies, now) } : {};
    const overdue = Math.min(now, ...[...this.sessions.values(), ...this.allGrants()].map((x) => x.expiresAt));
    return {
      heldLocks: live.length,
      activeSessions: [...this.sessions.values()].filter((s) => s.expiresAt > now).length,
      oldestHeldMillis: live.length ? now - Math.min(...live.map((l) => l.grantedAt)) : 0,
      sweepLagMillis: now - overdue,
      ...byPolicy,
    };
  }

  // ---- internals ----------------------------------------------------------

  private liveSession(sessionId: string): StoredSession | null {
    const session = this.sessions.get(sessionId);
    return session && session.expiresAt > this.now() ? session : null;
  }

  /** The live session the credential names, or why a session-scoped call does nothing. */
  private checked(credential: SessionCredential): StoredSession | SessionRefusal {
    const session = this.liveSession(credential.sessionId);
    if (!session) return { kind: 'session_not_found' };
    return session.tokenHash === credential.tokenHash ? session : { kind: 'unauthenticated' };
  }

  /** A lock is live while its own TTL runs and its session is live. */
  private isLive(lock: HeldLock, now: number): boolean {
    const session = this.sessions.get(lock.sessionId);
    return lock.expiresAt > now && session !== undefined && session.expiresAt > now;
  }

  private ownLiveLock(req: { key: string; session: SessionCredential; fencingToken: FencingToken }): HeldLock | null {
    const now = this.now();
    const lock = this.locks.get(req.key)?.find((l) => l.fencingToken === req.fencingToken);
    if (!lock || !this.isLive(lock, now)) return null;
    return lock.sessionId === req.session.sessionId ? lock : null;
  }

  /** The key's live grants in token order (the order they were drawn in). */
  private liveGrants(key: string, now: number): HeldLock[] {
    return (this.locks.get(key) ?? []).filter((lock) => this.isLive(lock, now));
  }

  private allGrants(): HeldLock[] {
    return [...this.locks.values()].flat();
  }

  private remove(lock: HeldLock): void {
    const rest = (this.locks.get(lock.key) ?? []).filter((l) => l !== lock);
    if (rest.length > 0) this.locks.set(lock.key, rest);
    else this.locks.delete(lock.key);
  }


  private endSession(session: StoredSession, cause: SessionEndCause): EndedSession {
    const now = this.now();
    const releasedLocks: EndedLock[] = [];
    for (const lock of this.allGrants().sort(by((l) => l.key))) {
      if (lock.sessionId !== session.sessionId) continue;
      this.remove(lock);
      releasedLocks.push({ ...lock, endedAt: now });
    }
    this.sessions.delete(session.sessionId);
    return { session: record(session), cause, releasedLocks };
  }

  private append(draft: AuditDraft & Pick<AuditEntry, 'action' | 'target' | 'outcome'> & { fencingToken?: FencingToken | undefined }): AuditEntry {
    const head = this.auditHead;
    const entry = this.sealer.seal(head.lastHash, {
      id: String(Number(head.lastId) + 1),
      at: this.now(),
      actor: draft.actor,
      ...(draft.actorScope !== undefined ? { actorScope: [...draft.actorScope] } : {}),
      action: draft.action,
      target: draft.target,
      ...(draft.fencingToken !== undefined ? { fencingToken: draft.fencingToken } : {}),
      reason: draft.reason,
      outcome: draft.outcome,
      requestId: draft.requestId,
    });
    this.audit.push(entry);
    const moved = { lastId: entry.id, lastHash: entry.hash, checkpointId: head.checkpointId, checkpointHash: head.checkpointHash };
    const { keyId, seal } = this.sealer.sealHead(moved);
    this.auditHead = { ...moved, ...(keyId !== undefined ? { keyId } : {}), seal };
    return entry;
  }
}

function record(session: StoredSession): SessionRecord {
  const { tokenHash: _tokenHash, ...rest } = session;
  return { ...rest };
}

function by<T>(keyOf: (item: T) => string): (a: T, b: T) => number {
  return (a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0);
}

function page<T>(items: T[], limit: number, cursorOf: (item: T) => string): Page<T> {
  const shown = items.slice(0, limit);
  return { items: shown, nextCursor: items.length > limit ? encodeCursor(cursorOf(shown.at(-1)!)) : null };
}
