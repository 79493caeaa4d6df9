/**
 * Contention budgets: each session may spend `perSession` contended attempts
 * per second (burst `perSessionBurst`), and all sessions share `shared` per
 * second. An attempt is charged against both or neither: every bucket is
 * checked first, then every bucket is charged, so a request the shared cap
 * refuses costs the session nothing.
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

  /** New rate and burst; the tokens on hand are scaled with the burst. */
  resize(ratePerSecond: number, burst: number, now: number): void {
    const fill = this.available(now) / this.burst;
    this.ratePerSecond = ratePerSecond;
    this.burst = burst;
    this.tokens = fill * burst;
  }

  take(): void {
    this.tokens -= 1;
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

export type BudgetVerdict = { ok: true } | { ok: false; scope: 'session' | 'shared'; retryAfterSeconds: number };

export class ContentionBudget {
  private readonly shared: TokenBucket;
  private readonly sessions = new Map<string, TokenBucket>();
  private instances = 1;

  constructor(
    private readonly config: ContentionBudgetConfig,
    private readonly clock: Clock,
  ) {
    this.shared = new TokenBucket(config.sharedPerSecond, config.sharedBurst, clock.now());
  }

  /**
   * The shared cap is fleet-wide: with `count` live instances on the store (its instance
   * registry), this instance enforces 1/count of the configured rate and burst. A fleet-wide
   * bucket in the store would cost a write per contended attempt; the division costs nothing
   * and errs by at most one heartbeat when instances come and go.
   */
  setInstanceCount(count: number): void {
    const n = Math.max(1, count);
    if (n === this.instances) return;
    this.instances = n;
    this.shared.resize(this.config.sharedPerSecond / n, Math.max(1, this.config.sharedBurst / n), this.clock.now());
  }

  /** Is there budget for one more contended attempt? Charges nothing. */
  check(sessionId: string): BudgetVerdict {
    const now = this.clock.now();
    const session = this.bucketFor(sessionId, now);
    if (this.shared.available(now) < 1) {
      return { ok: false, scope: 'shared', retryAfterSeconds: retryAfter(this.shared.secondsUntilOne(now)) };
    }
    if (session.available(now) < 1) {
      return { ok: false, scope: 'session', retryAfterSeconds: retryAfter(session.secondsUntilOne(now)) };
    }
    return { ok: true };
  }

  /** Charges one contended attempt to both budgets, or to neither if either is spent. */
  charge(sessionId: string): BudgetVerdict {
    const verdict = this.check(sessionId);
    if (!verdict.ok) return verdict;
    this.shared.take();
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

  /** Drops full buckets so idle sessions cost no memory. */
  prune(): void {
    const now = this.clock.now();
    for (const [id, bucket] of this.sessions) if (bucket.isFull(now)) this.sessions.delete(id);
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
