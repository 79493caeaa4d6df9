/**
 * The lock service core: one entry point per operation (the HTTP routes call these), over the
 * parts service-parts.ts wires: sessions (sessions.ts), waiting acquires (acquire-wait.ts,
 * wait-strategy.ts, handoffs.ts), reads (lock-reads.ts), the fleet (fleet.ts) and the store's
 * health (store-health.ts). It speaks to a store only through the SPI and never names one.
 */
import { verifyAuditChain, type AuditSealer, type ChainVerification } from '../audit/chain.js';
import { HoldLimitReachedError, LockLostError, NotLeaderError } from '../errors.js';
import type { AuditEntry, FencingToken, LockGrant, LockInfo, LockOutcome, Page, SessionInfo } from '../../contract/records.js';
import type { AuditHead, AuditQuery, HeldLock, InstancePublication, LockStore, SessionCredential } from '../store/spi.js';
import type { EventContext, LockEvents } from '../../contract/lock-events.js';
import type { AcquireWaits } from './acquire-wait.js';
import type { Clock } from './clock.js';
import type { ContentionAnswers } from './contention-answers.js';
import type { FleetCoordinator } from './fleet.js';
import type { Handoffs } from './handoffs.js';
import type { ContendedKey, LockInsight } from './insight.js';
import type { LockPolicies } from './lock-policies.js';
import { handedGrant, toGrant } from './grants.js';
import { lockKindOf } from '../../contract/wire-rules.js';
import { attemptOf, refusedAttempt, type AcquireRequest } from './acquire-attempt.js';
import type { LockReads } from './lock-reads.js';
import type { LockWatches } from './lock-watches.js';
import { wireServiceParts, type LockServiceOptions } from './service-parts.js';
import type { SessionPrincipals } from './session-principals.js';
import type { SessionScopes } from './session-scopes.js';
import { refused } from './session-refusal.js';
import { auditActorFields, type AuditActor, type KillOutcome, type Sessions, type SessionView, type SweepOptions } from './sessions.js';
import type { StoreHealth } from './store-health.js';
import type { WaitRecords } from './wait-records.js';
import type { WaitStrategy } from './wait-strategy.js';
import type { WaiterRegistry } from './waiters.js';

export type { AuditActor, KillOutcome, SessionView, SweepOptions } from './sessions.js';
export type { LockServiceOptions } from './service-parts.js';

export class LockService {
  /** The store behind the health check: calls feed the health state, and most are refused at once while it is down. */
  readonly store: LockStore;
  /** This server's one view of whether its store answers (lock_store_up). */
  readonly storeHealth: StoreHealth;
  readonly waiters: WaiterRegistry;
  /** Contention top-K, per-key history, wait graph, lock_hold_seconds (issue 14). */
  readonly insight: LockInsight;
  /** This instance's part in the fleet (instance registry, deadlock checks), when the store keeps wait state. */
  readonly fleet: FleetCoordinator | null;
  private readonly clock: Clock;
  private readonly auditSealer: AuditSealer;
  private readonly contention: ContentionAnswers;
  private readonly strategy: WaitStrategy;
  private readonly waits: AcquireWaits;
  private readonly records: WaitRecords | null;
  private readonly sessions: Sessions;
  private readonly reads: LockReads;
  private readonly watches: LockWatches;
  private readonly principals: SessionPrincipals;
  private readonly handoffs: Handoffs;
  private readonly policies: LockPolicies;
  private readonly scopes: SessionScopes | null;

  constructor(
    rawStore: LockStore,
    /** Every fact, reported once (exporter/lock-telemetry.ts fans it out to metrics, activity and the log). */
    private readonly events: LockEvents,
    options: LockServiceOptions = {},
  ) {
    const parts = wireServiceParts(rawStore, events, options);
    ({
      clock: this.clock,
      store: this.store,
      storeHealth: this.storeHealth,
      waiters: this.waiters,
      insight: this.insight,
      fleet: this.fleet,
      auditSealer: this.auditSealer,
      contention: this.contention,
      strategy: this.strategy,
      waits: this.waits,
      records: this.records,
      sessions: this.sessions,
      reads: this.reads,
      watches: this.watches,
      principals: this.principals,
      handoffs: this.handoffs,
      policies: this.policies,
      scopes: this.scopes,
    } = parts);
  }

