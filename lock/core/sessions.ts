/**
 * Sessions: open, heartbeat, close, kill, and the sweeper that ends what lapsed on the store's
 * clock. Whatever way a session ends, `ended` tells everything in core that kept state about it.
 */
import { randomBytes } from 'node:crypto';
import { NotLeaderError } from '../errors.js';
import type { Page, SessionInfo } from '../../contract/records.js';
import { LOCK_EXPIRY_CAUSE_OF_SESSION_END, type EventContext, type LockEvents } from '../../contract/lock-events.js';
import type { EndedLock, EndedSession, HeartbeatResult, LockStore, SessionCredential } from '../store/spi.js';
import type { AcquireWaits } from './acquire-wait.js';
import type { ContentionBudget } from './contention-budget.js';
import type { GrantEnd, LockInsight } from './insight.js';
import { refused } from './session-refusal.js';
import type { SessionPrincipals } from './session-principals.js';
import type { SessionScopes } from './session-scopes.js';
import { hashSessionToken, newSessionToken } from './session-token.js';
import type { StoreHealth } from './store-health.js';
import type { WaitRecords } from './wait-records.js';
import type { WaiterRegistry } from './waiters.js';

export interface SessionView {
  sessionId: string;
  /** The bearer capability for L2–L6: shown once, never stored or logged in clear. */
  sessionToken: string;
  owner: string;
  ttlMillis: number;
  expiresAt: number;
}

export interface SweepOptions {
  /** Records ended per store call (default 500). */
  batch?: number;
  /** Aborted: the sweep returns after the batch in hand (shutdown). */
  stop?: AbortSignal;
}

/** Who ordered an audited action: the admin token's name, and its prefixes when it is scoped (kept in the entry). */
export interface AuditActor {
  name: string;
  scope?: readonly string[];
}

/** The audit draft's actor fields for `actor`. */
export function auditActorFields(actor: AuditActor): { actor: string; actorScope?: readonly string[] } {
  return { actor: actor.name, ...(actor.scope !== undefined ? { actorScope: actor.scope } : {}) };
}

export interface KillOutcome {
  sessionId: string;
  outcome: 'KILLED' | 'NOT_FOUND';
  releasedLocks: number;
  auditId: string;
}

export interface SessionDeps {
  store: LockStore;
  events: LockEvents;
  health: StoreHealth;
  waiters: WaiterRegistry;
  waits: AcquireWaits;
  budget: ContentionBudget;
  principals: SessionPrincipals;
  scopes: SessionScopes | null;
  insight: LockInsight;
  records: WaitRecords | null;
}

export class Sessions {
  constructor(private readonly deps: SessionDeps) {}

  /** `openedBy`: the name of the client token the caller presented, when the server needs one. */
  async open(input: { ttlMillis: number; owner: string; openedBy?: string }, ctx: EventContext): Promise<SessionView> {
    const sessionToken = newSessionToken();
    const tokenHash = hashSessionToken(sessionToken);
    const session = await this.deps.store.openSession({
      sessionId: newSessionId(),
      owner: input.owner,
      ttlMillis: input.ttlMillis,
      tokenHash,
      ...(input.openedBy !== undefined ? { openedBy: input.openedBy } : {}),
    });
    this.deps.principals.remember(session);
    this.deps.scopes?.remember(session.sessionId, tokenHash, session.openedBy);
    this.deps.events.sessionOpened(ctx, { sessionId: session.sessionId, owner: session.owner, ttlMillis: session.ttlMillis });
    return { sessionId: session.sessionId, sessionToken, owner: session.owner, ttlMillis: session.ttlMillis, expiresAt: session.expiresAt };
  }

  async heartbeat(credential: SessionCredential): Promise<{ sessionId: string; expiresAt: number }> {
    // A counter, not a log line: heartbeats are the steady load (every session, every few seconds).
    let result: HeartbeatResult;
    try {
      result = await this.deps.store.heartbeat(credential);
    } catch (error) {
      this.deps.events.heartbeat({ outcome: error instanceof NotLeaderError ? 'not_leader' : 'error' });
      throw error;
    }
    this.deps.events.heartbeat({ outcome: result.kind });
    if (result.kind !== 'alive') throw refused(result, credential.sessionId);
    return { sessionId: credential.sessionId, expiresAt: result.session.expiresAt };
  }

