/**
 * How a key is held (SPEC v3 "coordination primitives", issue 23 slice 2): `mode` (exclusive or
 * shared) and `limit` (holders the key admits at once; a semaphore when > 1), checked before
 * anything is sent and sent in L4 only when not the default (a mutex sends what it always sent).
 *
 * The bounds are contract's (`LOCK_LIMIT` in contract/wire-rules.ts); "shared with limit > 1 is
 * refused" is the server's 400 said again here so a caller learns it without a round trip.
 */
import { ValidationError } from './errors.js';
import { LOCK_LIMIT, type LockGrant, type LockMode } from './wire.js';

/** A grant's kind of holding: a mutex is `{ mode: 'exclusive', limit: 1 }`. */
export interface Holding {
  readonly mode: LockMode;
  readonly limit: number;
}

/** A mutex: what an acquire without `mode` or `limit` asks for, and what a server before v3 grants. */
export const MUTEX_HOLDING: Holding = Object.freeze({ mode: 'exclusive', limit: 1 });

/** The holding an acquire asks for, or a ValidationError (nothing is sent). */
export function requestedHolding(options: { mode?: unknown; limit?: unknown }): Holding {
  const { mode = 'exclusive', limit = 1 } = options;
  if (mode !== 'exclusive' && mode !== 'shared') {
    throw new ValidationError(`mode must be "exclusive" or "shared", got ${JSON.stringify(mode)}`);
  }
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < LOCK_LIMIT.min || limit > LOCK_LIMIT.max) {
    throw new ValidationError(`limit must be an integer from ${LOCK_LIMIT.min} to ${LOCK_LIMIT.max}, got ${String(limit)}`);
  }
  if (mode === 'shared' && limit > 1) {
    throw new ValidationError(`a shared lock has no limit (readers are not counted): limit must be 1 with mode "shared", got ${limit}`);
  }
  return limit === 1 && mode === 'exclusive' ? MUTEX_HOLDING : Object.freeze({ mode, limit });
}

/** The L4 fields for a holding: none for a mutex, so a mutex acquire is the same request as before v3. */
export function holdingFields(holding: Holding): { mode?: 'shared'; limit?: number } {
  return {
    ...(holding.mode === 'shared' ? { mode: 'shared' as const } : {}),
    ...(holding.limit === 1 ? {} : { limit: holding.limit }),
  };
}

/** What a grant is (a grant without `mode`/`limit` comes from a server before v3: a mutex). */
export function grantHolding(grant: LockGrant): Holding {
  const mode = grant.mode === 'shared' ? 'shared' : 'exclusive';
  const limit = typeof grant.limit === 'number' && Number.isInteger(grant.limit) && grant.limit >= 1 ? grant.limit : 1;
  return limit === 1 && mode === 'exclusive' ? MUTEX_HOLDING : Object.freeze({ mode, limit });
}

/** Grants of this kind may coexist on a key (a semaphore's permits, shared holders); a mutex's never. */
export function isMultiHolder(holding: Holding): boolean {
  return holding.mode === 'shared' || holding.limit > 1;
}

export function sameHolding(a: Holding, b: Holding): boolean {
  return a.mode === b.mode && a.limit === b.limit;
}

/** "shared", "a semaphore of 3", "a mutex": how an error names a holding. */
export function describeHolding(holding: Holding): string {
  if (holding.mode === 'shared') return 'shared';
  return holding.limit === 1 ? 'a mutex' : `a semaphore of ${holding.limit}`;
}