  /**
   * Starts what runs beside requests: the release feed (waits wake on releases anywhere in the
   * fleet) and the fleet coordinator. Without start() waits poll, as on a store without either.
   */
  async start(): Promise<void> {
    await this.strategy.start();
    await this.fleet?.start();
  }

  async stop(): Promise<void> {
    this.storeHealth.stop();
    this.strategy.stop();
    await this.fleet?.stop();
  }

  /** False while the release feed is down (waits poll) or when the store has none. */
  get releaseFeedUp(): boolean {
    return this.strategy.feedUp;
  }

  get backend() {
    return this.store.backend;
  }

  /** Readiness: 503 at once while the store is counted down, else the store's own ping. */
  async checkReady(): Promise<void> {
    if (!this.storeHealth.up) throw new NotLeaderError(`the ${this.backend} store is unreachable (${this.storeHealth.cause})`);
    await this.store.ping();
  }

  // ---- sessions (sessions.ts) -----------------------------------------------

  openSession(input: { ttlMillis: number; owner: string; openedBy?: string }, ctx: EventContext): Promise<SessionView> {
    return this.sessions.open(input, ctx);
  }

  heartbeat(credential: SessionCredential): Promise<{ sessionId: string; expiresAt: number }> {
    return this.sessions.heartbeat(credential);
  }

  closeSession(credential: SessionCredential, ctx: EventContext): Promise<void> {
    return this.sessions.close(credential, ctx);
  }

  killSession(sessionId: string, reason: string, actor: AuditActor, ctx: EventContext): Promise<KillOutcome> {
    return this.sessions.kill(sessionId, reason, actor, ctx);
  }

  listSessions(query: { limit: number; cursor?: string }): Promise<Page<SessionInfo>> {
    return this.sessions.list(query);
  }

  /** Sweeper entry point: ends lapsed sessions and locks, and reports each; `stop` ends it after the batch in hand. */
  sweep(ctx: EventContext, options: SweepOptions = {}): Promise<{ sessions: number; locks: number }> {
    return this.sessions.sweep(ctx, options);
  }

  /** Whole contended attempts left in a session's own budget (operators and tests). */
  contentionBudgetRemaining(sessionId: string): number {
    return this.contention.budget.remaining(sessionId);
  }

  // ---- locks --------------------------------------------------------------

  /**
   * Acquire `key` for `sessionId`, waiting up to `waitMillis` for a release: try, record the wait,
   * wait, try again. `signal` aborts when the caller goes away (HTTP client disconnect). The server
   * span `lock.acquire` is the caller's (exporter/request-telemetry.ts).
   */
  async acquire(req: AcquireRequest, ctx: EventContext, signal?: AbortSignal): Promise<LockGrant> {
    // Before anything is tried, charged or recorded: a scoped session's reach, the key's policy.
    await this.scopes?.check(req.session, req.key);
    const attempt = attemptOf(req, this.store, this.policies.acquireTtl(req.key, req.ttlMillis));
    const who = { key: req.key, sessionId: req.session.sessionId };
    // The budget is of contended attempts: a free key is granted whatever the budget says.
    if (req.waitMillis <= 0) {
      const result = await this.store.tryAcquire(attempt);
      if (result.kind === 'granted') return this.granted(result.grant, result.owner, !result.existing, 0, ctx);
      if (result.kind !== 'held') throw refusedAttempt(result, req);
      throw await this.contended(who, result.holder, ctx);
    }
    const capsWaiters = this.policies.of(req.key)?.maxWaiters !== undefined;
    const wait = await this.waits.open({ ...req, ttlMillis: attempt.ttlMillis }, ctx, signal, capsWaiters);
    try {
      for (;;) {
        // A release handed this wait the key (FIFO handoff): nothing to try.
        if (wait.handed) {
          wait.recordEndedByGrant();
          return this.granted(handedGrant(wait.handed, req.value), wait.handed.owner, true, wait.succeeded(), ctx);
        }
        const seen = wait.releasesSeen;
        const waitId = wait.recordedWaitId;
        const recordWait = wait.recordOnTry();
        const result = await wait.attempt(() =>
          this.store.tryAcquire({ ...attempt, ...(waitId !== undefined ? { waitId } : {}), ...(recordWait ? { recordWait } : {}) }),
        );
        if (recordWait) wait.triedWithRecord(result);
        if (result === null) continue; // the store was down and the wait rode it out: try again
        if (result.kind === 'granted') {
          if (waitId !== undefined && !result.existing) wait.recordEndedByGrant();
          return this.granted(result.grant, result.owner, wait.isNew(result), wait.succeeded(), ctx);
        }
        if (result.kind !== 'held') throw refusedAttempt(result, req);
        // Only now, with the session token checked by the store, does the wait count or get recorded.
        if (capsWaiters && !wait.admitted) await this.policies.admitWait(req.key, () => this.reads.waiterCount(req.key));
        wait.admit(result.holder);
        if (await wait.record()) continue;
        if (wait.remaining <= 0) {
          // Its record ends before the answer: a release may have handed it the key at the last moment.
          const handed = await wait.finish();
          if (handed) return this.granted(handedGrant(handed, req.value), handed.owner, true, wait.succeeded(), ctx);
          wait.gaveUp();
          throw await this.contended(who, result.holder, ctx);
        }
        await wait.park(seen, result.observedRevision);
      }
    } finally {
      // A grant a release handed this wait as it left without it (caller gone, draining, refused) stays
      // with the session: its retried L4, on any instance, is answered it (L4 is idempotent per session),
      // else it ends at its TTL or with the session. Ending it here would race that retry and free a key
      // its session was already answered (an overlap only the fence would catch). It is a new grant, so said.
      const unanswered = await wait.close();
      if (unanswered) this.granted(handedGrant(unanswered, req.value), unanswered.owner, true, wait.elapsedMillis(), ctx);
    }
  }

