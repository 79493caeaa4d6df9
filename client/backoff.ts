/**
 * Full-jitter exponential backoff: the delay before retry `attempt` (0-based)
 * is a uniform integer in [0, min(maxMillis, baseMillis · 2^attempt)].
 *
 * Why this shape and not the others:
 * - Fixed delay: waiters that collided once wake together and collide again, forever.
 * - Plain exponential: still lockstep — every waiter computes the same delay for the
 *   same attempt, so collisions repeat at growing intervals.
 * - "Equal jitter" (half fixed + half random): the fixed half keeps a floor under every
 *   waiter, so a freed lock sits idle for at least cap/2; full jitter spreads waiters over
 *   the whole window and finishes contended work sooner for the same server load.
 *
 * The exponent is clamped before multiplying, so attempt 200 (or 2^31) yields the cap
 * rather than Infinity or NaN.
 */
import type { RandomSource } from './random.js';
import { ValidationError } from './errors.js';

export class Backoff {
  /** Doublings after which base · 2^n is at or above the cap. */
  private readonly maxDoublings: number;

  constructor(
    readonly baseMillis: number,
    readonly maxMillis: number,
    private readonly random: RandomSource,
  ) {
    if (!Number.isInteger(baseMillis) || baseMillis < 1) {
      throw new ValidationError(`baseMillis must be an integer ≥ 1, got ${baseMillis}`);
    }
    if (!Number.isInteger(maxMillis) || maxMillis < baseMillis) {
      throw new ValidationError(`maxMillis must be an integer ≥ baseMillis, got ${maxMillis}`);
    }
    this.maxDoublings = Math.ceil(Math.log2(maxMillis / baseMillis));
  }

  /** The upper bound of the window for `attempt`: min(max, base · 2^attempt). */
  ceiling(attempt: number): number {
    if (!Number.isInteger(attempt) || attempt < 0) {
      throw new ValidationError(`attempt must be an integer ≥ 0, got ${attempt}`);
    }
    const doublings = Math.min(attempt, this.maxDoublings);
    return Math.min(this.maxMillis, this.baseMillis * 2 ** doublings);
  }

  /** One draw: a uniform integer in [0, ceiling(attempt)], inclusive. */
  delay(attempt: number): number {
    const ceiling = this.ceiling(attempt);
    return Math.min(ceiling, Math.floor(this.random() * (ceiling + 1)));
  }
}
