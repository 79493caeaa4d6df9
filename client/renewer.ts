/**
 * Background renewal of one held lock while withLock's `fn` runs (and while a
 * campaign's leadership lasts): L5 every third of the lock's TTL, through the
 * Clock — sooner when the deadline is nearer than that (half the time left).
 *
 * - Success moves the conservative deadline (send time + TTL − margin).
 * - LOCK_LOST (revoked, or expired before we renewed) marks the handle lost
 *   at once, which aborts its signal; so does HOLD_LIMIT_REACHED (the grant is older than its
 *   policy's maxHoldMillis: it is never renewed again and ends at its TTL), with that reason.
 * - SESSION_NOT_FOUND or UNAUTHENTICATED (the session's token refused) loses
 *   the whole session.
 * - NOT_LEADER, 5xx or no answer: retry sooner; if renewals keep failing the
 *   handle's own deadline watchdog marks it lost before the server frees it.
 * - A renewal unanswered for a quarter of the lock's TTL (at most half the time
 *   left to its deadline) is abandoned and sent again at once (request-timeout.ts),
 *   so one stalled request cannot cost the lock.
 */
import type { LockApi } from './api.js';
import type { Clock } from './clock.js';
import { HoldLimitReachedError, LockLostError, type SessionLossCause } from './errors.js';
import type { HeldLock } from './handle.js';
import { isRequestTimeout, keepAliveTimeoutMillis, withRequestTimeout } from './request-timeout.js';
import { conservativeDeadline } from './runtime.js';

export interface RenewerOptions {
  api: LockApi;
  clock: Clock;
  sessionId: string;
  sessionToken: string;
  lock: HeldLock;
  safetyMarginMillis: number;
  /** The server refused the session itself: lose it (every handle with it). */
  onSessionRefused(cause: Extract<SessionLossCause, 'not_found' | 'unauthenticated'>): void;
}

/** Start renewing; returns the function that stops it. */
export function startRenewer(options: RenewerOptions): () => void {
  const stopper = new AbortController();
  void renewLoop(options, stopper.signal);
  return () => stopper.abort();
}

export function renewIntervalMillis(ttlMillis: number): number {
  return Math.max(1, Math.floor(ttlMillis / 3));
}

async function renewLoop(options: RenewerOptions, stopped: AbortSignal): Promise<void> {
  const { api, clock, sessionId, sessionToken, lock, safetyMarginMillis } = options;
  const interval = renewIntervalMillis(lock.ttlMillis);
  const retry = Math.max(1, Math.min(interval, Math.floor(lock.ttlMillis / 10)));
  let delay = interval;
  while (!stopped.aborted && !lock.lost && !lock.released) {
    // The regular cadence never sleeps past half the time left to the deadline: a grant answered
    // after a long server-side wait is vouched for from its L4's send time, so its deadline can be
    // nearer than one interval, and the watchdog would lose it before its first renewal.
    // (Retries keep their own delay: the deadline they race is the watchdog's to call.)
    if (delay === interval) delay = Math.min(interval, Math.max(1, Math.floor((lock.expiresAt - clock.now()) / 2)));
    try {
      await clock.sleep(delay, stopped);
    } catch {
      return;
    }
    const sentAt = clock.now();
    let answer;
    try {
      const timeout = keepAliveTimeoutMillis(lock.ttlMillis, lock.expiresAt - sentAt);
      answer = await withRequestTimeout(clock, timeout, stopped, 'the renewal', (signal) =>
        api.renew(lock.key, { sessionId, fencingToken: lock.fencingToken, ttlMillis: lock.ttlMillis }, sessionToken, signal),
      );
    } catch (error) {
      if (stopped.aborted) return;
      // Abandoned after its timeout: send again now (a new connection); failed fast: soon.
      delay = isRequestTimeout(error) ? 0 : retry;
      continue;
    }
    if (stopped.aborted) return;
    if (answer.ok) {
      if (answer.value.fencingToken !== lock.fencingToken) {
        // The contract says renew keeps the token; anything else means our grant is gone.
        lock.markLost(new LockLostError(lock.key, lock.fencingToken, 'renewal answered a different token'));
        return;
      }
      lock.extend(conservativeDeadline(sentAt, lock.ttlMillis, safetyMarginMillis));
      delay = interval;
    } else if (answer.code === 'LOCK_LOST') {
      lock.markLost(new LockLostError(lock.key, lock.fencingToken, 'the server refused the renewal (revoked or expired)'));
      return;
    } else if (answer.code === 'HOLD_LIMIT_REACHED') {
      // Not retried: a later renewal is refused the same way; stop vouching now, not at the TTL.
      lock.markLost(new HoldLimitReachedError(lock.key, lock.fencingToken, answer.message, answer.requestId));
      return;
    } else if (answer.code === 'SESSION_NOT_FOUND') {
      options.onSessionRefused('not_found');
      return;
    } else if (answer.code === 'UNAUTHENTICATED') {
      options.onSessionRefused('unauthenticated');
      return;
    } else {
      delay = retry;
    }
  }
}
