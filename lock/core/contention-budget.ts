/**
 * Contention budgets: each session may spend `perSession` contended attempts per second (burst
 * `perSessionBurst`), and all sessions share `shared` per second. The shared budget is split in
 * fair shares among the principals contending now (the client token behind a session, see
 * session-principals.ts): with N of them each may spend 1/N of it, so one client with many
 * sessions cannot spend it for everyone (issue 24). Alone, a principal has all of it, as before.
 * An attempt is charged against every bucket or none: all are checked first, then all charged,
 * so a request a share refuses costs the session nothing.
 */
import type { Clock } from './clock.js';

export interface ContentionBudgetConfig {
  perSessionPerSecond: number;
  perSessionBurst: number;
  sharedPerSecond: number;
  sharedBurst: number;
}

/** Generous: an SDK retrying with full-jitter backoff never comes near these. */
export const DEFAULT_CONTENTION_BUDGET: ContentionBudgetConfig = {
  perSessionPerSecond: 50,
  perSessionBurst: 100,
  sharedPerSecond: 5000,
  sharedBurst: 10000,
};

/** The principal of callers that name none (core tests, a store-less caller): one share for all. */
export const ANONYMOUS_PRINCIPAL = '';

/** A principal stops counting towards N this long after its last contended attempt, once its share is full again. */
const PRINCIPAL_IDLE_MILLIS = 10_000;

class TokenBucket {
  private tokens: number;
  private updatedAt: number;

  constructor(
    private ratePerSecond: number,
    private burst: number,
    now: number,
  ) {
    this.tokens = burst;
    this.updatedAt = now;
  }

  available(now: number): number {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.updatedAt) / 1000) * this.ratePerSecond);
    this.updatedAt = now;
    return this.tokens;
  }

  take(): void {
    this.tokens -= 1;
  }

  /** A new rate and burst, the tokens on hand capped (never topped up): a new shape is no free burst. */
  reshape(ratePerSecond: number, burst: number, now: number): void {
    if (ratePerSecond === this.ratePerSecond && burst === this.burst) return;
    this.available(now);
    this.ratePerSecond = ratePerSecond;
    this.burst = burst;
    this.tokens = Math.min(this.tokens, burst);
  }

  /** Seconds until one token is available again. */
  secondsUntilOne(now: number): number {
    const missing = 1 - this.available(now);
    return missing <= 0 ? 0 : missing / this.ratePerSecond;
  }

  isFull(now: number): boolean {
    return this.available(now) >= this.burst;
  }
}

export type BudgetVerdict = { ok: true } | { ok: false; scope: 'session' | 'shared' | 'client'; retryAfterSeconds: number };

interface PrincipalShare {
  bucket: TokenBucket;
  lastChargedAt: number;
}

export class ContentionBudget {
  private readonly sessions = new Map<string, TokenBucket>();
  private readonly principals = new Map<string, PrincipalShare>();
  private instances = 1;

  constructor(
    private readonly config: ContentionBudgetConfig,
    private readonly clock: Clock,
  ) {}

  /**
   * The shared budget is fleet-wide: with `count` live instances on the store (its instance
   * registry), this instance enforces 1/count of the configured rate and burst. A fleet-wide
   * bucket in the store would cost a write per contended attempt; the division costs nothing
   * and errs by at most one heartbeat when instances come and go.
   */
  setInstanceCount(count: number): void {
    this.instances = Math.max(1, count);
  }

  /** Principals contending here now (each has a share of the shared budget). */
  get contendingPrincipals(): number {
    return Math.max(1, this.principals.size);
  }

  /** Is there budget for one more contended attempt? Charges nothing. */
  check(sessionId: string, principal: string = ANONYMOUS_PRINCIPAL): BudgetVerdict {
    const now = this.clock.now();
    const share = this.shareOf(principal, now).bucket;
    if (share.available(now) < 1) {
      // Alone, a principal's share is the whole shared budget: say so as before.
      const scope = this.principals.size > 1 ? 'client' : 'shared';
      return { ok: false, scope, retryAfterSeconds: retryAfter(share.secondsUntilOne(now)) };
    }
    const session = this.bucketFor(sessionId, now);
    if (session.available(now) < 1) {
      return { ok: false, scope: 'session', retryAfterSeconds: retryAfter(session.secondsUntilOne(now)) };
    }
    return { ok: true };
  }

  /** Charges one contended attempt to the session and its principal's share, or to neither if either is spent. */
  charge(sessionId: string, principal: string = ANONYMOUS_PRINCIPAL): BudgetVerdict {
    const verdict = this.check(sessionId, principal);
    const share = this.principals.get(principal)!;
    share.lastChargedAt = this.clock.now();
    if (!verdict.ok) return verdict;
    share.bucket.take();
    this.sessions.get(sessionId)!.take();
    return verdict;
  }

  /** Remaining whole attempts in a session's own budget (for tests and the console). */
  remaining(sessionId: string): number {
    return Math.floor(this.bucketFor(sessionId, this.clock.now()).available(this.clock.now()));
  }

  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  /** Drops full buckets so idle sessions cost no memory, and idle principals give their share back. */
  prune(): void {
    const now = this.clock.now();
    for (const [id, bucket] of this.sessions) if (bucket.isFull(now)) this.sessions.delete(id);
    const before = this.principals.size;
    for (const [principal, share] of this.principals) {
      if (now - share.lastChargedAt >= PRINCIPAL_IDLE_MILLIS && share.bucket.isFull(now)) this.principals.delete(principal);
    }
    // The shares left grow from now (refilling at their larger rate), not from their next attempt.
    if (this.principals.size < before) for (const principal of this.principals.keys()) this.shareOf(principal, now);
  }

  /** The principal's share, shaped for the principals and instances there are now. */
  private shareOf(principal: string, now: number): PrincipalShare {
    let share = this.principals.get(principal);
    const n = this.principals.size + (share ? 0 : 1);
    const rate = this.config.sharedPerSecond / this.instances / n;
    const burst = Math.max(1, this.config.sharedBurst / this.instances / n);
    if (!share) {
      share = { bucket: new TokenBucket(rate, burst, now), lastChargedAt: now };
      this.principals.set(principal, share);
    } else {
      share.bucket.reshape(rate, burst, now);
    }
    return share;
  }

  private bucketFor(sessionId: string, now: number): TokenBucket {
    let bucket = this.sessions.get(sessionId);
    if (!bucket) {
      bucket = new TokenBucket(this.config.perSessionPerSecond, this.config.perSessionBurst, now);
      this.sessions.set(sessionId, bucket);
    }
    return bucket;
  }
}

function retryAfter(seconds: number): number {
  return Math.max(1, Math.ceil(seconds));
}
