/**
 * `client.observe(name)` (v3): the current leader of an election key as an
 * async iterator — `{owner, value, term} | null` (free), one item per change —
 * built on L8 long polls.
 *
 * - The first poll asks for the state now (no `after`); every later one names
 *   the highest token of the last state seen (`after`), so the server answers
 *   as soon as the holder set differs from it — however long ago it changed.
 *   That is why nothing is missed across a gap: a dropped connection, a 5xx,
 *   NOT_LEADER (every endpoint tried, client/endpoints.ts) or an unanswered poll
 *   (abandoned `requestTimeoutMillis` after its server wait) is retried after
 *   the SDK's full-jitter backoff with the same `after`.
 * - An item is yielded when the leader's term or value differs from the last
 *   item. A proclaim keeps the token, so it does not wake a poll (C3 L8): a new
 *   value shows with the next answer, at the latest `waitMillis` later.
 * - An answer older than one already seen (a token below the last) is not
 *   yielded: items come in term order.
 * - A free key seen last is waited out with L8's `untilHeld` extension (as
 *   pinned, `after=0` answers at once); an answer that still comes back early
 *   with nothing new is followed by a backoff delay before the next poll, so
 *   nothing spins.
 * - Polls are made only while the consumer waits in `next()`. It ends (done)
 *   when `signal` aborts or the consumer returns (a `break` out of `for await`),
 *   aborting a poll in flight; a 4xx it cannot retry (400, 401, 403) is thrown
 *   from `next()` and ends it.
 */
import { failureToError, type ApiResult, type LockApi } from './api.js';
import { Backoff } from './backoff.js';
import { startTimer, type Clock } from './clock.js';
import { HoldfastClientError, ValidationError } from './errors.js';
import type { ClientLogger } from './logger.js';
import type { RandomSource } from './random.js';
import { TRANSIENT_FLOOR_MILLIS } from './runtime.js';
import { highestToken, leaderOf, sameLeader, type Leader } from './values.js';
import { compareFencingTokens, WATCH_MILLIS, type FencingToken, type LockInfo } from './wire.js';

export interface ObserveOptions {
  /** Aborting ends the iteration (done), a poll in flight with it. */
  signal?: AbortSignal;
  /** How long one L8 poll waits on the server, 1 ms to WATCH_MILLIS.max (60 s). Default 20,000 (below common idle timeouts). */
  waitMillis?: number;
}

export interface ObserveRuntime {
  api: LockApi;
  clock: Clock;
  random: RandomSource;
  logger: ClientLogger;
  /** How long a poll may go unanswered beyond its server wait before it is abandoned and sent again. */
  requestTimeoutMillis: number;
}

export const DEFAULT_OBSERVE_WAIT_MILLIS = 20_000;
/** The longest pause between polls: after failures, or between polls of a free key. */
const MAX_POLL_PAUSE_MILLIS = 1_000;

type Poll = { kind: 'answer'; info: LockInfo; early: boolean } | { kind: 'retry' } | { kind: 'stopped' };

export class LeaderObserver implements AsyncIterableIterator<Leader | null> {
  readonly key: string;
  readonly #rt: ObserveRuntime;
  readonly #waitMillis: number;
  readonly #stop = new AbortController();
  readonly #backoff: Backoff;
  /** The highest token of the last state seen; undefined before the first answer. */
  #after: FencingToken | undefined;
  /** The last item yielded; undefined before the first. */
  #last: Leader | null | undefined;
  #pauses = 0;
  /** The `next()` before this one: calls run one after another. */
  #pending: Promise<unknown> = Promise.resolve();