  /** Without `ttlMillis` the grant keeps its own TTL; with `value` it is a proclaim (same token, new value). */
  async renew(
    req: { key: string; session: SessionCredential; fencingToken: FencingToken; ttlMillis?: number; value?: string },
    ctx: EventContext,
  ): Promise<LockGrant> {
    const ttlMillis = this.policies.renewTtl(req.key, req.ttlMillis);
    const maxHoldMillis = this.policies.maxHoldMillis(req.key);
    const result = await this.store.renew({
      key: req.key,
      session: req.session,
      fencingToken: req.fencingToken,
      ...(ttlMillis !== undefined ? { ttlMillis } : {}),
      ...(maxHoldMillis !== undefined ? { maxHoldMillis } : {}),
      ...(req.value !== undefined ? { value: req.value } : {}),
    });
    if (result.kind === 'renewed') return toGrant(result.lock);
    if (result.kind === 'hold_limit') throw new HoldLimitReachedError(req.key, maxHoldMillis ?? 0, this.policies.of(req.key)?.name ?? '');
    if (result.kind !== 'lost') throw refused(result, req.session.sessionId);
    this.events.lost(ctx, { key: req.key, sessionId: req.session.sessionId, fencingToken: req.fencingToken, op: 'renew' });
    throw new LockLostError(req.key);
  }

  async release(
    req: { key: string; session: SessionCredential; fencingToken: FencingToken },
    ctx: EventContext,
  ): Promise<{ key: string; released: true }> {
    const result = await this.store.release(req);
    if (result.kind === 'lost') {
      this.events.lost(ctx, { key: req.key, sessionId: req.session.sessionId, fencingToken: req.fencingToken, op: 'release' });
      throw new LockLostError(req.key);
    }
    if (result.kind !== 'released') throw refused(result, req.session.sessionId);
    const { lock } = result;
    this.insight.ended(lock, { outcome: 'released' });
    this.handoffs.released(req.key, result);
    this.events.released(ctx, {
      key: lock.key,
      sessionId: lock.sessionId,
      fencingToken: lock.fencingToken,
      heldMillis: Math.max(0, lock.endedAt - lock.grantedAt),
    });
    return { key: req.key, released: true };
  }

  async forceRevoke(
    req: { key: string; reason: string; expectedFencingToken?: FencingToken },
    by: AuditActor,
    ctx: EventContext,
  ): Promise<LockOutcome> {
    const actor = by.name;
    const result = await this.store.forceRevoke({
      key: req.key,
      ...(req.expectedFencingToken !== undefined ? { expectedFencingToken: req.expectedFencingToken } : {}),
      audit: { ...auditActorFields(by), reason: req.reason, requestId: ctx.requestId },
    });
    if (result.revoked) {
      this.insight.ended(result.revoked, { outcome: 'revoked', actor, reason: req.reason, auditId: result.audit.id });
      this.waiters.keyReleased(req.key);
    }
    this.events.forceRevoked(ctx, {
      key: req.key,
      actor,
      reason: req.reason,
      fencingToken: result.revoked?.fencingToken ?? req.expectedFencingToken ?? null,
      outcome: result.outcome,
      auditId: result.audit.id,
      auditHeadHash: result.audit.hash,
    });
    return {
      key: req.key,
      outcome: result.outcome,
      ...(result.revoked ? { revokedFencingToken: result.revoked.fencingToken } : {}),
      auditId: result.audit.id,
    };
  }

