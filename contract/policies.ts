/**
 * Per-prefix lock policies (SPEC "v3 — teams on one service", `HOLDFAST_POLICIES_FILE`): the
 * record, and the one rule that picks a key's policy (the longest prefix that the key starts
 * with). The server enforces them, the alert generator reads each one's `maxHoldMillis`, and the
 * console shows them, so the rule lives here once. No import: the SDK and the console bundle it.
 */

export interface LockPolicy {
  /** The only per-prefix metric label (`policy`), so it is bounded by the file. */
  readonly name: string;
  readonly prefix: string;
  /** A grant older than this is not renewed (409 HOLD_LIMIT_REACHED) and ends at its TTL. */
  readonly maxHoldMillis?: number;
  /** Caps the TTL an acquire (L4) or a renew (L5) may ask for (400). */
  readonly maxTtlMillis?: number;
  /** The TTL of an acquire that names none. */
  readonly defaultTtlMillis?: number;
  /** Waits on one key beyond this are answered 429 CONTENTION_EXCEEDED. */
  readonly maxWaiters?: number;
}

/** The `policy` label of a key under no policy. */
export const NO_POLICY = '';

/** The policy of `key`: the one with the longest prefix the key starts with, if any. */
export function policyForKey(policies: readonly LockPolicy[], key: string): LockPolicy | undefined {
  let best: LockPolicy | undefined;
  for (const policy of policies) {
    if (key.startsWith(policy.prefix) && (best === undefined || policy.prefix.length > best.prefix.length)) best = policy;
  }
  return best;
}

/** True when `key` lies under one of `prefixes` (a scoped token's reach); no prefixes = unscoped. */
export function keyInScope(prefixes: readonly string[] | undefined, key: string): boolean {
  return prefixes === undefined || prefixes.some((prefix) => key.startsWith(prefix));
}
