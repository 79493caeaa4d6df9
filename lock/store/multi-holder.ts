/**
 * The multi-holder rules (spi.ts "Multi-holder keys") as pure functions of a key's live grants, for
 * stores that decide in TypeScript (memory); the SQL store states the same rules in its statements.
 */
import type { LockMode } from '../../contract/records.js';
import type { HeldLock, TryAcquireResult } from './spi.js';

/**
 * Whether an attempt of another session is admitted beside `live` (the key's live grants, lowest
 * token first); `exclusiveWaitOfAnother`: writer preference (while the key is held, a recorded
 * exclusive wait keeps new shared grants out).
 */
export function admission(
  live: readonly HeldLock[],
  asked: { mode: LockMode; limit: number },
  exclusiveWaitOfAnother = false,
): { kind: 'admitted' } | Extract<TryAcquireResult, { kind: 'held' } | { kind: 'limit_mismatch' }> {
  const lowest = live[0];
  if (!lowest) return { kind: 'admitted' };
  if (lowest.limit !== asked.limit) return { kind: 'limit_mismatch', limit: lowest.limit, holder: { ...lowest } };
  const admitted =
    asked.mode === 'shared'
      ? live.every((l) => l.mode === 'shared') && !exclusiveWaitOfAnother
      : live.length < asked.limit && live.every((l) => l.mode === asked.mode);
  return admitted ? { kind: 'admitted' } : { kind: 'held', holder: { ...lowest } };
}

/** A key as reads describe it: its lowest-token grant, with every holder when it admits more than one. */
export function describeKey(live: readonly HeldLock[]): HeldLock | null {
  const lowest = live[0];
  if (!lowest) return null;
  const many = lowest.limit > 1 || lowest.mode === 'shared';
  return { ...lowest, ...(many ? { holders: live.map((l) => ({ ...l })) } : {}) };
}
