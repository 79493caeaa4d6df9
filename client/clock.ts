/**
 * The SDK's only source of time. Every sleep, heartbeat, renewal and deadline
 * goes through a Clock so tests and the seeded simulation can drive time by
 * hand, and so deadlines are measured on a monotonic timebase: a wall clock
 * that steps backwards (NTP, VM resume) must never extend a lock we believe
 * we hold.
 */
export interface Clock {
  /** Monotonic milliseconds from an arbitrary origin. Never decreases. */
  now(): number;
  /**
   * Resolve after `ms` milliseconds of this clock. Rejects with
   * `signal.reason` when the signal aborts first (or is already aborted).
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The process clock: `performance.now()` and real timers. */
export const systemClock: Clock = {
  now: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, Math.max(0, ms));
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/** A scheduled callback that can be cancelled; built on Clock.sleep. */
export interface Timer {
  cancel(): void;
}

/**
 * Run `fn` after `ms` on `clock` unless cancelled first. Used for deadline
 * watchdogs, which must fire even while a request is hanging.
 */
export function startTimer(clock: Clock, ms: number, fn: () => void): Timer {
  // Every request and every hold arms one: on the real clock a bare timer does the same job
  // without the AbortController, promise and listener that Clock.sleep needs.
  if (clock === systemClock) return new SystemTimer(setTimeout(fn, Math.max(0, ms)));
  const controller = new AbortController();
  clock.sleep(ms, controller.signal).then(
    () => {
      if (!controller.signal.aborted) fn();
    },
    () => {
      /* cancelled */
    },
  );
  return { cancel: () => controller.abort() };
}

class SystemTimer implements Timer {
  constructor(private readonly handle: ReturnType<typeof setTimeout>) {}

  cancel(): void {
    clearTimeout(this.handle);
  }
}