  // ---- reads (lock-reads.ts) ------------------------------------------------

  readLock(key: string): Promise<LockInfo> {
    return this.reads.readLock(key);
  }

  /** L8 (lock-watches.ts): the key's state once its holder set differs from the one whose highest token is `after`, or at `waitMillis`. */
  watchLock(key: string, after: FencingToken | undefined, waitMillis: number, signal?: AbortSignal, untilHeld = false): Promise<LockInfo> {
    return this.watches.watch(key, after, waitMillis, signal, untilHeld);
  }

  listLocks(query: { prefix?: string; limit: number; cursor?: string }): Promise<Page<LockInfo>> {
    return this.reads.listLocks(query);
  }

  /** A1 with sort=age: the `limit` oldest grants, oldest first. */
  oldestLocks(limit: number, prefix?: string): Promise<LockInfo[]> {
    return this.reads.oldestLocks(limit, prefix);
  }

  /** A7: the most contended keys fleet-wide. */
  topContended(limit: number): Promise<{ windowMillis: number; items: ContendedKey[] }> {
    return this.reads.topContended(limit);
  }

  /** What every live instance last published; null when the store keeps no fleet state. */
  fleetPublications(): Promise<InstancePublication[] | null> {
    return this.reads.fleetPublications();
  }

  waiterTotal(): Promise<number> {
    return this.reads.waiterTotal();
  }

  deadlockCycles(): Promise<number> {
    return this.reads.deadlockCycles();
  }

  // ---- audit --------------------------------------------------------------

  listAudit(query: AuditQuery): Promise<Page<AuditEntry>> {
    return this.store.listAudit(query);
  }

  /** The head is read first: entries appended during the walk are not mistaken for tampering. */
  async verifyAudit(): Promise<ChainVerification> {
    const head = await this.store.readAuditHead();
    return verifyAuditChain(this.store.readAuditChain(), { head, sealer: this.auditSealer });
  }

  readAuditHead(): Promise<AuditHead> {
    return this.store.readAuditHead();
  }

  // ---- for the HTTP surface and the server wiring (routes call methods, not this class's fields) ----

  /** Counts of held locks, live sessions, oldest grant and sweep lag, through the health check (A5, store gauges). */
  storeSummary(): ReturnType<LockStore['summary']> {
    const policies = this.policies.current();
    return this.store.summary(policies.length > 0 ? { policies } : undefined);
  }

  /** Whether this server counts its store up (`lock_store_up`). */
  get storeUp(): boolean {
    return this.storeHealth.up;
  }

  /** Waits parked on this instance (`lock_waiters` is per instance; waiterTotal() is fleet-wide). */
  localWaiterCount(): number {
    return this.waiters.total();
  }

  /** This instance's recent events of a key, with the store's audit entries about it (console history). */
  keyHistory(key: string, limit: number): ReturnType<LockInsight['keyHistory']> {
    return this.insight.keyHistory(key, limit);
  }

  /** This instance's wait-for graph (console waits view). */
  waitGraph(): ReturnType<LockInsight['waitGraph']> {
    return this.insight.waitGraph();
  }

  // ---- internals ----------------------------------------------------------

  /** A contended attempt, charged to the session and its principal's fair share (the store has checked the token). */
  private async contended(who: { key: string; sessionId: string }, holder: HeldLock | null, ctx: EventContext) {
    return this.contention.contended({ ...who, principal: await this.principals.of(who.sessionId) }, holder, ctx);
  }

  /** Announces a new grant (lock_granted, insight); a session's retried L4 answered its existing grant is not one. */
  private granted(grant: LockGrant, owner: string, isNew: boolean, waitedMillis: number, ctx: EventContext): LockGrant {
    if (isNew) {
      this.insight.granted(grant, owner);
      this.events.granted(ctx, {
        key: grant.key,
        sessionId: grant.sessionId,
        owner,
        fencingToken: grant.fencingToken,
        ttlMillis: grant.ttlMillis,
        waitedMillis,
        kind: lockKindOf(grant),
      });
    }
    return grant;
  }
}
