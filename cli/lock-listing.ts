/**
 * `locks ls` filters and orders that A1 does not offer, applied to every page
 * the server returned. Ages are measured against this machine's clock (the
 * server's `grantedAt` is its store's epoch milliseconds): a skewed clock shifts
 * `--older-than` by the skew.
 */
import type { LockInfo } from '../contract/records.js';

export const LOCK_SORTS = ['age', 'waiters', 'key'] as const;
export type LockSort = (typeof LOCK_SORTS)[number];

export interface LockFilter {
  owner?: string;
  sessionId?: string;
  /** Held at least this long. */
  olderThanMillis?: number;
}

export function filterLocks(locks: readonly LockInfo[], filter: LockFilter, now: number): LockInfo[] {
  return locks.filter(
    (lock) =>
      (filter.owner === undefined || lock.owner === filter.owner) &&
      (filter.sessionId === undefined || lock.sessionId === filter.sessionId) &&
      (filter.olderThanMillis === undefined || (lock.grantedAt !== undefined && now - lock.grantedAt >= filter.olderThanMillis)),
  );
}

/** age: oldest grant first; waiters: most waiters first (then oldest); key: by key. */
export function sortLocks(locks: readonly LockInfo[], sort: LockSort): LockInfo[] {
  const byKey = (a: LockInfo, b: LockInfo) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  const byAge = (a: LockInfo, b: LockInfo) => (a.grantedAt ?? Infinity) - (b.grantedAt ?? Infinity) || byKey(a, b);
  const order = { key: byKey, age: byAge, waiters: (a: LockInfo, b: LockInfo) => b.waiterCount - a.waiterCount || byAge(a, b) }[sort];
  return [...locks].sort(order);
}
