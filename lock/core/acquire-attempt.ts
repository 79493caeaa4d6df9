/**
 * What an acquire asks the store for (issue 23: mode and limit), and what a try's refusal means to
 * the caller: one place for both, so the waiting and the non-waiting paths cannot disagree.
 */
import type { LockMode } from '../../contract/records.js';
import { LimitMismatchError, ValidationFailedError } from '../errors.js';
import type { AcquireAttempt, LockStore, SessionCredential, TryAcquireResult } from '../store/spi.js';
import { holdingOf, isMutex } from './grants.js';
import { refused } from './session-refusal.js';

export interface AcquireRequest {
  key: string;
  session: SessionCredential;
  ttlMillis?: number;
  waitMillis: number;
  value?: string;
  mode?: LockMode;
  limit?: number;
}

/** The store attempt for `req` with its TTL decided; a mutex attempt names no mode or limit (the hot path's shape). */
export function attemptOf(req: AcquireRequest, store: Pick<LockStore, 'backend' | 'multiHolder'>, ttlMillis: number): AcquireAttempt {
  const holding = holdingOf(req);
  if (!isMutex(holding) && !store.multiHolder) {
    throw new ValidationFailedError(`the ${store.backend} store grants mutexes only (mode "exclusive", limit 1)`);
  }
  return {
    key: req.key,
    session: req.session,
    ttlMillis,
    ...(req.value !== undefined ? { value: req.value } : {}),
    ...(isMutex(holding) ? {} : holding),
  };
}

/** A try that was neither granted nor held: the session's refusal, or the key's other limit. */
export function refusedAttempt(result: Exclude<TryAcquireResult, { kind: 'granted' } | { kind: 'held' }>, req: AcquireRequest): Error {
  if (result.kind === 'limit_mismatch') return new LimitMismatchError(req.key, holdingOf(req).limit, result.limit);
  return refused(result, req.session.sessionId);
}
