/**
 * AbortControllers for per-request timeouts, reused while they are as good as new.
 *
 * Every L4 attempt and every release carries a timeout signal, and Node builds
 * an AbortSignal slowly (an EventTarget given a new prototype: ~4–12 µs here,
 * more than the rest of the SDK's own work on a request). A controller that
 * never aborted, whose timer is cancelled and which no listener still holds
 * cannot be told apart from a fresh one, so it goes back to a small free list.
 * One that fired, or that a transport still listens to (fetch keeps its
 * listener until the request is collected), is dropped as before.
 */
import { getEventListeners } from 'node:events';

/** Enough for the requests one process has in flight at a time; the rest are made and dropped. */
const MAX_FREE = 256;

const free: AbortController[] = [];

/** A controller whose signal has not aborted and has no listener. */
export function takeRequestController(): AbortController {
  return free.pop() ?? new AbortController();
}

/**
 * Hand back a controller once the request it went with has settled and its
 * timer is cancelled; only one that is as good as new is kept.
 */
export function returnRequestController(controller: AbortController): void {
  if (free.length >= MAX_FREE || controller.signal.aborted) return;
  if (getEventListeners(controller.signal, 'abort').length > 0) return;
  free.push(controller);
}
