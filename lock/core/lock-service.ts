/**
 * The lock service core: sessions, acquire with bounded server-side waiting,
 * renew, compare-and-delete release, force-revoke, session kill and the
 * audit trail. It speaks to a store only through the SPI and never names one.
 */
import { randomBytes } from 'node:crypto';
import { createAuditSealer, verifyAuditChain, type AuditSealer, type ChainVerification } from '../audit/chain.js';
import {
  ContentionExceededError,
  DeadlockDetectedError,
  LockContendedError,
  LockLostError,
  NotLeaderError,
  SessionNotFoundError,
  UnauthenticatedError,
} from '../errors.js';
import type {
  AuditEntry,
  FencingToken,
  LockGrant,
  LockInfo,
  LockOutcome,
  Page,
  SessionInfo,
} from '../../contract/records.js';
import {
  hasFleetWaitState,
  hasReleaseFeed,
  hasReleaseWaiter,
  type AuditHead,
  type AuditQuery,
  type EndedSession,
  type HeartbeatResult,
  type HeldLock,
  type FleetWaitState,
  type LockStore,
  type ReleaseFeed,
  type ReleaseWaiter,
  type SessionCredential,
  type SessionRefusal,
  type TryAcquireResult,
  type WaitResult,
} from '../store/spi.js';
import { LOCK_EXPIRY_CAUSE_OF_SESSION_END, type EventContext, type LockEvents } from '../../contract/lock-events.js';
import type { WaitOutcome } from '../../contract/metric-table.js';
import { ActivityWindow } from './activity-window.js';
import { systemClock, type Clock, type RandomSource } from './clock.js';
import { hashSessionToken, newSessionToken } from './session-token.js';
import { ContentionBudget, DEFAULT_CONTENTION_BUDGET, type ContentionBudgetConfig } from './contention-budget.js';
import { FleetCoordinator, type FleetOptions } from './fleet.js';
import { WaiterRegistry, type Waiter } from './waiters.js';
import { LockInsight, type ContendedKey, type GrantEnd, type LockInsightOptions } from './insight.js';
import { asTopKSummary, truncateSummary, type TopKSummary } from './contention-top.js';
import { healthCheckedStore } from './health-checked-store.js';
import { DEFAULT_STORE_HEALTH, StoreHealth, type StoreHealthOptions } from './store-health.js';

/** Keys of its contention window an instance publishes to the fleet (bounded, so the heartbeat stays small). */
const PUBLISHED_TOP_KEYS = 64;

export interface LockServiceOptions {
  clock?: Clock;
  random?: RandomSource;
  contentionBudget?: ContentionBudgetConfig;
  /** Polling wait (stores without a ReleaseWaiter): first delay cap and the ceiling. */
  pollBaseMillis?: number;
  pollMaxMillis?: number;
  /** Concurrent server-side waits one session may have here; more are 429 CONTENTION_EXCEEDED. */
  maxWaitsPerSession?: number;
  insight?: LockInsightOptions;
  /** The sealer the store seals with: verification checks links with the same key. */
  auditSealer?: AuditSealer;
  /** Fleet-wide wait state and deadlock checks (stores with FleetWaitState). */
  fleet?: FleetOptions;
  /** With a healthy ReleaseFeed, a parked wait still re-tries this often (a missed notification costs at most this). */
  feedRecheckMillis?: number;
  /**
   * What this instance publishes to the fleet with each heartbeat (FleetWaitState.instancePublications),
   * e.g. its contention top-K summary so A7 can merge every instance's. Must be JSON.
   */
  publication?: () => unknown;
  /** The window the admin summary reads (shared with the telemetry that counts into it). */
  activity?: ActivityWindow;
  /** Store call timeout and probe interval of the health state (store-health.ts). */
  storeHealth?: StoreHealthOptions;
}

export interface SessionView {
  sessionId: string;
  /** The bearer capability for L2–L6: shown once, never stored or logged in clear. */
  sessionToken: string;
  owner: string;
  ttlMillis: number;
  expiresAt: number;
}

export interface KillOutcome {
  sessionId: string;
  outcome: 'KILLED' | 'NOT_FOUND';
  releasedLocks: number;
  auditId: string;
}

