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
 *
 * Readers and writers (v3 shared locks): every grant of every kind draws its token from one
 * strictly increasing sequence, so a resource read by shared holders and written by exclusive
 * ones keeps two records per key — the highest token seen (reads included) and the last write's —
 * and checks a read against the last write, a write against everything seen (`fencedRead`,
 * `fencedWrite` below).
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

/** Per key, what a resource read by shared holders and written by exclusive ones keeps (two Maps fit). */
export interface ReadWriteFence {
  /** The highest token seen, reads and writes alike. */
  highest: FenceStore;
  /** The token of the last accepted write. */
  lastWrite: FenceStore;
}

/**
 * A read by a shared holder: accepted when `token` is not below the last write's (readers hold
 * together with different tokens, so a reader below another reader is fine; a reader below the
 * last writer held its grant before that writer's, which came only after every reader had gone).
 * Raises `highest`. Else FencedOutError, nothing recorded.
 */
export function fencedRead(fence: ReadWriteFence, key: string, token: FencingToken): void {
  checkToken(token);
  const lastWrite = fence.lastWrite.get(key);
  if (lastWrite !== undefined && compareFencingTokens(token, lastWrite) < 0) throw new FencedOutError(key, token, lastWrite);
  const highest = fence.highest.get(key);
  if (highest === undefined || compareFencingTokens(token, highest) > 0) fence.highest.set(key, token);
}

/**
 * A write by an exclusive holder: accepted when `token` is not below any token seen for the key,
 * readers' included (equal: the same writer again) — a writer deposed before a reader came has a
 * lower token than that reader. Records it as the highest and the last write. Else FencedOutError.
 */
export function fencedWrite(fence: ReadWriteFence, key: string, token: FencingToken): void {
  fenced(fence.highest, key, token);
  fence.lastWrite.set(key, token);
}
