/**
 * L8: a long poll on a key's holder set (issue 23). It answers as soon as the set differs from the
 * one whose highest token is `after`, or at the end of its wait with the set unchanged.
 *
 * A watch subscribes to the store's holder feed first and reads second (HolderWatch's rule), so a
 * change landing between its read and its park still wakes it. It also re-reads every
 * RECHECK_MILLIS while parked: a lapse no write has recorded yet (the sweep deletes it soon after)
 * and a store with no holder feed (memory) are seen that way.
 */
import type { FencingToken, LockInfo } from '../../contract/records.js';
import { compareFencingTokens, highestHolderToken } from '../../contract/wire-rules.js';
import type { HolderWatch, HolderWatchSubscription } from '../store/spi.js';
import type { Clock } from './clock.js';

/** How often a parked watch reads its key even when no change was reported. */
export const WATCH_RECHECK_MILLIS = 1_000;

export interface LockWatchesDeps {
  readLock(key: string): Promise<LockInfo>;
  holderWatch: HolderWatch | undefined;
  /** This instance in the fleet registry (SQL keeps watch rows per instance). */
  instanceId: string | undefined;
  clock: Clock;
  recheckMillis?: number;
}

export class LockWatches {
  private readonly recheckMillis: number;

  constructor(private readonly deps: LockWatchesDeps) {
    this.recheckMillis = deps.recheckMillis ?? WATCH_RECHECK_MILLIS;
  }

  /**
   * `after` absent or "0": the state now — unless `untilHeld`, which waits out a free key ("0" is the
   * empty holder set). `signal` ends the wait early (client gone, shutdown): the state then.
   */
  async watch(key: string, after: FencingToken | undefined, waitMillis: number, signal?: AbortSignal, untilHeld = false): Promise<LockInfo> {
    if (after === undefined || (compareFencingTokens(after, '0') === 0 && !untilHeld)) return this.deps.readLock(key);
    const { clock } = this.deps;
    const deadline = clock.now() + waitMillis;
    // A key with several holders can lose one below the highest token: `after` names the set by its
    // highest token, so the set first read here stands for it, and any later difference is a change.
    let parkedOn: string | undefined;
    for (;;) {
      const subscription = await this.subscribe(key);
      try {
        const info = await this.deps.readLock(key);
        const remaining = deadline - clock.now();
        const holderSet = info.holders.map((h) => h.fencingToken).join(',');
        parkedOn ??= holderSet;
        const changed = compareFencingTokens(highestHolderToken(info.holders), after) !== 0 || holderSet !== parkedOn;
        if (changed || remaining <= 0 || signal?.aborted) return info;
        await this.parked(subscription, Math.min(remaining, this.recheckMillis), signal);
      } finally {
        subscription?.stop();
      }
    }
  }

  /** Null when the store has no holder feed or could not promise one now: the recheck covers it. */
  private async subscribe(key: string): Promise<HolderWatchSubscription | null> {
    const { holderWatch, instanceId } = this.deps;
    if (!holderWatch) return null;
    try {
      return await holderWatch.watch({ key, ...(instanceId !== undefined ? { instanceId } : {}) });
    } catch {
      return null;
    }
  }

  /** Until a reported change, the recheck time, or the signal, whichever is first. */
  private async parked(subscription: HolderWatchSubscription | null, millis: number, signal: AbortSignal | undefined): Promise<void> {
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const sleeping = this.deps.clock.sleep(millis, stop.signal).catch(() => {});
    // A fallback answer means "no promise": wait out the recheck interval instead of spinning.
    const changed = subscription ? subscription.changed.then((how) => (how === 'changed' ? undefined : sleeping)) : sleeping;
    try {
      await Promise.race([sleeping, changed]);
    } finally {
      stop.abort();
      signal?.removeEventListener('abort', onAbort);
    }
  }
}