/** A floor under every poll delay so a jittered draw near zero cannot become a busy loop. */
const POLL_FLOOR_MILLIS = 10;
/** A conservative default: a notification is lost only in a narrow race (see ReleaseFeed in spi.ts). */
const FEED_RECHECK_MILLIS = 1000;
/** Bounds the waits remembered for ending after an outage. */
const MAX_UNENDED_WAITS = 10_000;
const UNENDED_WAITS_AT_ONCE = 16;
/** Ends a park's own timer and listener; one reason for all, so no DOMException (and stack) per park. */
const WAIT_SETTLED = new Error('wait settled');

export class LockService {
  /** The store behind the health check: calls feed the health state, and most are refused at once while it is down. */
  readonly store: LockStore;
  /** This server's one view of whether its store answers (lock_store_up). */
  readonly storeHealth: StoreHealth;
  readonly waiters = new WaiterRegistry();
  readonly activity: ActivityWindow;
  /** Contention top-K, per-key history, wait graph, lock_hold_seconds (issue 14). */
  readonly insight: LockInsight;
  private readonly clock: Clock;
  private readonly random: RandomSource;
  private readonly budget: ContentionBudget;
  private readonly releaseWaiter: ReleaseWaiter | null;
  private readonly pollBaseMillis: number;
  private readonly pollMaxMillis: number;
  private readonly auditSealer: AuditSealer;
  private readonly maxWaitsPerSession: number;
  private readonly releaseFeed: ReleaseFeed | null;
  private readonly fleetStore: FleetWaitState | null;
  /** This instance's part in the fleet (instance registry, deadlock checks), when the store keeps wait state. */
  readonly fleet: FleetCoordinator | null;
  /** Waits whose end the store did not take (it was down): ended again when it returns. */
  private readonly unendedWaits = new Set<string>();
  private endingUnendedWaits = false;
  private feedUp = false;
  private feedDownCause = 'release feed not started';
  private unsubscribeFeed: (() => void) | null = null;
  private readonly feedRecheckMillis: number;

  constructor(
    rawStore: LockStore,
    /** Every fact, reported once (exporter/lock-telemetry.ts fans it out to metrics, activity and the log). */
    private readonly events: LockEvents,
    options: LockServiceOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.storeHealth = new StoreHealth(
      () => rawStore.ping(),
      {
        down: (fact) => this.events.storeDown(fact),
        up: (fact) => {
          this.events.storeUp(fact);
          // Waits that rode out the outage try again now, not at their next poll.
          this.waiters.wakeAll();
          void this.endUnendedWaits();
        },
      },
      options.storeHealth ?? DEFAULT_STORE_HEALTH,
    );
    const store = healthCheckedStore(rawStore, this.storeHealth);
    this.store = store;
    this.random = options.random ?? Math.random;
    this.budget = new ContentionBudget(options.contentionBudget ?? DEFAULT_CONTENTION_BUDGET, this.clock);
    // Detected once, at wiring: core never asks per call what the store can do.
    this.releaseWaiter = hasReleaseWaiter(store) ? store : null;
    this.releaseFeed = !this.releaseWaiter && hasReleaseFeed(store) ? store : null;
    this.fleetStore = hasFleetWaitState(store) ? store : null;
    this.feedRecheckMillis = options.feedRecheckMillis ?? FEED_RECHECK_MILLIS;
    this.pollBaseMillis = options.pollBaseMillis ?? 25;
    this.pollMaxMillis = options.pollMaxMillis ?? 500;
    this.auditSealer = options.auditSealer ?? createAuditSealer();
    this.maxWaitsPerSession = options.maxWaitsPerSession ?? 32;
    this.activity = options.activity ?? new ActivityWindow(() => this.clock.now());
    this.insight = new LockInsight(store, this.waiters, events, () => this.clock.now(), options.insight);
    this.fleet = hasFleetWaitState(store)
      ? new FleetCoordinator(
          store,
          this.waiters,
          {
            liveInstances: (count) => this.budget.setInstanceCount(count),
            // By default an instance publishes its contention window (the top 64 keys) for A7.
            publication:
              options.publication ?? (() => ({ contentionTop: truncateSummary(this.insight.contention.summary(), PUBLISHED_TOP_KEYS) })),
            checkFailed: (error) => this.events.fleetCheckFailed({ requestId: 'fleet-check' }, { message: `fleet check: ${error.message}` }),
            storeUp: () => this.storeHealth.up,
          },
          options.fleet,
        )
      : null;
  }

