/** Core's seam for time and chance: tests inject fakes, production uses the system. */
export interface Clock {
  /** Wall-clock epoch milliseconds (stored instants). */
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason once aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export type RandomSource = () => number;

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};
