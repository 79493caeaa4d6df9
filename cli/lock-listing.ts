/**
 * `locks ls` filters and orders that A1 does not offer, applied to every page
 * the server returned. Ages are measured against this machine's clock (the
 * server's `grantedAt` is its store's epoch milliseconds): a skewed clock shifts
 * `--older-than` by the skew.
 */
import type { LockHolder, LockInfo } from '../contract/records.js';
import { lockKindOf } from '../contract/wire-rules.js';

/** Every holder, lowest token first; a server before v3 sends no `holders`: its single-holder fields are the one. */
export function holdersOf(lock: LockInfo): LockHolder[] {
  if (lock.holders !== undefined) return lock.holders;
  if (!lock.held || lock.sessionId === undefined || lock.fencingToken === undefined) return [];
  return [{ sessionId: lock.sessionId, owner: lock.owner ?? '', fencingToken: lock.fencingToken, grantedAt: lock.grantedAt ?? 0, expiresAt: lock.expiresAt ?? 0 }];
}

/** Holders against the limit, "2/3" (a mutex "1/1"); shared holders are not counted against one: "4". */
export function holdersOfLimit(lock: LockInfo): string {
  const count = holdersOf(lock).length;
  return lockKindOf(lock) === 'shared' ? String(count) : `${count}/${lock.limit ?? 1}`;
}

export const LOCK_SORTS = ['age', 'waiters', 'key'] as const;
export type LockSort = (typeof LOCK_SORTS)[number];

export interface LockFilter {
  owner?: string;
  sessionId?: string;
  /** Held at least this long. */
  olderThanMillis?: number;
}

/**
 * A key matches when one of its holders does (a semaphore's or shared key's holder need not be the
 * lowest-token one the single-holder fields show); `olderThan` reads the oldest grant, the lowest token's.
 */
export function filterLocks(locks: readonly LockInfo[], filter: LockFilter, now: number): LockInfo[] {
  return locks.filter(
    (lock) =>
      (filter.owner === undefined || holdersOf(lock).some((h) => h.owner === filter.owner)) &&
      (filter.sessionId === undefined || holdersOf(lock).some((h) => h.sessionId === filter.sessionId)) &&
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