  /**
   * Starts what runs beside requests: the release feed (waits wake on releases anywhere in the
   * fleet) and the fleet coordinator. Without start() waits poll, as on a store without either.
   */
  async start(): Promise<void> {
    if (this.releaseFeed) {
      this.unsubscribeFeed = await this.releaseFeed.subscribeReleases({
        released: (keys) => {
          for (const key of keys) this.waiters.keyReleased(key);
        },
        health: (up, cause) => {
          this.feedUp = up;
          if (!up) this.feedDownCause = cause;
          // Down: parked waits switch to polling now. Up again: releases in between were missed.
          this.waiters.wakeAll();
        },
      });
    }
    await this.fleet?.start();
  }

  async stop(): Promise<void> {
    this.storeHealth.stop();
    this.unsubscribeFeed?.();
    this.unsubscribeFeed = null;
    this.feedUp = false;
    await this.fleet?.stop();
  }

  /**
   * What every live instance last published (this one included), for fleet-wide views that merge
   * per-instance summaries (A7). Null when the store keeps no fleet state: the caller uses its own.
   */
  async fleetPublications(): Promise<{ instanceId: string; published: unknown }[] | null> {
    return this.fleetStore ? this.fleetStore.instancePublications() : null;
  }

  /**
   * A7: the most contended keys fleet-wide — this instance's live window merged with the
   * summaries the other live instances published (at most one instance heartbeat old).
   */
  async topContended(limit: number): Promise<{ windowMillis: number; items: ContendedKey[] }> {
    const publications = (await this.fleetPublications()) ?? [];
    const others = publications
      .filter((p) => p.instanceId !== this.fleet?.instanceId)
      .map((p) => asTopKSummary((p.published as { contentionTop?: unknown } | undefined)?.contentionTop))
      .filter((summary): summary is TopKSummary => summary !== null);
    return this.insight.topContended(limit, others, (keys) => this.waiterCounts(keys));
  }

  /** False while the release feed is down (waits poll) or when the store has none. */
  get releaseFeedUp(): boolean {
    return this.feedUp;
  }

  /** Waiting acquires: fleet-wide when the store keeps wait state, else on this instance. */
  async waiterTotal(): Promise<number> {
    return this.fleetStore ? this.fleetStore.totalWaiters() : this.waiters.total();
  }

  /** Cycles in the wait-for graph: fleet-wide when the store keeps wait state, else this instance's. */
  async deadlockCycles(): Promise<number> {
    return this.fleet ? this.fleet.deadlockCycles() : this.waiters.deadlockCycles();
  }

  get backend() {
    return this.store.backend;
  }

  /** Readiness: 503 at once while the store is counted down, else the store's own ping. */
  async checkReady(): Promise<void> {
    if (!this.storeHealth.up) throw new NotLeaderError(`the ${this.backend} store is unreachable (${this.storeHealth.cause})`);
    await this.store.ping();
  }

  // ---- sessions -----------------------------------------------------------

  async openSession(input: { ttlMillis: number; owner: string }, ctx: EventContext): Promise<SessionView> {
    const sessionToken = newSessionToken();
    const session = await this.store.openSession({
      sessionId: newSessionId(),
      owner: input.owner,
      ttlMillis: input.ttlMillis,
      tokenHash: hashSessionToken(sessionToken),
    });
    this.events.sessionOpened(ctx, { sessionId: session.sessionId, owner: session.owner, ttlMillis: session.ttlMillis });
    return { sessionId: session.sessionId, sessionToken, owner: session.owner, ttlMillis: session.ttlMillis, expiresAt: session.expiresAt };
  }

