/** Grants as core answers them (LockGrant: a held lock without its owner). */
import type { LockGrant, LockMode } from '../../contract/records.js';
import type { HeldLock } from '../store/spi.js';

export function toGrant(lock: HeldLock): LockGrant {
  const { owner: _owner, holders: _holders, ...grant } = lock;
  return grant;
}

export { holdingOf } from '../../contract/wire-rules.js';

/** What an acquire asks to hold (contract/wire-rules.ts holdingOf). */
export interface Holding {
  mode: LockMode;
  limit: number;
}

/** A mutex wait is the only kind a release hands a key (FIFO handoff). */
export { isMutex } from '../../contract/wire-rules.js';

/**
 * A grant a release handed this wait carries the wait's own value (stored with it in the releasing
 * statement); the handoff's announcement leaves it out, so the wait fills in what it asked for.
 */
export function handedGrant(lock: HeldLock, value: string | undefined): LockGrant {
  return { ...toGrant(lock), ...(lock.value === undefined && value !== undefined ? { value } : {}) };
}