  /** @internal Use LockClient.observe. */
  constructor(rt: ObserveRuntime, key: string, options: ObserveOptions = {}) {
    this.#rt = rt;
    this.key = key;
    const wait = options.waitMillis ?? DEFAULT_OBSERVE_WAIT_MILLIS;
    if (!Number.isSafeInteger(wait) || wait < 1 || wait > WATCH_MILLIS.max) {
      throw new ValidationError(`observe waitMillis must be an integer 1..${WATCH_MILLIS.max}, got ${String(wait)}`);
    }
    this.#waitMillis = wait;
    this.#backoff = new Backoff(TRANSIENT_FLOOR_MILLIS, MAX_POLL_PAUSE_MILLIS, rt.random);
    const outer = options.signal;
    if (outer?.aborted) this.#stop.abort(outer.reason);
    else outer?.addEventListener('abort', () => this.#stop.abort(outer.reason), { once: true, signal: this.#stop.signal });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<Leader | null, undefined>> {
    const result = this.#pending.then(() => this.#nextChange());
    this.#pending = result.catch(() => {});
    return result;
  }

  /** End the iteration now (what `break` in `for await` calls); a poll in flight is aborted. */
  async return(): Promise<IteratorResult<Leader | null, undefined>> {
    this.#stop.abort(new DOMException('observe ended', 'AbortError'));
    return { done: true, value: undefined };
  }

  async #nextChange(): Promise<IteratorResult<Leader | null, undefined>> {
    while (!this.#stop.signal.aborted) {
      const poll = await this.#poll();
      if (poll.kind === 'stopped') break;
      if (poll.kind === 'retry') {
        if (!(await this.#pause())) break;
        continue;
      }
      const { info, early } = poll;
      const highest = highestToken(info);
      // A state older than one already seen (a lagging read): not an item, not a new `after`.
      const stale = this.#after !== undefined && highest !== '0' && compareFencingTokens(highest, this.#after) < 0;
      const leader = leaderOf(info);
      if (stale || (this.#last !== undefined && sameLeader(this.#last, leader))) {
        if (!stale) this.#after = highest;
        // Answered early with nothing new (a free key: L8 cannot park on it): pause, or this would spin.
        if (early && !(await this.#pause())) break;
        if (!early) this.#pauses = 0;
        continue;
      }
      this.#after = highest;
      this.#last = leader;
      this.#pauses = 0;
      return { done: false, value: leader };
    }
    return { done: true, value: undefined };
  }

  /** One L8 poll; `early`: answered well before its server wait was up. */
  async #poll(): Promise<Poll> {
    const { api, clock, logger, requestTimeoutMillis } = this.#rt;
    const wait = this.#after === undefined ? 0 : this.#waitMillis;
    const request = new AbortController();
    const onStop = (): void => request.abort(this.#stop.signal.reason);
    this.#stop.signal.addEventListener('abort', onStop, { once: true });
    const timer = startTimer(clock, wait + requestTimeoutMillis, () =>
      request.abort(new DOMException(`the watch of ${this.key} was not answered in time`, 'TimeoutError')),
    );
    const sentAt = clock.now();
    let answer: ApiResult<LockInfo>;
    try {
      answer = await api.watchLock(this.key, this.#after, wait, request.signal);
    } catch (error) {
      if (this.#stop.signal.aborted) return { kind: 'stopped' };
      if (error instanceof HoldfastClientError) throw error; // a malformed 200: not something a retry mends
      logger.debug({ key: this.key, err: error }, 'watch poll unanswered; polling again');
      return { kind: 'retry' };
    } finally {
      timer.cancel();
      this.#stop.signal.removeEventListener('abort', onStop);
    }
    if (this.#stop.signal.aborted) return { kind: 'stopped' };
    if (answer.ok) return { kind: 'answer', info: answer.value, early: clock.now() - sentAt < wait / 2 };
    if (answer.code === 'NOT_LEADER' || answer.status >= 500 || answer.status === 429) {
      logger.debug({ key: this.key, code: answer.code, status: answer.status }, 'watch poll refused for now; polling again');
      return { kind: 'retry' };
    }
    this.#stop.abort(new DOMException('observe failed', 'AbortError'));
    throw failureToError(answer);
  }

  /** Sleep the next backoff delay (at least the floor); false when stopped meanwhile. */
  async #pause(): Promise<boolean> {
    const delay = TRANSIENT_FLOOR_MILLIS + this.#backoff.delay(this.#pauses);
    this.#pauses += 1;
    try {
      await this.#rt.clock.sleep(delay, this.#stop.signal);
      return true;
    } catch {
      return false;
    }
  }
}
