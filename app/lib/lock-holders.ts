/**
 * How the console reads a lock's holders (issue 23, SPEC "v3 — coordination primitives"): every
 * holder with its own token and value, the lock's kind, and whether the key is a leadership.
 * Pure functions of LockInfo, shared by the locks list, the key page and the leaders view.
 */
import type { LockHolder, LockInfo, Page } from './api-types';
import { lockKindOf } from '../../contract/wire-rules';

/** LockInfo as read off the wire: a lock server before v3 sends no `holders` (nor `mode`, `limit`). */
export type LockInfoRead = Omit<LockInfo, 'holders'> & { holders?: LockHolder[] };

export type { LockKind } from '../../contract/wire-rules';

/**
 * The kind of holding (C4's `kind` label values; contract's one rule). A held lock without
 * `mode`/`limit` comes from a server before v3, which had only the mutex.
 */
export const lockKind = (lock: Pick<LockInfoRead, 'mode' | 'limit'>) => lockKindOf(lock);

/**
 * Every holder, lowest token first. A server before v3 sends no `holders`: its single-holder
 * fields are then the one holder.
 */
export function holdersOf(lock: LockInfoRead): LockHolder[] {
  if (lock.holders) return lock.holders;
  if (!lock.held || !lock.sessionId || !lock.fencingToken) return [];
  return [
    {
      sessionId: lock.sessionId,
      owner: lock.owner ?? '',
      fencingToken: lock.fencingToken,
      grantedAt: lock.grantedAt ?? 0,
      expiresAt: lock.expiresAt ?? 0,
    },
  ];
}

/** "1/1", "2/3": holders against the limit; shared holders have no count limit, so only their number. */
export function holdersOfLimit(lock: LockInfoRead): string {
  const count = holdersOf(lock).length;
  return lockKind(lock) === 'shared' ? String(count) : `${count}/${lock.limit ?? 1}`;
}

/** A key's current leader: the holder of a mutex that carries a value (SPEC: campaign = acquire with a value). */
export interface Leadership {
  key: string;
  leader: LockHolder & { value: string };
  /** The leader's fencing token: its term. */
  term: string;
}

/**
 * The leadership a lock stands for, or null. Only a mutex elects one leader; a semaphore's or a
 * reader's value is a holder's note, not a leadership.
 */
export function leadershipOf(lock: LockInfoRead): Leadership | null {
  if (!lock.held || lockKind(lock) !== 'mutex') return null;
  const leader = holdersOf(lock)[0];
  if (!leader || leader.value === undefined) return null;
  return { key: lock.key, leader: { ...leader, value: leader.value }, term: leader.fencingToken };
}

/** /api/leaders' answer: one page of leaderships, paged on A1's cursor. */
export interface LeadersPage extends Page<Leadership> {
  /** Held locks read for this page: how far the search went. */
  scanned: number;
}
