/**
 * How hard one `acquire` tries. Immutable and validated at construction, so a
 * bad figure fails where it is written rather than deep inside a retry loop.
 *
 * Shipped defaults (SPEC C2):
 * - totalBudgetMillis 10,000 — one deadline for the whole call, computed once at entry.
 * - baseBackoffMillis 50     — first jitter window [0, 50 ms]; a lock held for a short
 *                              critical section is often free again within that.
 * - maxBackoffMillis 2,000   — the window stops doubling at 2 s so a waiter still looks
 *                              several times within the budget.
 * - maxAttempts 12           — bounds L4 calls per acquire whatever the budget.
 * - waitMillis 0             — no server-side wait unless asked (the server caps it at 30 s).
 *
 * Retries sleep a full-jitter delay (see Backoff): not a fixed delay (collided waiters
 * collide again forever), not plain exponential (still lockstep), not "equal jitter"
 * (its fixed half leaves a freed lock idle for at least cap/2).
 */
import { ValidationError } from './errors.js';
import { WAIT_MILLIS } from './wire.js';

export interface AcquirePolicyInit {
  totalBudgetMillis?: number;
  baseBackoffMillis?: number;
  maxBackoffMillis?: number;
  maxAttempts?: number;
  waitMillis?: number;
}

/** The server's upper bound on `waitMillis` (C3 L4; contract/wire-rules.ts). */
export const MAX_WAIT_MILLIS: number = WAIT_MILLIS.max;

export class AcquirePolicy {
  static readonly DEFAULT = new AcquirePolicy();

  readonly totalBudgetMillis: number;
  readonly baseBackoffMillis: number;
  readonly maxBackoffMillis: number;
  readonly maxAttempts: number;
  readonly waitMillis: number;

  constructor(init: AcquirePolicyInit = {}) {
    this.totalBudgetMillis = nonNegativeInteger('totalBudgetMillis', init.totalBudgetMillis ?? 10_000);
    this.baseBackoffMillis = nonNegativeInteger('baseBackoffMillis', init.baseBackoffMillis ?? 50);
    this.maxBackoffMillis = nonNegativeInteger('maxBackoffMillis', init.maxBackoffMillis ?? 2_000);
    this.maxAttempts = nonNegativeInteger('maxAttempts', init.maxAttempts ?? 12);
    this.waitMillis = nonNegativeInteger('waitMillis', init.waitMillis ?? 0);
    if (this.baseBackoffMillis < 1) throw new ValidationError('baseBackoffMillis must be ≥ 1');
    if (this.maxBackoffMillis < this.baseBackoffMillis) {
      throw new ValidationError('maxBackoffMillis must be ≥ baseBackoffMillis');
    }
    if (this.maxAttempts < 1) throw new ValidationError('maxAttempts must be ≥ 1');
    if (this.waitMillis > MAX_WAIT_MILLIS) {
      throw new ValidationError(`waitMillis must be ≤ ${MAX_WAIT_MILLIS}, got ${this.waitMillis}`);
    }
    Object.freeze(this);
  }

  /** Accept a policy or a partial init (validated the same way). */
  static from(policy: AcquirePolicy | AcquirePolicyInit | undefined): AcquirePolicy {
    if (policy === undefined) return AcquirePolicy.DEFAULT;
    return policy instanceof AcquirePolicy ? policy : new AcquirePolicy(policy);
  }

  /** A copy with some figures replaced (validated again). */
  with(overrides: AcquirePolicyInit): AcquirePolicy {
    return new AcquirePolicy({ ...this.toJSON(), ...overrides });
  }

  toJSON(): Required<AcquirePolicyInit> {
    return {
      totalBudgetMillis: this.totalBudgetMillis,
      baseBackoffMillis: this.baseBackoffMillis,
      maxBackoffMillis: this.maxBackoffMillis,
      maxAttempts: this.maxAttempts,
      waitMillis: this.waitMillis,
    };
  }
}

function nonNegativeInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new ValidationError(`${name} must be a non-negative integer, got ${String(value)}`);
  }
  return value;
}
