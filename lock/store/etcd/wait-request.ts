/**
 * What both wait shapes share: the request, and one waiting call's settle-once
 * promise with its deadline and abort wiring (all removed in `finally`).
 */
import type { WaitResult } from '../spi.js';

export interface EtcdWaitRequest {
  key: string;
  observedRevision?: string;
  timeoutMillis: number;
  signal: AbortSignal;
  /**
   * The waiting session. When given, the wait also ends when that session's
   * record is deleted (closed, killed, expired), so core's retry answers
   * SESSION_NOT_FOUND at once instead of at the deadline (etcd issue 19597).
   */
  sessionId?: string;
}

/** What a wait shape is given: the request anchored on a revision, and the holder seen at that revision. */
export interface AnchoredWaitRequest extends EtcdWaitRequest {
  observedRevision: string;
  /**
   * The sessions that held the key when the attempt failed (one for a mutex; a
   * multi-holder key's live grants, up to a bound). A session ending (its lease
   * running out) frees its grant before any sweep deletes the grant's key, so the
   * wait ends on that too.
   */
  holderSessionIds?: readonly string[];
}

export interface WaitStrategy {
  start(): Promise<void>;
  stop(): Promise<void>;
  wait(request: AnchoredWaitRequest): Promise<WaitResult>;
  /** Waits (and, per call, etcd watches) open right now. */
  openWatchCount(): number;
}

/** One pending wait: settles once, with the first of event, deadline, abort or failure. */
export class PendingWait {
  readonly result: Promise<WaitResult>;
  private settle!: (result: WaitResult) => void;
  private settled = false;
  private readonly timer: NodeJS.Timeout;
  private readonly onAbort: () => void;

  constructor(
    timeoutMillis: number,
    private readonly signal: AbortSignal,
  ) {
    this.result = new Promise<WaitResult>((resolve) => {
      this.settle = resolve;
    });
    this.timer = setTimeout(() => this.finish({ outcome: 'deadline' }), Math.max(0, timeoutMillis));
    this.onAbort = () => this.finish({ outcome: 'aborted' });
    if (signal.aborted) this.finish({ outcome: 'aborted' });
    else signal.addEventListener('abort', this.onAbort, { once: true });
  }

  get done(): boolean {
    return this.settled;
  }

  finish(result: WaitResult): void {
    if (this.settled) return;
    this.settled = true;
    this.dispose();
    this.settle(result);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.signal.removeEventListener('abort', this.onAbort);
  }
}
