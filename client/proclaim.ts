/**
 * `handle.proclaim(value)` (v3): L5 with `value` — the grant's value is
 * replaced, the token stays, and the lock is renewed. So its answers are read
 * as the background renewer reads them (renewer.ts), and it throws what the
 * caller has to know:
 *
 * - 200 with the same token: the value is set and the conservative deadline
 *   moves from the send time of the attempt that was answered.
 * - LOCK_LOST / HOLD_LIMIT_REACHED / another token: the handle is lost (its
 *   signal aborts) and that LockLostError is thrown.
 * - SESSION_NOT_FOUND / UNAUTHENTICATED: the session is lost; SessionLostError.
 * - NOT_LEADER or no answer: retried within the short budget, never past the
 *   handle's own deadline; then NotLeaderError / TransportError, and the handle
 *   is as before (its watchdog still decides when to stop vouching).
 * - 400 (a value over the server's limit) and anything else: thrown as is.
 */
import { failureToError, type LockApi } from './api.js';
import type { Clock } from './clock.js';
import { HoldLimitReachedError, LockLostError, SessionLostError, ValidationError, type SessionLossCause } from './errors.js';
import type { HeldLock } from './handle.js';
import type { RandomSource } from './random.js';
import { conservativeDeadline } from './runtime.js';
import { retryTransient, SHORT_BUDGET } from './transient.js';
import { validateValue } from './values.js';

export interface ProclaimContext {
  api: LockApi;
  clock: Clock;
  random: RandomSource;
  sessionId: string;
  sessionToken: string;
  safetyMarginMillis: number;
  /** Throws SessionLostError when the session is lost or closed. */
  assertUsable(): void;
  /** The server refused the session itself: lose it (every handle with it). */
  onSessionRefused(cause: Extract<SessionLossCause, 'not_found' | 'unauthenticated'>): void;
}

export async function sendProclaim(context: ProclaimContext, lock: HeldLock, rawValue: string): Promise<void> {
  const value = validateValue(rawValue);
  context.assertUsable();
  if (lock.lost) throw lock.lossError ?? new LockLostError(lock.key, lock.fencingToken, 'its handle is lost');
  if (lock.released) throw new ValidationError(`lock ${JSON.stringify(lock.key)} was released: there is nothing to proclaim on`);
  const { api, clock, random, sessionId, sessionToken } = context;
  // A retry past the handle's deadline could not vouch for anything: stop there.
  const budget = { ...SHORT_BUDGET, totalMillis: Math.max(1, Math.min(SHORT_BUDGET.totalMillis, lock.expiresAt - clock.now())) };
  let sentAt = clock.now();
  const answer = await retryTransient(clock, random, budget, 'the proclaim', (timeout) => {
    sentAt = clock.now();
    return api.renew(lock.key, { sessionId, fencingToken: lock.fencingToken, ttlMillis: lock.ttlMillis, value }, sessionToken, timeout);
  });
  if (answer.ok) {
    if (answer.value.fencingToken !== lock.fencingToken) {
      const lost = new LockLostError(lock.key, lock.fencingToken, 'the proclaim was answered with a different token');
      lock.markLost(lost);
      throw lost;
    }
    lock.extend(conservativeDeadline(sentAt, lock.ttlMillis, context.safetyMarginMillis));
    if (!lock.lost && !lock.released) lock.value = answer.value.value ?? value;
    return;
  }
  switch (answer.code) {
    case 'LOCK_LOST': {
      const lost = new LockLostError(lock.key, lock.fencingToken, 'the server refused the proclaim (revoked or expired)');
      lock.markLost(lost);
      throw lock.lossError ?? lost;
    }
    case 'HOLD_LIMIT_REACHED': {
      const lost = new HoldLimitReachedError(lock.key, lock.fencingToken, answer.message, answer.requestId);
      lock.markLost(lost);
      throw lock.lossError ?? lost;
    }
    case 'SESSION_NOT_FOUND':
      context.onSessionRefused('not_found');
      throw new SessionLostError(sessionId, 'not_found');
    case 'UNAUTHENTICATED':
      context.onSessionRefused('unauthenticated');
      throw new SessionLostError(sessionId, 'unauthenticated');
    default:
      throw failureToError(answer);
  }
}