  async heartbeat(credential: SessionCredential): Promise<{ sessionId: string; expiresAt: number }> {
    // A counter, not a log line: heartbeats are the steady load (every session, every few seconds).
    let result: HeartbeatResult;
    try {
      result = await this.store.heartbeat(credential);
    } catch (error) {
      this.events.heartbeat({ outcome: error instanceof NotLeaderError ? 'not_leader' : 'error' });
      throw error;
    }
    this.events.heartbeat({ outcome: result.kind });
    if (result.kind !== 'alive') throw refused(result, credential.sessionId);
    return { sessionId: credential.sessionId, expiresAt: result.session.expiresAt };
  }

  async closeSession(credential: SessionCredential, ctx: EventContext): Promise<void> {
    const result = await this.store.closeSession(credential);
    if (result.kind !== 'closed') throw refused(result, credential.sessionId);
    this.sessionEnded(result.ended, ctx);
  }

  async killSession(sessionId: string, reason: string, actor: string, ctx: EventContext): Promise<KillOutcome> {
    const { ended, audit } = await this.store.killSession(sessionId, { actor, reason, requestId: ctx.requestId });
    if (ended) this.sessionEnded(ended, ctx, { actor, reason, auditId: audit.id });
    const outcome = ended ? 'KILLED' : 'NOT_FOUND';
    this.events.sessionKilled(ctx, { sessionId, actor, reason, outcome, auditId: audit.id, auditHeadHash: audit.hash });
    return { sessionId, outcome, releasedLocks: ended?.releasedLocks.length ?? 0, auditId: audit.id };
  }

  /** Whole contended attempts left in a session's own budget (operators and tests). */
  contentionBudgetRemaining(sessionId: string): number {
    return this.budget.remaining(sessionId);
  }

  listSessions(query: { limit: number; cursor?: string }): Promise<Page<SessionInfo>> {
    return this.store.listSessions(query);
  }

  /** Sweeper entry point: ends lapsed sessions and locks, and reports each. */
  async sweep(ctx: EventContext, batch = 500): Promise<{ sessions: number; locks: number }> {
    let sessions = 0;
    let locks = 0;
    // Nothing to sweep that the store could confirm; the probe, not the sweeper, notices its return.
    if (!this.storeHealth.up) return { sessions, locks };
    await this.endUnendedWaits();
    // The store's clock decides what lapsed. A session lapsing between the two phases keeps
    // its locks in the second (only lapsed lock TTLs go there) until the next pass ends it.
    // Bounded batches (session order, then key order, in the store) with a turn of the event
    // loop between them: an expiry storm is many short transactions, and requests are answered
    // between them instead of after the whole storm.
    for (;;) {
      const ended = await this.store.expireSessions(batch);
      for (const e of ended) this.sessionEnded(e, ctx);
      sessions += ended.length;
      if (ended.length < batch) break;
      await yieldToRequests();
    }
    if (this.fleetStore) await this.fleetStore.expireInstances(batch);
    for (;;) {
      const expired = await this.store.expireLocks(batch);
      for (const lock of expired) {
        this.events.expired(ctx, { key: lock.key, sessionId: lock.sessionId, fencingToken: lock.fencingToken });
        this.insight.ended(lock, { outcome: 'expired', cause: 'ttl' });
        this.waiters.keyReleased(lock.key);
      }
      locks += expired.length;
      if (expired.length < batch) break;
      await yieldToRequests();
    }
    this.budget.prune();
    return { sessions, locks };
  }

  // ---- locks --------------------------------------------------------------

