/**
 * LockHandle is what callers hold; HeldLock is the session's private record
 * behind it (reentrancy depth, conservative deadline, lost/released state).
 *
 * A handle is lost when the SDK can no longer vouch that its lock is held:
 * a renewal answered LOCK_LOST, its conservative deadline passed without a
 * successful renewal, or its session was lost. Losing is one-way and aborts
 * `signal` at once, with the reason as `signal.reason`.
 */
import { startTimer, type Clock, type Timer } from './clock.js';
import { LockLostError } from './errors.js';
import type { Holding } from './holding.js';
import type { FencingToken, LockMode } from './wire.js';

export class LockHandle {
  readonly #lock: HeldLock;

  /** @internal Created by the session only. */
  constructor(lock: HeldLock) {
    this.#lock = lock;
  }

  get key(): string {
    return this.#lock.key;
  }

  /** Pass this to the protected resource with every write (see `fenced()`). */
  get fencingToken(): FencingToken {
    return this.#lock.fencingToken;
  }

  /**
   * When the SDK stops vouching for the lock, in the client Clock's monotonic
   * milliseconds (compare with `clock.now()`, not `Date.now()`): the send time of
   * the grant or last successful renewal, plus the TTL, minus the safety margin.
   */
  get expiresAt(): number {
    return this.#lock.expiresAt;
  }

  get lost(): boolean {
    return this.#lock.lost;
  }

  /** Aborts when the lock is lost or released; pass it to the work the lock protects. */
  get signal(): AbortSignal {
    return this.#lock.signal;
  }

  /**
   * How the key is held (v3): `exclusive` (a mutex, or a semaphore when `limit` > 1) or `shared`
   * (a reader: other shared holders may hold the key at the same time, an exclusive one may not).
   */
  get mode(): LockMode {
    return this.#lock.holding.mode;
  }

  /** Holders the key admits at once (v3): 1 for a mutex and for shared, N for a semaphore of N. */
  get limit(): number {
    return this.#lock.holding.limit;
  }

  /** The grant's value (v3): as granted, then as last proclaimed; undefined when it has none. */
  get value(): string | undefined {
    return this.#lock.value;
  }

  /**
   * Replace the grant's value (v3: L5 with `value`, same token). It is a renewal too: success
   * moves the conservative deadline; LOCK_LOST / HOLD_LIMIT_REACHED mark the handle lost and
   * throw that error. Proclaims of one handle go out one after another, so `value` is the last one.
   */
  proclaim(value: string): Promise<void> {
    return this.#lock.proclaim(value);
  }
}

/** How a held lock sends a proclaim: the session's, which has the token and the API. */
export type Proclaimer = (lock: HeldLock, value: string) => Promise<void>;

export class HeldLock {
  depth = 1;
  lost = false;
  released = false;
  /** Background renewals running (one per active withLock on this key). */
  renewers = 0;
  stopRenewing: (() => void) | undefined;
  readonly handle: LockHandle;
  private watchdog: Timer | undefined;
  /**
   * Made on the first read of `signal`: most holds end without anyone having
   * asked for it, and then neither the controller nor the abort reason is built.
   */
  private controller: AbortController | undefined;
  /** Why the lock was lost, kept for a signal first asked for afterwards. */
  private lossReason: Error | undefined;
  /** The previous proclaim of this handle: the next one goes out after it settles. */
  private proclaiming: Promise<unknown> = Promise.resolve();

  constructor(
    readonly key: string,
    readonly fencingToken: FencingToken,
    readonly ttlMillis: number,
    public expiresAt: number,
    private readonly clock: Clock,
    public value: string | undefined,
    private readonly proclaimer: Proclaimer,
    /** The grant's mode and limit (v3; a mutex before). */
    readonly holding: Holding,
  ) {
    this.handle = new LockHandle(this);
    this.armWatchdog();
  }

  /** Aborted once the lock is lost or released — already so when first read after that. */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.lost || this.released) this.controller.abort(this.endReason());
    }
    return this.controller.signal;
  }

  /** Why the lock is lost (undefined while it is not). */
  get lossError(): Error | undefined {
    return this.lossReason;
  }

  proclaim(value: string): Promise<void> {
    const next = this.proclaiming.then(() => this.proclaimer(this, value));
    this.proclaiming = next.catch(() => {});
    return next;
  }

  /** A successful renewal sent at `sentAt` moved the conservative deadline. */
  extend(expiresAt: number): void {
    if (this.lost || this.released) return;
    this.expiresAt = Math.max(this.expiresAt, expiresAt);
    this.armWatchdog();
  }

  markLost(reason: Error): void {
    if (this.lost || this.released) return;
    this.lost = true;
    this.lossReason = reason;
    this.watchdog?.cancel();
    this.stopRenewing?.();
    this.controller?.abort(reason);
  }

  markReleased(): void {
    if (this.released) return;
    this.released = true;
    this.watchdog?.cancel();
    this.stopRenewing?.();
    if (this.controller !== undefined && !this.controller.signal.aborted) this.controller.abort(this.endReason());
  }

  /** The first end wins: a lock lost and then released stays aborted with its loss. */
  private endReason(): unknown {
    return this.lossReason ?? new DOMException(`lock ${JSON.stringify(this.key)} released`, 'AbortError');
  }

  private armWatchdog(): void {
    this.watchdog?.cancel();
    this.watchdog = startTimer(this.clock, this.expiresAt - this.clock.now(), () =>
      this.markLost(new LockLostError(this.key, this.fencingToken, 'TTL passed without a successful renewal')),
    );
  }
}
