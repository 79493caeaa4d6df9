/**
 * This server's one view of its store's health (issue 20).
 *
 * Fed by the outcome of every store call (health-checked-store.ts): a call that
 * fails as unreachable (NotLeaderError) or outlives its timeout turns the state
 * down; any call that succeeds turns it up. While down, a background probe
 * (the store's ping) runs every `probeIntervalMillis`, so the state comes back
 * within one interval (plus a ping) of the store's return, even when no request
 * arrives.
 *
 * Why one failure is enough to go down: a refused or hung store fails every
 * call, and waiting for N of them costs every caller N connect timeouts. A
 * spurious failure costs little: the first probe runs at once, so a store that
 * still answers is up again within one ping.
 */
import type { Clock } from './clock.js';

export interface StoreHealthOptions {
  /** A store call unanswered after this counts as failed (and is answered 503). */
  callTimeoutMillis: number;
  /** While down, how often the probe pings the store. */
  probeIntervalMillis: number;
}

export const DEFAULT_STORE_HEALTH: StoreHealthOptions = { callTimeoutMillis: 1_000, probeIntervalMillis: 50 };

export interface StoreHealthListener {
  /** The state turned down; `cause` is the failure that turned it. */
  down(fact: { cause: string }): void;
  /** The state turned up again after `downMillis` down. */
  up(fact: { downMillis: number }): void;
}

/**
 * The probe gives up sooner than a request would: it runs again at once, and a ping stuck on a
 * connection the outage broke must not hold recovery back for a whole call timeout.
 */
const PROBE_TIMEOUT_FLOOR_MILLIS = 250;

export class StoreHealth {
  private downSince: number | null = null;
  private downCause = '';
  private probing = false;
  private stopped = false;
  private readonly stopSignal = new AbortController();

  constructor(
    private readonly ping: () => Promise<void>,
    private readonly clock: Clock,
    private readonly listener: StoreHealthListener,
    readonly options: StoreHealthOptions = DEFAULT_STORE_HEALTH,
  ) {}

  get up(): boolean {
    return this.downSince === null;
  }

  /** Why the store is counted down (empty while up). */
  get cause(): string {
    return this.downCause;
  }

  succeeded(): void {
    if (this.downSince === null) return;
    const downMillis = Math.max(0, this.clock.now() - this.downSince);
    this.downSince = null;
    this.downCause = '';
    this.listener.up({ downMillis });
  }

  failed(cause: string): void {
    if (this.downSince !== null || this.stopped) return;
    this.downSince = this.clock.now();
    this.downCause = cause;
    this.listener.down({ cause });
    void this.probeUntilUp();
  }

  /** How long a probe may take before the next one starts. */
  get probeTimeoutMillis(): number {
    return Math.min(this.options.callTimeoutMillis, Math.max(PROBE_TIMEOUT_FLOOR_MILLIS, 3 * this.options.probeIntervalMillis));
  }

  stop(): void {
    this.stopped = true;
    this.stopSignal.abort(new Error('store health stopped'));
  }

  /** One probe loop at a time; the first ping at once, then one per interval until a call succeeds. */
  private async probeUntilUp(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      while (!this.up && !this.stopped) {
        const started = this.clock.now();
        const answered = await this.probeOnce();
        if (answered) this.succeeded();
        if (this.up || this.stopped) break;
        const rest = this.options.probeIntervalMillis - (this.clock.now() - started);
        if (rest > 0) await this.clock.sleep(rest, this.stopSignal.signal).catch(() => {});
      }
    } finally {
      this.probing = false;
    }
  }

  private async probeOnce(): Promise<boolean> {
    const gaveUp = new AbortController();
    const signal = AbortSignal.any([gaveUp.signal, this.stopSignal.signal]);
    try {
      return await Promise.race([
        this.ping().then(
          () => true,
          () => false,
        ),
        this.clock.sleep(this.probeTimeoutMillis, signal).then(
          () => false,
          () => false,
        ),
      ]);
    } finally {
      gaveUp.abort();
    }
  }
}