  /**
   * Acquire `key` for `sessionId`, waiting up to `waitMillis` for a release.
   * `signal` aborts when the caller goes away (HTTP client disconnect).
   * The server span `lock.acquire` is the caller's (exporter/request-telemetry.ts):
   * it covers the whole request, including answers that never reach core.
   */
  async acquire(
    req: { key: string; session: SessionCredential; ttlMillis: number; waitMillis: number },
    ctx: EventContext,
    signal?: AbortSignal,
  ): Promise<LockGrant> {
    const startedAt = this.clock.now();
    const sessionId = req.session.sessionId;
    const attempt = { key: req.key, session: req.session, ttlMillis: req.ttlMillis };
    const who = { key: req.key, sessionId };
    // The budget is of contended attempts: a free key is granted whatever the budget says.
    if (req.waitMillis <= 0) {
      const result = await this.store.tryAcquire(attempt);
      if (result.kind === 'granted') return this.granted(result.grant, result.owner, result.existing, 0, ctx);
      if (result.kind !== 'held') throw refused(result, sessionId);
      throw this.contended(who, result.holder, ctx);
    }

    // A cap on parked waits: each holds a request, a timer and store polls. Refused like a
    // spent budget (429, retry after backoff): the caller has too much in flight, nothing is wrong.
    if (this.waiters.countForSession(sessionId) >= this.maxWaitsPerSession) {
      throw this.contentionExceeded(who, 'waits', 1, ctx);
    }
    // Registered before the first try, so a release landing between a failed try and the wait still wakes it.
    const waiter = this.waiters.register(req.key, sessionId, null);
    const deadline = startedAt + req.waitMillis;
    const waitAbort = AbortSignal.any([waiter.sessionEnded.signal, waiter.deadlockVictim.signal, ...(signal ? [signal] : [])]);
    let usedFallback = false;
    let waited = false;
    let granted = false;
    let polls = 0;
    try {
      if (this.fleetStore && this.fleet && this.waiters.count(req.key) > 1) {
        // Others here already wait on this key: it is hot, and a first try would almost surely
        // find it held. Recorded first, one try covers what the try-record-try sequence covers.
        waiter.recordedInStore = true;
        await this.fleetStore.beginWait({ waitId: waiter.waitId, sessionId, key: req.key, instanceId: this.fleet.instanceId });
      }
      for (;;) {
        const seen = waiter.releasesSeen;
        let result: TryAcquireResult;
        try {
          result = await this.store.tryAcquire(attempt);
        } catch (error) {
          // A new acquire hears an outage at once (the first try throws); a wait already under way
          // rides it out, polling, until its deadline: the store may return in time (the probe wakes it).
          if (!waited || !(error instanceof NotLeaderError) || this.clock.now() >= deadline) {
            if (waited && error instanceof NotLeaderError) this.recordWait('deadline', startedAt);
            throw error;
          }
          const outcome = await this.pollDelay(waiter, seen, polls++, deadline - this.clock.now(), waitAbort);
          if (outcome === 'aborted' && !waiter.sessionEnded.signal.aborted && !waiter.deadlock) {
            this.recordWait('aborted', startedAt);
            throw signal?.reason instanceof Error ? signal.reason : new Error('acquire aborted by the caller');
          }
          if (waiter.sessionEnded.signal.aborted) throw new SessionNotFoundError(sessionId);
          continue;
        }
        if (result.kind === 'granted') {
          granted = true;
          if (waited) this.recordWait(usedFallback ? 'fallback' : 'released', startedAt);
          return this.granted(result.grant, result.owner, result.existing, this.clock.now() - startedAt, ctx);
        }
        if (result.kind !== 'held') throw refused(result, sessionId);
        waiter.holderSessionId = result.holder.sessionId;
        if (this.fleetStore && this.fleet && !waiter.recordedInStore) {
          waiter.recordedInStore = true;
          waited = true;
          await this.fleetStore.beginWait({ waitId: waiter.waitId, sessionId, key: req.key, instanceId: this.fleet.instanceId });
          // With a release feed, tried once more: a release that landed between the failed try and the
          // record announced nothing (the store only announces keys with recorded waits). A ReleaseWaiter
          // waits from the failed try's revision, so such a release still wakes it: no second try.
          if (!this.releaseWaiter) continue;
        }
        const remaining = deadline - this.clock.now();
        if (remaining <= 0) {
          if (waited) this.recordWait(usedFallback ? 'fallback' : 'deadline', startedAt);
          throw this.contended(who, result.holder, ctx);
        }
        waited = true;
        let outcome: WaitResult['outcome'];
        if (this.releaseWaiter && !usedFallback) {
          const wait = await this.releaseWaiter.waitForRelease({
            key: req.key,
            sessionId,
            ...(result.observedRevision !== undefined ? { observedRevision: result.observedRevision } : {}),
            timeoutMillis: remaining,
            signal: waitAbort,
          });
          outcome = wait.outcome;
          if (wait.outcome === 'fallback') {
            usedFallback = true;
            this.events.waitFellBack(ctx, { key: req.key, cause: wait.cause });
            outcome = await this.pollDelay(waiter, seen, polls++, deadline - this.clock.now(), waitAbort);
          }
        } else if (this.releaseFeed && this.feedUp) {
          outcome = await this.feedDelay(waiter, seen, remaining, waitAbort);
        } else {
          if (this.releaseFeed && !usedFallback) {
            // The feed is down (re-listening): this wait polls, counted apart.
            usedFallback = true;
            this.events.waitFellBack(ctx, { key: req.key, cause: this.feedDownCause });
          }
          outcome = await this.pollDelay(waiter, seen, polls++, remaining, waitAbort);
        }
        if (waiter.deadlock) {
          this.recordWait('aborted', startedAt);
          this.events.deadlockDetected(ctx, { ...waiter.deadlock, victimSessionId: sessionId, key: req.key });
          this.insight.deadlockBroken({ at: this.clock.now(), ...waiter.deadlock, victimSessionId: sessionId, key: req.key });
          throw new DeadlockDetectedError(req.key, waiter.deadlock);
        }
        if (waiter.sessionEnded.signal.aborted) throw new SessionNotFoundError(sessionId);
        if (outcome === 'aborted') {
          this.recordWait(usedFallback ? 'fallback' : 'aborted', startedAt);
          throw signal?.reason instanceof Error ? signal.reason : new Error('acquire aborted by the caller');
        }
        // 'released' and 'deadline' both re-try once: a deadline try can still win a release that just landed.
      }
    } finally {
      this.waiters.unregister(waiter);
      // Woken by a release it did not win and leaving (deadline, abort): the release may still be
      // unclaimed, so the next waiter in line gets it rather than its recheck timer.
      if (!granted && waiter.woken) this.waiters.keyReleased(req.key);
      // Not awaited: the answer need not wait for the bookkeeping. A row a failure left behind is
      // ended again when the store returns (else it would count as a waiter and as an edge of the
      // wait-for graph until its session or instance ends).
      if (waiter.recordedInStore) this.endWait(waiter.waitId);
    }
  }

