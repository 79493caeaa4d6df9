/**
 * Keeps one session alive: L2 every third of its TTL, through the Clock.
 *
 * The session is declared lost — once — when the server answers
 * SESSION_NOT_FOUND or UNAUTHENTICATED (it refuses the session's token), or when
 * its conservative deadline (send time of the last successful heartbeat + TTL −
 * margin) passes first. The deadline is watched by its own timer, so a heartbeat
 * that hangs cannot postpone the verdict; and each heartbeat is abandoned after
 * a quarter of the TTL at most (request-timeout.ts) and sent again at once, so
 * one stalled request cannot hold the loop either. NOT_LEADER, 5xx and failed
 * heartbeats are retried sooner.
 */
import type { LockApi } from './api.js';
import type { BackendLabel } from './backend-label.js';
import { startTimer, type Clock, type Timer } from './clock.js';
import type { SessionLossCause } from './errors.js';
import { isRequestTimeout, keepAliveTimeoutMillis, withRequestTimeout } from './request-timeout.js';
import { conservativeDeadline } from './runtime.js';

export interface HeartbeatOptions {
  api: LockApi;
  clock: Clock;
  sessionId: string;
  /** The session's bearer token for L2; kept here only as the loop's argument. */
  sessionToken: string;
  ttlMillis: number;
  safetyMarginMillis: number;
  /** Conservative deadline established by the session's open (L1). */
  initialDeadline: number;
  onBackend(backend: BackendLabel): void;
  onLost(cause: SessionLossCause): void;
}

export class HeartbeatScheduler {
  readonly intervalMillis: number;
  readonly retryMillis: number;
  private readonly stopper = new AbortController();
  private watchdog: Timer | undefined;
  private deadline: number;

  constructor(private readonly options: HeartbeatOptions) {
    this.intervalMillis = Math.max(1, Math.floor(options.ttlMillis / 3));
    this.retryMillis = Math.max(1, Math.min(this.intervalMillis, Math.floor(options.ttlMillis / 10)));
    this.deadline = options.initialDeadline;
  }

  /** The current conservative deadline (monotonic ms). */
  get deadlineAt(): number {
    return this.deadline;
  }

  start(): void {
    this.armWatchdog();
    void this.loop();
  }

  stop(): void {
    this.watchdog?.cancel();
    this.stopper.abort();
  }

  private armWatchdog(): void {
    this.watchdog?.cancel();
    this.watchdog = startTimer(this.options.clock, this.deadline - this.options.clock.now(), () =>
      this.lose('deadline'),
    );
  }

  private lose(cause: SessionLossCause): void {
    if (this.stopper.signal.aborted) return;
    this.stop();
    this.options.onLost(cause);
  }

  private async loop(): Promise<void> {
    const { api, clock, sessionId, sessionToken, ttlMillis, safetyMarginMillis } = this.options;
    const stopped = this.stopper.signal;
    let delay = this.intervalMillis;
    while (!stopped.aborted) {
      try {
        await clock.sleep(delay, stopped);
      } catch {
        return;
      }
      const sentAt = clock.now();
      let answer;
      try {
        const timeout = keepAliveTimeoutMillis(ttlMillis, this.deadline - sentAt);
        answer = await withRequestTimeout(clock, timeout, stopped, 'the heartbeat', (signal) =>
          api.heartbeat(sessionId, sessionToken, signal),
        );
      } catch (error) {
        if (stopped.aborted) return;
        // Abandoned after its timeout: the time is spent already, send again now. Failed fast
        // (refused, reset): try again soon. Either way the watchdog decides.
        delay = isRequestTimeout(error) ? 0 : this.retryMillis;
        continue;
      }
      if (stopped.aborted) return;
      if (answer.backend !== undefined) this.options.onBackend(answer.backend);
      if (answer.ok) {
        this.deadline = Math.max(this.deadline, conservativeDeadline(sentAt, ttlMillis, safetyMarginMillis));
        this.armWatchdog();
        delay = this.intervalMillis;
      } else if (answer.code === 'SESSION_NOT_FOUND') {
        this.lose('not_found');
        return;
      } else if (answer.code === 'UNAUTHENTICATED') {
        this.lose('unauthenticated');
        return;
      } else {
        delay = this.retryMillis;
      }
    }
  }
}
