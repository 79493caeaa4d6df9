/**
 * Fencing on the protected resource's side. A lock alone cannot stop a paused
 * holder (GC, VM stall) from writing after its lock expired and was granted
 * to someone else; the resource can, by refusing any token lower than the
 * highest it has already accepted for that key.
 *
 * ```ts
 * const highest = new Map<string, string>();           // or your table's row
 * fenced(highest, 'payout:42', handle.fencingToken);    // throws FencedOutError if stale
 * ```
 */
import { FencedOutError, ValidationError } from './errors.js';
import { compareFencingTokens as compareDecimal, isFencingToken, type FencingToken } from './wire.js';

/** Where the resource keeps the highest token it accepted per key. A Map fits. */
export interface FenceStore {
  get(key: string): FencingToken | undefined;
  set(key: string, token: FencingToken): unknown;
}

/** Numeric comparison of two decimal fencing tokens (int64 as strings): -1, 0 or 1. */
export function compareFencingTokens(a: FencingToken, b: FencingToken): number {
  checkToken(a);
  checkToken(b);
  return compareDecimal(a, b);
}

/**
 * Accept `token` for `key` if it is at least the highest seen (equal: the same
 * holder writing again), recording it as the new highest; otherwise throw
 * FencedOutError and record nothing.
 */
export function fenced(store: FenceStore, key: string, token: FencingToken): void {
  checkToken(token); // a malformed token is refused even as the first one seen
  const highest = store.get(key);
  if (highest !== undefined && compareFencingTokens(token, highest) < 0) {
    throw new FencedOutError(key, token, highest);
  }
  if (highest === undefined || compareFencingTokens(token, highest) > 0) store.set(key, token);
}

/** The C3 token rule (contract/wire-rules.ts): a decimal int64 string. */
function checkToken(token: FencingToken): void {
  if (!isFencingToken(token)) {
    throw new ValidationError(`fencing token must be a decimal int64 string, got ${JSON.stringify(token)}`);
  }
}