  /**
   * Ends a recorded wait in the store. While the store is down the end is only remembered (sending it
   * would hold a connection the heartbeats need); a failed end is remembered too. Remembered ends are
   * sent when the store returns and by every sweep.
   */
  private endWait(waitId: string): void {
    if (!this.fleetStore) return;
    if (!this.storeHealth.up) {
      this.rememberUnendedWait(waitId);
      return;
    }
    this.fleetStore.endWait(waitId).catch(() => this.rememberUnendedWait(waitId));
  }

  private rememberUnendedWait(waitId: string): void {
    // Past the cap, the rest go with their sessions or this instance.
    if (this.unendedWaits.size < MAX_UNENDED_WAITS) this.unendedWaits.add(waitId);
  }

  /** Sends the remembered wait ends, a few at a time so client traffic is not queued behind them. */
  private async endUnendedWaits(): Promise<void> {
    if (!this.fleetStore || this.endingUnendedWaits) return;
    this.endingUnendedWaits = true;
    try {
      while (this.unendedWaits.size > 0 && this.storeHealth.up) {
        const batch = [...this.unendedWaits].slice(0, UNENDED_WAITS_AT_ONCE);
        for (const waitId of batch) this.unendedWaits.delete(waitId);
        const fleet = this.fleetStore;
        await Promise.all(batch.map((waitId) => fleet.endWait(waitId).catch(() => this.rememberUnendedWait(waitId))));
        if (this.unendedWaits.size > 0 && batch.every((waitId) => this.unendedWaits.has(waitId))) break; // still failing: next sweep
      }
    } finally {
      this.endingUnendedWaits = false;
    }
  }

  /** Without `ttlMillis` the grant keeps its own TTL. */
  async renew(
    req: { key: string; session: SessionCredential; fencingToken: FencingToken; ttlMillis?: number },
    ctx: EventContext,
  ): Promise<LockGrant> {
    const result = await this.store.renew(req);
    if (result.kind === 'renewed') return toGrant(result.lock);
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
    this.waiters.keyReleased(req.key);
    this.events.released(ctx, {
      key: lock.key,
      sessionId: lock.sessionId,
      fencingToken: lock.fencingToken,
      heldMillis: Math.max(0, lock.endedAt - lock.grantedAt),
    });
    return { key: req.key, released: true };
  }