  async close(credential: SessionCredential, ctx: EventContext): Promise<void> {
    const result = await this.deps.store.closeSession(credential);
    if (result.kind !== 'closed') throw refused(result, credential.sessionId);
    this.ended(result.ended, ctx);
  }

  async kill(sessionId: string, reason: string, by: AuditActor, ctx: EventContext): Promise<KillOutcome> {
    const actor = by.name;
    const { ended, audit } = await this.deps.store.killSession(sessionId, { ...auditActorFields(by), reason, requestId: ctx.requestId });
    if (ended) this.ended(ended, ctx, { actor, reason, auditId: audit.id });
    const outcome = ended ? 'KILLED' : 'NOT_FOUND';
    this.deps.events.sessionKilled(ctx, { sessionId, actor, reason, outcome, auditId: audit.id, auditHeadHash: audit.hash });
    return { sessionId, outcome, releasedLocks: ended?.releasedLocks.length ?? 0, auditId: audit.id };
  }

  list(query: { limit: number; cursor?: string }): Promise<Page<SessionInfo>> {
    return this.deps.store.listSessions(query);
  }

  /** Sweeper entry point: ends lapsed sessions and locks, and reports each. */
  async sweep(ctx: EventContext, { batch = 500, stop }: SweepOptions = {}): Promise<{ sessions: number; locks: number }> {
    const { store, health, records, budget } = this.deps;
    // Nothing to sweep that the store could confirm; the probe, not the sweeper, notices its return.
    if (!health.up) return { sessions: 0, locks: 0 };
    await records?.flushUnended();
    // The store's clock decides what lapsed. A session lapsing between the two phases keeps
    // its locks in the second (only lapsed lock TTLs go there) until the next pass ends it.
    // Bounded batches (session order, then key order, in the store) with a turn of the event
    // loop between them: an expiry storm is many short transactions, and requests are answered
    // between them instead of after the whole storm. A stop (shutdown) ends the sweep between
    // batches: what is left is the next sweep's, on this instance or another, and shutdown waits
    // for one batch, not for the storm (on etcd, minutes for 100,000 lapsed sessions).
    const sessions = await this.inBatches(batch, stop, async () => {
      const ended = await store.expireSessions(batch);
      for (const e of ended) this.ended(e, ctx);
      return ended.length;
    });
    if (store.fleet && !stop?.aborted) await store.fleet.expireInstances(batch);
    const locks = await this.inBatches(batch, stop, async () => {
      const expired = await store.expireLocks(batch);
      for (const lock of expired) this.expired(lock, ctx);
      return expired.length;
    });
    budget.prune();
    return { sessions, locks };
  }

  /** Runs `oneBatch` until it ends fewer than `batch` or `stop` aborts; the total it ended. */
  private async inBatches(batch: number, stop: AbortSignal | undefined, oneBatch: () => Promise<number>): Promise<number> {
    let total = 0;
    while (!stop?.aborted) {
      const ended = await oneBatch();
      total += ended;
      if (ended < batch) break;
      await yieldToRequests();
    }
    return total;
  }

  private expired(lock: EndedLock, ctx: EventContext): void {
    const { events, insight, waiters } = this.deps;
    events.expired(ctx, { key: lock.key, sessionId: lock.sessionId, fencingToken: lock.fencingToken });
    insight.ended(lock, { outcome: 'expired', cause: 'ttl' });
    waiters.keyReleased(lock.key);
  }

  /** `killedBy`: the operator order behind a kill, for the per-key history. */
  private ended(ended: EndedSession, ctx: EventContext, killedBy?: Pick<GrantEnd, 'actor' | 'reason' | 'auditId'>): void {
    const { session, cause } = ended;
    const { waiters, waits, budget, events, insight } = this.deps;
    waiters.sessionEnded(session.sessionId);
    waits.sessionEnded(session.sessionId);
    budget.forget(session.sessionId);
    this.deps.principals.forget(session.sessionId);
    this.deps.scopes?.forget(session.sessionId);
    events.sessionEnded(ctx, { sessionId: session.sessionId, owner: session.owner, cause, releasedLocks: ended.releasedLocks });
    for (const lock of ended.releasedLocks) {
      insight.ended(lock, { outcome: 'session_ended', cause: LOCK_EXPIRY_CAUSE_OF_SESSION_END[cause], ...killedBy });
      waiters.keyReleased(lock.key);
    }
  }
}

function newSessionId(): string {
  return `s_${randomBytes(16).toString('base64url')}`;
}

function yieldToRequests(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
