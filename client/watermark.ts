/**
 * The highest fencing token this client has been granted per key. Tokens
 * only ever increase (C3), so a grant below the watermark means the server
 * lost its history (a wiped store) or a stale answer arrived: handing that
 * token out would have the protected resource reject the holder's writes, so
 * the acquire fails with FencedOutError and is not retried.
 *
 * v3 (issue 23 slice 2): grants of one multi-holder kind (a semaphore's permits,
 * shared holders) coexist, so two sessions of this client may be answered in
 * the other order than their tokens: a grant below the key's highest is stale
 * only when one of the two could not coexist with the other (either is a mutex,
 * or they are of different kinds). Each session's own grants of a key still only
 * rise, and "granted before" (`seen`) is asked of the session's own grants.
 *
 * Bounded: the oldest keys are forgotten first (they only weaken the check).
 */
import { FencedOutError } from './errors.js';
import { compareFencingTokens } from './fenced.js';
import { isMultiHolder, MUTEX_HOLDING, sameHolding, type Holding } from './holding.js';
import type { FencingToken } from './wire.js';

interface Highest {
  token: FencingToken;
  holding: Holding;
}

export class TokenWatermark {
  /** Per key, across the client's sessions. */
  private readonly highest = new Map<string, Highest>();
  /** Per session and key: the session's own grants (one at a time per key, so they only rise). */
  private readonly own = new Map<string, FencingToken>();

  constructor(private readonly capacity = 10_000) {}

  /**
   * Throw FencedOutError if `token` is stale for `key` (see above); else record it.
   * Returns `seen` when this session was granted this exact token before (an existing
   * grant handed back by an idempotent L4), `new` otherwise.
   */
  admit(key: string, token: FencingToken, sessionId: string, holding: Holding = MUTEX_HOLDING): 'new' | 'seen' {
    const ownKey = `${sessionId}\u0000${key}`;
    const ownSeen = this.own.get(ownKey);
    if (ownSeen !== undefined && compareFencingTokens(token, ownSeen) < 0) throw new FencedOutError(key, token, ownSeen);
    const seen = this.highest.get(key);
    const below = seen !== undefined && compareFencingTokens(token, seen.token) < 0;
    const coexist = seen !== undefined && isMultiHolder(seen.holding) && sameHolding(seen.holding, holding);
    if (below && !coexist) throw new FencedOutError(key, token, seen.token);
    remember(this.own, ownKey, token, this.capacity);
    remember(this.highest, key, below ? seen : { token, holding }, this.capacity);
    return ownSeen === token ? 'seen' : 'new';
  }
}

/** Set, most recently used last; the least recently used entry goes past `capacity`. */
function remember<V>(map: Map<string, V>, key: string, value: V, capacity: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > capacity) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
}