  async readLock(key: string): Promise<LockInfo> {
    const [lock, counts] = await Promise.all([this.store.readLock(key), this.waiterCounts([key])]);
    return this.toInfo(key, lock, counts);
  }

  async listLocks(query: { prefix?: string; limit: number; cursor?: string }): Promise<Page<LockInfo>> {
    const page = await this.store.listLocks(query);
    const counts = await this.waiterCounts(page.items.map((lock) => lock.key));
    return { items: page.items.map((lock) => this.toInfo(lock.key, lock, counts)), nextCursor: page.nextCursor };
  }

  /** A1 with sort=age: the `limit` oldest grants, oldest first, counted like every other read. */
  async oldestLocks(limit: number, prefix?: string): Promise<LockInfo[]> {
    const oldest = await this.insight.oldestHeld(limit, prefix);
    const counts = await this.waiterCounts(oldest.map((lock) => lock.key));
    return oldest.map((lock) => this.toInfo(lock.key, lock, counts));
  }

  /** Waiters per key: fleet-wide from the store's wait state, else this instance's. */
  private async waiterCounts(keys: string[]): Promise<Map<string, number>> {
    if (this.fleetStore) return this.fleetStore.waiterCounts(keys);
    return new Map(keys.map((key) => [key, this.waiters.count(key)]));
  }

