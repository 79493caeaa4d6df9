/**
 * Per-request timeouts for the keep-alive calls (heartbeat L2, renew L5).
 *
 * A heartbeat or renewal that hangs — a stalled connection, a black-holed
 * packet — must not hold its loop until the deadline: the loop gives up on it
 * after `keepAliveTimeoutMillis(ttl)` and sends again (the transport opens a new
 * connection for it), so a healthy server can still save the session or lock.
 *
 * Why a quarter of the TTL: the call goes out a third of the TTL after the last
 * success, leaving two thirds minus the safety margin (≤ a quarter) — at least
 * 5/12 of the TTL — before the conservative deadline. A quarter for the stalled
 * call plus a tenth before the retry (the loops' retry delay) leaves the retry a
 * fifteenth of the TTL even with the largest margin, and far more with the
 * default 1-s margin (e.g. TTL 15 s: sent at 5 s, abandoned at 8.75 s, retried at
 * 10.25 s, deadline 14 s).
 */
import { startTimer, type Clock } from './clock.js';

export function keepAliveTimeoutMillis(ttlMillis: number): number {
  return Math.max(1, Math.floor(ttlMillis / 4));
}

/**
 * Run `op` with a signal that aborts when `parent` aborts or `ms` pass on
 * `clock`. Settles at that moment even if the transport ignores the signal,
 * so a loop awaiting it never waits longer than `ms`.
 */
export function withRequestTimeout<T>(
  clock: Clock,
  ms: number,
  parent: AbortSignal,
  what: string,
  op: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  if (parent.aborted) return Promise.reject(parent.reason);
  return new Promise<T>((resolve, reject) => {
    const onParent = (): void => controller.abort(parent.reason);
    const timer = startTimer(clock, ms, () =>
      controller.abort(new DOMException(`${what} was not answered within ${ms} ms`, 'TimeoutError')),
    );
    const done = (): void => {
      timer.cancel();
      parent.removeEventListener('abort', onParent);
      controller.signal.removeEventListener('abort', onAbort);
    };
    const onAbort = (): void => {
      done();
      reject(controller.signal.reason);
    };
    controller.signal.addEventListener('abort', onAbort, { once: true });
    parent.addEventListener('abort', onParent, { once: true });
    op(controller.signal).then(
      (value) => {
        done();
        resolve(value);
      },
      (error: unknown) => {
        done();
        reject(error);
      },
    );
  });
}
