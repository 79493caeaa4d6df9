/**
 * How a waiting acquire parks until it should try again, chosen once when the service is
 * wired, from what the store offers (never per call):
 * - `releaseWaiter` (etcd): a revision-addressed watch; if it fails, this wait polls instead.
 * - `releaseFeed` (SQL): parked until a release of the key reaches this instance, re-checking
 *   now and then; while the feed is down (re-listening), waits poll.
 * - neither: polling with full-jitter backoff.
 * Every park is cut short by a release this instance makes itself (the waiter registry).
 */
import type { WaitOutcome } from '../../contract/metric-table.js';
import type { LockStore, ReleaseFeed, ReleaseWaiter } from '../store/spi.js';
import type { Clock, RandomSource } from './clock.js';
import type { Waiter, WaiterRegistry } from './waiters.js';

/** A floor under every poll delay so a jittered draw near zero cannot become a busy loop. */
const POLL_FLOOR_MILLIS = 10;
/** Ends a park's own timer and listener; one reason for all, so no DOMException (and stack) per park. */
const WAIT_SETTLED = new Error('wait settled');

export interface Park {
  waiter: Waiter;
  /** The waiter's releasesSeen, read before the try that failed. */
  releasesSeen: number;
  /** From the failed try, when the store reports one (etcd's header revision). */
  observedRevision?: string;
  /** Polls this wait has made so far (the backoff's step); the poller counts each poll it makes. */
  polls: { count: number };
  /** When the wait's budget ends (clock epoch ms); what remains is read when each mechanism starts. */
  deadline: number;
  signal: AbortSignal;
  /** This wait already fell back to polling: it keeps polling. */
  fellBack: boolean;
}

export interface ParkResult {
  outcome: WaitOutcome;
  /** Set when the wait fell back to polling during this park, with why. */
  fellBackBecause?: string;
}

export interface WaitStrategy {
  /**
   * After recording a wait in the fleet state, try once more before parking: a release feed only
   * announces keys with recorded waits, so a release between the failed try and the record would
   * announce nothing. A revision-addressed watch waits from the failed try's revision: no retry.
   */
  readonly retryAfterRecord: boolean;
  park(park: Park): Promise<ParkResult>;
  start(): Promise<void>;
  stop(): void;
  /** False while the release feed is down (waits poll) or when there is none. */
  readonly feedUp: boolean;
}

export interface PollOptions {
  clock: Clock;
  random: RandomSource;
  /** First delay cap and the ceiling. */
  baseMillis: number;
  maxMillis: number;
}

/** Full-jitter delay with a floor, cut short by a release this instance sees, the deadline, or an abort. */
export class Poller {
  constructor(private readonly options: PollOptions) {}

  remaining(deadline: number): number {
    return deadline - this.options.clock.now();
  }

  async delay(park: Pick<Park, 'waiter' | 'releasesSeen' | 'polls' | 'deadline' | 'signal'>): Promise<WaitOutcome> {
    const { waiter, releasesSeen, signal } = park;
    const remaining = this.remaining(park.deadline);
    if (remaining <= 0) return 'deadline';
    const polls = park.polls.count++;
    const cap = Math.min(this.options.maxMillis, this.options.baseMillis * 2 ** Math.min(polls, 20));
    const delay = Math.min(remaining, POLL_FLOOR_MILLIS + Math.floor(this.options.random() * (cap + 1)));
    const released = await parkedUntil(this.options.clock, waiter, releasesSeen, delay, signal);
    if (signal.aborted) return 'aborted';
    return released || delay < remaining ? 'released' : 'deadline';
  }
}

/** Sleeps `delay` or until a local release after `releasesSeen`; true when the release came first. */
async function parkedUntil(clock: Clock, waiter: Waiter, releasesSeen: number, delay: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false;
  // The wait's signal is forwarded by hand rather than joined with AbortSignal.any, which on
  // Node 20 keeps a registration per park alive until GC (a hot key parks hundreds a second).
  const settled = new AbortController();
  const forward = (): void => settled.abort(signal.reason);
  signal.addEventListener('abort', forward, { once: true });
  let released = false;
  try {
    await Promise.race([
      clock.sleep(delay, settled.signal),
      waiter.releasedSince(releasesSeen, settled.signal).then(() => {
        released = !settled.signal.aborted;
      }),
    ]);
  } catch {
    // sleep rejects only on abort
  } finally {
    signal.removeEventListener('abort', forward);
    settled.abort(WAIT_SETTLED);
  }
  return released;
}

