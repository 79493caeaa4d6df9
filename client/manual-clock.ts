/**
 * A Clock driven by hand, for tests and seeded simulations: time moves only
 * when `advance`, `advanceTo` or `runUntilSettled` moves it, and timers due at
 * the same instant fire in the order they were set. Between two timers every
 * pending promise callback runs, so the async work a timer wakes (a retry, a
 * heartbeat answer) happens "at" that instant.
 */
import type { Clock } from './clock.js';

interface PendingSleep {
  at: number;
  seq: number;
  resolve: () => void;
  cancelled: boolean;
}

export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  readonly #heap: PendingSleep[] = [];

  constructor(startMillis = 0) {
    this.#now = startMillis;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const entry: PendingSleep = {
        at: this.#now + Math.max(0, ms),
        seq: this.#seq++,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        cancelled: false,
      };
      const onAbort = (): void => {
        entry.cancelled = true;
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#push(entry);
    });
  }

  /** Sleeps not yet fired or cancelled. */
  get pendingTimers(): number {
    return this.#heap.filter((e) => !e.cancelled).length;
  }

  /** When the next live timer fires, or undefined if none. */
  nextTimerAt(): number | undefined {
    this.#dropCancelled();
    return this.#heap[0]?.at;
  }

  async advance(ms: number): Promise<void> {
    await this.advanceTo(this.#now + ms);
  }

  /** Fire every timer due up to `target` in order, then stand at `target`. */
  async advanceTo(target: number): Promise<void> {
    for (;;) {
      await ManualClock.flush();
      const next = this.nextTimerAt();
      if (next === undefined || next > target) break;
      this.#fireNext();
    }
    this.#now = Math.max(this.#now, target);
    await ManualClock.flush();
  }

  /**
   * Jump from timer to timer until `promise` settles, then return its result.
   * `onStep` runs after each instant's work has settled (for invariant checks).
   * Throws if it is still pending with no timer left, or after `maxMillis` of
   * clock time.
   */
  async runUntilSettled<T>(
    promise: Promise<T>,
    options: { maxMillis?: number; onStep?: () => void } = {},
  ): Promise<T> {
    const maxMillis = options.maxMillis ?? 24 * 3_600_000;
    let settled = false;
    promise.then(
      () => (settled = true),
      () => (settled = true),
    );
    const start = this.#now;
    for (;;) {
      await ManualClock.flush();
      options.onStep?.();
      if (settled) return promise;
      const next = this.nextTimerAt();
      if (next === undefined) throw new Error('ManualClock: promise still pending and no timer left');
      if (next - start > maxMillis) throw new Error(`ManualClock: promise still pending after ${maxMillis} ms`);
      this.#fireNext();
    }
  }

  /** Let every queued promise callback run (one macrotask turn drains the microtask queue). */
  static flush(): Promise<void> {
    return new Promise((resolve) => setImmediate(resolve));
  }

  #fireNext(): void {
    this.#dropCancelled();
    const entry = this.#pop();
    if (entry === undefined) return;
    this.#now = Math.max(this.#now, entry.at);
    entry.resolve();
  }

  #dropCancelled(): void {
    while (this.#heap.length > 0 && this.#heap[0]!.cancelled) this.#pop();
  }

  #less(a: PendingSleep, b: PendingSleep): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  #push(entry: PendingSleep): void {
    const heap = this.#heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  #pop(): PendingSleep | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last !== undefined) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let smallest = i;
        if (l < heap.length && this.#less(heap[l]!, heap[smallest]!)) smallest = l;
        if (r < heap.length && this.#less(heap[r]!, heap[smallest]!)) smallest = r;
        if (smallest === i) break;
        [heap[i], heap[smallest]] = [heap[smallest]!, heap[i]!];
        i = smallest;
      }
    }
    return top;
  }
}
