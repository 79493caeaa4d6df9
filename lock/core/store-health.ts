/**
 * This server's one view of its store's health (issue 20).
 *
 * Fed by the outcome of every store call (health-checked-store.ts). A call that
 * fails as unreachable (NotLeaderError) or outlives its timeout makes the store
 * suspect; one ping confirms it: if the ping fails or outlives the probe timeout,
 * the state turns down. While down, a probe pings the store every
 * `probeIntervalMillis`, and the first ping that answers turns it up, so service
 * returns within about one interval (plus a ping) of the store's return, even when
 * no request arrives.
 *
 * Why a suspicion is confirmed rather than counted: a single failure is also what a
 * busy store looks like (a queue behind one slow statement, PGlite's one connection
 * on a loaded machine, etcd writers racing, an event-loop stall that fires a timer
 * before the reply is read). A failure after which another call succeeded is not
 * even a suspicion. And why only a ping turns the state up: some calls can be
 * answered without a round trip (etcd's session cache), which proves nothing.
 */
export interface StoreHealthOptions {
  /** A store call unanswered after this makes the store suspect (its caller still gets the store's answer). */
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
 * A ping gives up sooner than a request would: the next one starts at once, and a ping stuck on a
 * connection the outage broke must not hold recovery back for a whole call timeout.
 */
const PROBE_TIMEOUT_FLOOR_MILLIS = 250;
/**
 * Pings still unanswered (each may hold a pool slot until the store's own timeout, ~2 s on PostgreSQL):
 * no more than this. A ping every ~300 ms keeps about six in flight against a black hole, so the cap
 * rarely waits, and when it does the oldest ping is about to end on the store's own timeout.
 */
const MAX_PINGS_IN_FLIGHT = 6;

export class StoreHealth {
  private downSince: number | null = null;
  private downCause = '';
  private successCount = 0;
  /** Bumped whenever the state turns down: a ping recovers only the outage it was sent in. */
  private outage = 0;
  private confirming = false;
  private probing = false;
  private pingsInFlight = 0;
  private stopped = false;
  private wake: (() => void) | null = null;

  constructor(
    private readonly ping: () => Promise<void>,
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

  /** Calls that succeeded so far: a call notes it when sent, so its failure can ask "any success since?". */
  get successes(): number {
    return this.successCount;
  }

  get probeTimeoutMillis(): number {
    return Math.min(this.options.callTimeoutMillis, Math.max(PROBE_TIMEOUT_FLOOR_MILLIS, 3 * this.options.probeIntervalMillis));
  }

  /** A store call answered (it does not turn the state up: only a ping does). */
  succeeded(): void {
    this.successCount++;
  }

  /**
   * A call failed as unreachable or outlived its timeout. `successesAtSend`: `successes` when it was
   * sent; a success since then means the store answers, so this says nothing.
   */
  failed(cause: string, successesAtSend?: number): void {
    if (!this.up || this.stopped || this.confirming) return;
    if (successesAtSend !== undefined && this.successCount > successesAtSend) return;
    this.confirming = true;
    void this.pingOnce()
      .then((answered) => {
        if (!answered) this.turnDown(cause);
      })
      .finally(() => {
        this.confirming = false;
      });
  }

  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  private turnDown(cause: string): void {
    if (!this.up || this.stopped) return;
    this.downSince = performance.now();
    this.downCause = cause;
    this.outage++;
    this.notify(() => this.listener.down({ cause }));
    void this.probeUntilUp();
  }

  private turnUp(outage: number): void {
    if (this.up || this.stopped || outage !== this.outage) return;
    const downMillis = Math.max(0, Math.round(performance.now() - this.downSince!));
    this.downSince = null;
    this.downCause = '';
    this.notify(() => this.listener.up({ downMillis }));
  }

  /** One probe loop at a time: a ping at once, then one per interval until one answers. */
  private async probeUntilUp(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      while (!this.up && !this.stopped) {
        const started = performance.now();
        const outage = this.outage;
        if (this.pingsInFlight < MAX_PINGS_IN_FLIGHT && (await this.pingOnce())) this.turnUp(outage);
        if (this.up || this.stopped) break;
        await this.pause(Math.min(this.options.probeIntervalMillis, this.options.probeIntervalMillis - (performance.now() - started)));
      }
    } finally {
      this.probing = false;
    }
  }

  /**
   * True when the store answered a ping within the probe timeout. A ping that answers later still
   * ends the outage it was sent in (it proves the store answers), without holding the loop.
   */
  private pingOnce(): Promise<boolean> {
    const outage = this.outage;
    this.pingsInFlight++;
    const answered = Promise.resolve()
      .then(() => this.ping())
      .then(
        () => true,
        () => false,
      )
      .finally(() => {
        this.pingsInFlight--;
      });
    void answered.then((ok) => {
      if (ok) this.turnUp(outage);
    });
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), this.probeTimeoutMillis);
      timer.unref();
    });
    return Promise.race([answered, gaveUp]).finally(() => clearTimeout(timer));
  }

  private pause(millis: number): Promise<void> {
    if (millis <= 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null;
        resolve();
      }, millis);
      timer.unref();
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }

  /** A listener that throws must not break a store call or the probe. */
  private notify(report: () => void): void {
    try {
      report();
    } catch {
      // The listener's own problem; the state has changed either way.
    }
  }
}