  async forceRevoke(
    req: { key: string; reason: string; expectedFencingToken?: FencingToken },
    actor: string,
    ctx: EventContext,
  ): Promise<LockOutcome> {
    const result = await this.store.forceRevoke({
      key: req.key,
      ...(req.expectedFencingToken !== undefined ? { expectedFencingToken: req.expectedFencingToken } : {}),
      audit: { actor, reason: req.reason, requestId: ctx.requestId },
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

  // ---- reads for the HTTP surface and the server wiring (issue 21: routes and the composition
  // root call methods, not this class's fields). Pass-throughs only; added by the i21-root work.

  /** Counts of held locks, live sessions, oldest grant and sweep lag, through the health check (A5, store gauges). */
  storeSummary(): ReturnType<LockStore['summary']> {
    return this.store.summary();
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

  private granted(grant: LockGrant, owner: string, existing: boolean, waitedMillis: number, ctx: EventContext): LockGrant {
    if (!existing) {
      this.insight.granted(grant, owner);
      this.events.granted(ctx, {
        key: grant.key,
        sessionId: grant.sessionId,
        owner,
        fencingToken: grant.fencingToken,
        ttlMillis: grant.ttlMillis,
        waitedMillis,
      });
    }
    return grant;
  }

  /** Charges the contended attempt to both budgets, or refuses with 429 if either is spent. */
  private contended(
    req: { key: string; sessionId: string },
    holder: HeldLock | null,
    ctx: EventContext,
  ): LockContendedError | ContentionExceededError {
    const verdict = this.budget.charge(req.sessionId);
    if (!verdict.ok) return this.contentionExceeded(req, verdict.scope, verdict.retryAfterSeconds, ctx, holder);
    this.insight.contended(req.key);
    this.events.contended(ctx, {
      key: req.key,
      sessionId: req.sessionId,
      holderSessionId: holder?.sessionId ?? null,
      reason: 'contended',
    });
    return new LockContendedError(req.key, holder?.sessionId);
  }

  private contentionExceeded(
    req: { key: string; sessionId: string },
    scope: 'session' | 'shared' | 'waits',
    retryAfterSeconds: number,
    ctx: EventContext,
    holder: HeldLock | null = null,
  ): ContentionExceededError {
    // The top-K counts what lock_contention_total counts, key by key.
    this.insight.contended(req.key);
    this.events.contended(ctx, {
      key: req.key,
      sessionId: req.sessionId,
      holderSessionId: holder?.sessionId ?? null,
      reason: 'exceeded',
    });
    if (scope === 'waits') {
      return new ContentionExceededError(
        `this session already has ${this.maxWaitsPerSession} waiting acquires on this server (HOLDFAST_MAX_WAITS_PER_SESSION); back off and retry`,
        retryAfterSeconds,
      );
    }
    const whose = scope === 'session' ? "this session's" : 'the shared';
    return new ContentionExceededError(`${whose} contention budget is spent; back off and retry`, retryAfterSeconds);
  }

  /**
   * Polling wait for stores without a ReleaseWaiter: full-jitter delay with a
   * floor, cut short by a release this instance sees, the deadline, or an abort.
   */
  private async pollDelay(
    waiter: Waiter,
    releasesSeen: number,
    attempt: number,
    remaining: number,
    signal: AbortSignal,
  ): Promise<WaitOutcome> {
    if (remaining <= 0) return 'deadline';
    const cap = Math.min(this.pollMaxMillis, this.pollBaseMillis * 2 ** Math.min(attempt, 20));
    const delay = Math.min(remaining, POLL_FLOOR_MILLIS + Math.floor(this.random() * (cap + 1)));
    const done = new AbortController();
    const both = AbortSignal.any([signal, done.signal]);
    try {
      await Promise.race([this.clock.sleep(delay, both), waiter.releasedSince(releasesSeen, both)]);
    } catch {
      // sleep rejects only on abort
    } finally {
      done.abort(WAIT_SETTLED);
    }
    if (signal.aborted) return 'aborted';
    return delay >= remaining ? 'deadline' : 'released';
  }

  /**
   * Parked until a release of the key reaches this instance (the feed fans releases from every
   * instance out to local waiters), re-checking now and then in case a notification was missed.
   */
  private async feedDelay(waiter: Waiter, releasesSeen: number, remaining: number, signal: AbortSignal): Promise<WaitOutcome> {
    if (remaining <= 0) return 'deadline';
    const delay = Math.min(remaining, this.feedRecheckMillis);
    const done = new AbortController();
    const both = AbortSignal.any([signal, done.signal]);
    let released = false;
    try {
      await Promise.race([
        this.clock.sleep(delay, both),
        waiter.releasedSince(releasesSeen, both).then(() => {
          released = !both.aborted;
        }),
      ]);
    } catch {
      // sleep rejects only on abort
    } finally {
      done.abort(WAIT_SETTLED);
    }
    if (signal.aborted) return 'aborted';
    return released || delay < remaining ? 'released' : 'deadline';
  }

  private recordWait(outcome: WaitOutcome, startedAt: number): void {
    this.events.waitEnded({ outcome, seconds: (this.clock.now() - startedAt) / 1000 });
  }

  /** `killedBy`: the operator order behind a kill, for the per-key history. */
  private sessionEnded(ended: EndedSession, ctx: EventContext, killedBy?: Pick<GrantEnd, 'actor' | 'reason' | 'auditId'>): void {
    const { session, cause } = ended;
    this.waiters.sessionEnded(session.sessionId);
    this.budget.forget(session.sessionId);
    this.events.sessionEnded(ctx, { sessionId: session.sessionId, owner: session.owner, cause, releasedLocks: ended.releasedLocks });
    for (const lock of ended.releasedLocks) {
      this.insight.ended(lock, { outcome: 'session_ended', cause: LOCK_EXPIRY_CAUSE_OF_SESSION_END[cause], ...killedBy });
      this.waiters.keyReleased(lock.key);
    }
  }

  private toInfo(key: string, lock: HeldLock | null, counts: Map<string, number>): LockInfo {
    const waiterCount = counts.get(key) ?? 0;
    if (!lock) return { key, held: false, waiterCount };
    return {
      key,
      held: true,
      sessionId: lock.sessionId,
      owner: lock.owner,
      fencingToken: lock.fencingToken,
      grantedAt: lock.grantedAt,
      expiresAt: lock.expiresAt,
      waiterCount,
    };
  }
}

function refused(refusal: SessionRefusal, sessionId: string): SessionNotFoundError | UnauthenticatedError {
  return refusal.kind === 'session_not_found'
    ? new SessionNotFoundError(sessionId)
    : new UnauthenticatedError(`session ${sessionId} needs its own sessionToken: Authorization: Bearer <sessionToken>`);
}

function toGrant(lock: HeldLock): LockGrant {
  const { owner: _owner, ...grant } = lock;
  return grant;
}

function newSessionId(): string {
  return `s_${randomBytes(16).toString('base64url')}`;
}

function yieldToRequests(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
