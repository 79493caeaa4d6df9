/**
 * Per-request timeouts for the keep-alive calls (heartbeat L2, renew L5).
 *
 * A heartbeat or renewal that hangs — a stalled connection, a black-holed
 * packet — must not hold its loop until the deadline: the loop gives up on it
 * and sends again at once (the transport opens a new connection for it), so a
 * healthy server can still save the session or lock.
 *
 * The timeout is ⌊TTL/4⌋, but never more than half the time left before the
 * conservative deadline: whatever the first attempt costs, the retry still gets
 * the other half. (The call normally goes out a third of the TTL after the last
 * success, so with the default 1-s margin and TTL 15 s: sent at 5 s, abandoned
 * at 8.75 s, sent again at once, 5 s before the deadline.)
 */
import { startTimer, type Clock } from './clock.js';

export function keepAliveTimeoutMillis(ttlMillis: number, millisToDeadline: number): number {
  return Math.max(1, Math.min(Math.floor(ttlMillis / 4), Math.floor(millisToDeadline / 2)));
}

/** True for the rejection withRequestTimeout gives when its own timer fired. */
export function isRequestTimeout(error: unknown): boolean {
  return error instanceof DOMException && error.name === 'TimeoutError';
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