class PollingWait implements WaitStrategy {
  readonly retryAfterRecord = true;
  readonly feedUp = false;
  constructor(private readonly poller: Poller) {}
  async park(park: Park): Promise<ParkResult> {
    return { outcome: await this.poller.delay(park) };
  }
  async start(): Promise<void> {}
  stop(): void {}
}

class ReleaseWatchWait implements WaitStrategy {
  readonly retryAfterRecord = false;
  readonly feedUp = false;
  constructor(
    private readonly watch: ReleaseWaiter,
    private readonly poller: Poller,
  ) {}

  async park(park: Park): Promise<ParkResult> {
    if (park.fellBack) return { outcome: await this.poller.delay(park) };
    const wait = await this.watch.waitForRelease({
      key: park.waiter.key,
      sessionId: park.waiter.sessionId,
      ...(park.observedRevision !== undefined ? { observedRevision: park.observedRevision } : {}),
      timeoutMillis: this.poller.remaining(park.deadline),
      signal: park.signal,
    });
    if (wait.outcome !== 'fallback') return { outcome: wait.outcome };
    // The watch failed (error, compaction): this wait polls for the rest of its budget.
    return { outcome: await this.poller.delay(park), fellBackBecause: wait.cause };
  }
  async start(): Promise<void> {}
  stop(): void {}
}

/** A conservative default: a notification is lost only in a narrow race (see ReleaseFeed in spi.ts). */
export const FEED_RECHECK_MILLIS = 1000;

class ReleaseFeedWait implements WaitStrategy {
  readonly retryAfterRecord = true;
  private up = false;
  private downCause = 'release feed not started';
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly feed: ReleaseFeed,
    private readonly poller: Poller,
    private readonly waiters: WaiterRegistry,
    private readonly clock: Clock,
    private readonly recheckMillis: number,
  ) {}

  get feedUp(): boolean {
    return this.up;
  }

  async start(): Promise<void> {
    this.unsubscribe = await this.feed.subscribeReleases({
      released: (keys) => {
        for (const key of keys) this.waiters.keyReleased(key);
      },
      handedOff: (grants) => {
        for (const grant of grants) this.waiters.handedOff(grant);
      },
      health: (up, cause) => {
        this.up = up;
        if (!up) this.downCause = cause;
        // Down: parked waits switch to polling now. Up again: releases in between were missed.
        this.waiters.wakeAll();
      },
    });
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.up = false;
  }

  async park(park: Park): Promise<ParkResult> {
    if (!this.up) {
      // The feed is down (re-listening): this wait polls, counted apart.
      const outcome = await this.poller.delay(park);
      return park.fellBack ? { outcome } : { outcome, fellBackBecause: this.downCause };
    }
    const remaining = this.poller.remaining(park.deadline);
    if (remaining <= 0) return { outcome: 'deadline' };
    // Re-checks now and then in case a notification was missed.
    const delay = Math.min(remaining, this.recheckMillis);
    const released = await parkedUntil(this.clock, park.waiter, park.releasesSeen, delay, park.signal);
    if (park.signal.aborted) return { outcome: 'aborted' };
    return { outcome: released || delay < remaining ? 'released' : 'deadline' };
  }
}

export function chooseWaitStrategy(
  store: LockStore,
  poller: Poller,
  waiters: WaiterRegistry,
  clock: Clock,
  feedRecheckMillis = FEED_RECHECK_MILLIS,
): WaitStrategy {
  if (store.releaseWaiter) return new ReleaseWatchWait(store.releaseWaiter, poller);
  if (store.releaseFeed) return new ReleaseFeedWait(store.releaseFeed, poller, waiters, clock, feedRecheckMillis);
  return new PollingWait(poller);
}
