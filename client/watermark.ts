/**
 * The highest fencing token this client has been granted per key. Tokens
 * only ever increase (C3), so a grant below the watermark means the server
 * lost its history (a wiped store) or a stale answer arrived: handing that
 * token out would have the protected resource reject the holder's writes, so
 * the acquire fails with FencedOutError and is not retried.
 *
 * Bounded: the oldest keys are forgotten first (they only weaken the check).
 */
import { FencedOutError } from './errors.js';
import { compareFencingTokens } from './fenced.js';
import type { FencingToken } from './wire.js';

export class TokenWatermark {
  private readonly highest = new Map<string, FencingToken>();

  constructor(private readonly capacity = 10_000) {}

  /**
   * Throw FencedOutError if `token` is below the highest seen for `key`; else
   * record it. Returns `seen` when this exact token was granted before (an
   * existing grant handed back by an idempotent L4), `new` otherwise.
   */
  admit(key: string, token: FencingToken): 'new' | 'seen' {
    const seen = this.highest.get(key);
    if (seen !== undefined && compareFencingTokens(token, seen) < 0) {
      throw new FencedOutError(key, token, seen);
    }
    const verdict = seen === token ? 'seen' : 'new';
    this.highest.delete(key); // re-insert: most recently used last
    this.highest.set(key, token); // token ≥ seen here
    if (this.highest.size > this.capacity) {
      const oldest = this.highest.keys().next().value;
      if (oldest !== undefined) this.highest.delete(oldest);
    }
    return verdict;
  }
}
