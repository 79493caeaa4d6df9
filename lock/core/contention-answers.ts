/**
 * The answers to a contended acquire: 409 LOCK_CONTENDED while the budgets allow, 429
 * CONTENTION_EXCEEDED when a budget or the per-session wait cap is spent. Each answer is
 * counted once (lock_contention_total and the contention top-K, key by key).
 */
import { ContentionExceededError, LockContendedError } from '../errors.js';
import type { EventContext, LockEvents } from '../../contract/lock-events.js';
import type { HeldLock } from '../store/spi.js';
import type { ContentionBudget } from './contention-budget.js';
import type { LockInsight } from './insight.js';

export interface Contender {
  key: string;
  sessionId: string;
  /** Whose fair share of the shared budget the attempt spends (session-principals.ts). */
  principal?: string;
}

const SPENT: Record<'session' | 'shared' | 'client', string> = {
  session: "this session's contention budget is spent; back off and retry",
  shared: 'the shared contention budget is spent; back off and retry',
  client: "this client's fair share of the shared contention budget is spent (other clients contend too); back off and retry",
};

export class ContentionAnswers {
  constructor(
    readonly budget: ContentionBudget,
    private readonly insight: LockInsight,
    private readonly events: LockEvents,
    /** Concurrent server-side waits one session may have here (HOLDFAST_MAX_WAITS_PER_SESSION). */
    readonly maxWaitsPerSession: number,
  ) {}

  /** Charges the contended attempt to the session's budget and its principal's share, or refuses with 429 if either is spent. */
  contended(who: Contender, holder: HeldLock | null, ctx: EventContext): LockContendedError | ContentionExceededError {
    const verdict = this.budget.charge(who.sessionId, who.principal);
    if (!verdict.ok) return this.exceeded(who, holder, ctx, SPENT[verdict.scope], verdict.retryAfterSeconds);
    this.count(who, holder, ctx, 'contended');
    return new LockContendedError(who.key, holder?.sessionId);
  }

  /** A cap on parked waits: each holds a request, a timer and store calls. Refused like a spent budget. */
  tooManyWaits(who: Contender, holder: HeldLock | null, ctx: EventContext): ContentionExceededError {
    return this.exceeded(
      who,
      holder,
      ctx,
      `this session already has ${this.maxWaitsPerSession} waiting acquires on this server (HOLDFAST_MAX_WAITS_PER_SESSION); back off and retry`,
      1,
    );
  }

  private exceeded(who: Contender, holder: HeldLock | null, ctx: EventContext, message: string, retryAfterSeconds: number): ContentionExceededError {
    this.count(who, holder, ctx, 'exceeded');
    return new ContentionExceededError(message, retryAfterSeconds);
  }

  private count(who: Contender, holder: HeldLock | null, ctx: EventContext, reason: 'contended' | 'exceeded'): void {
    // The top-K counts what lock_contention_total counts, key by key.
    this.insight.contended(who.key);
    this.events.contended(ctx, { key: who.key, sessionId: who.sessionId, holderSessionId: holder?.sessionId ?? null, reason });
  }
}
