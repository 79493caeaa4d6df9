/**
 * Per-prefix policies applied to the lock operations (SPEC "v3 — teams on one service"): the TTL an
 * acquire gets and may ask for, the renew that a grant's age refuses, the waits one key may have.
 * The policies are read at each decision (the server re-reads its file on change), and the key's
 * policy is the longest-prefix one (contract/policies.ts, the one definition of that rule).
 */
import { policyForKey, type LockPolicy } from '../../contract/policies.js';
import { ContentionExceededError, ValidationFailedError } from '../errors.js';

/** How long a caller told "too many waiters" should stay away before asking again. */
const WAITERS_RETRY_AFTER_SECONDS = 1;

export class LockPolicies {
  constructor(
    private readonly policies: () => readonly LockPolicy[],
    private readonly serverDefaultTtlMillis: number,
  ) {}

  current(): readonly LockPolicy[] {
    return this.policies();
  }

  of(key: string): LockPolicy | undefined {
    return policyForKey(this.policies(), key);
  }

  /**
   * The TTL of an acquire: the one asked for, else the policy's default, else the server's (capped at
   * the policy's maximum, since the caller named none). Asking above the maximum is refused.
   */
  acquireTtl(key: string, requested: number | undefined): number {
    const policy = this.of(key);
    if (requested !== undefined) return this.checkTtl(policy, key, requested);
    const fallback = policy?.defaultTtlMillis ?? this.serverDefaultTtlMillis;
    return policy?.maxTtlMillis !== undefined ? Math.min(fallback, policy.maxTtlMillis) : fallback;
  }

  /** A renew's TTL, when it names one, within the policy's maximum. */
  renewTtl(key: string, requested: number | undefined): number | undefined {
    return requested === undefined ? undefined : this.checkTtl(this.of(key), key, requested);
  }

  maxHoldMillis(key: string): number | undefined {
    return this.of(key)?.maxHoldMillis;
  }

  /** Refuses one more wait on `key` when its policy caps waiters and `waiting` (fleet-wide where known) reached it. */
  admitWait(key: string, waiting: () => Promise<number>): Promise<void> | void {
    const cap = this.of(key)?.maxWaiters;
    if (cap === undefined) return;
    return waiting().then((count) => {
      if (count >= cap) {
        throw new ContentionExceededError(
          `${JSON.stringify(key)} already has ${count} waiters, the most its policy ${JSON.stringify(this.of(key)?.name)} allows (maxWaiters ${cap})`,
          WAITERS_RETRY_AFTER_SECONDS,
        );
      }
    });
  }

  private checkTtl(policy: LockPolicy | undefined, key: string, ttlMillis: number): number {
    if (policy?.maxTtlMillis !== undefined && ttlMillis > policy.maxTtlMillis) {
      throw new ValidationFailedError(
        `ttlMillis ${ttlMillis} is above the ${policy.maxTtlMillis} ms that policy ${JSON.stringify(policy.name)} allows for ${JSON.stringify(key)}`,
      );
    }
    return ttlMillis;
  }
}
