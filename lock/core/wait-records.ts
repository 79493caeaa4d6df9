/**
 * Waits recorded in the store's fleet-wide wait state (stores with `fleet`): recorded once a
 * wait is admitted, ended when it leaves. A wait's end is never allowed to hold up an answer;
 * one the store did not take (it was down) is remembered and sent again when the store returns
 * and on every sweep — else the row would count as a waiter and as an edge of the wait-for graph
 * until its session or instance ended.
 */
import type { FleetWaitState, HeldLock, WaitToRecord } from '../store/spi.js';
import { MUTEX } from '../../contract/records.js';
import type { Clock } from './clock.js';
import type { StoreHealth } from './store-health.js';
import type { Waiter } from './waiters.js';

/** Bounds the waits remembered for ending after an outage. */
const MAX_UNENDED_WAITS = 10_000;
const UNENDED_WAITS_AT_ONCE = 16;

export class WaitRecords {
  /** Waits whose record end the store did not take. */
  private readonly unended = new Set<string>();
  private flushing = false;

  constructor(
    private readonly fleet: FleetWaitState,
    private readonly instanceId: string,
    private readonly health: StoreHealth,
    private readonly clock: Clock,
  ) {}

  /** The store records a wait in the try that finds its key held (FleetWaitState.recordsOnTry). */
  get recordsOnTry(): boolean {
    return this.fleet.recordsOnTry;
  }

  /** The record a try sends for the store to keep should it find the key held (recordsOnTry). */
  toRecordOnTry(waiter: Waiter): WaitToRecord {
    const { sessionId: _sessionId, key: _key, ...record } = waitRecordOf(waiter, this.instanceId, this.clock.now());
    return record;
  }

  async begin(waiter: Waiter): Promise<void> {
    waiter.recordedInStore = true;
    await this.fleet.beginWait(waitRecordOf(waiter, this.instanceId, this.clock.now()));
  }

  /** Ends the record and answers the grant a release handed the wait meanwhile, if any (its session holds it). */
  async finish(waiter: Waiter): Promise<HeldLock | null> {
    if (!waiter.recordedInStore) return null;
    waiter.recordedInStore = false;
    if (!this.fleet.handsOff) {
      this.end(waiter.waitId);
      return null;
    }
    try {
      return await this.fleet.endWait(waiter.waitId);
    } catch {
      // Ended later (store back, or the sweep); a grant handed to it meanwhile stays with its session.
      this.remember(waiter.waitId);
      return null;
    }
  }

  /**
   * Not awaited by callers (also for a record a try may have made though no answer came). While the store
   * is down the end is only remembered (it would hold a connection heartbeats need). A grant a release
   * handed the wait meanwhile stays with its session.
   */
  end(waitId: string): void {
    if (!this.health.up) {
      this.remember(waitId);
      return;
    }
    this.fleet.endWait(waitId).catch(() => this.remember(waitId));
  }

  /** Sends the remembered ends, a few at a time so client traffic is not queued behind them. */
  async flushUnended(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.unended.size > 0 && this.health.up) {
        const batch = [...this.unended].slice(0, UNENDED_WAITS_AT_ONCE);
        for (const waitId of batch) this.unended.delete(waitId);
        await Promise.all(batch.map((waitId) => this.fleet.endWait(waitId).catch(() => this.remember(waitId))));
        if (this.unended.size > 0 && batch.every((waitId) => this.unended.has(waitId))) break; // still failing: next sweep
      }
    } finally {
      this.flushing = false;
    }
  }

  private remember(waitId: string): void {
    // Past the cap, the rest go with their sessions or this instance.
    if (this.unended.size < MAX_UNENDED_WAITS) this.unended.add(waitId);
  }
}

/** The record of a wait as the store keeps it; with its TTL and budget a release can hand it the key. */
export function waitRecordOf(waiter: Waiter, instanceId: string, now: number) {
  return {
    waitId: waiter.waitId,
    sessionId: waiter.sessionId,
    key: waiter.key,
    instanceId,
    ...(waiter.grantTtlMillis !== undefined && waiter.deadline !== undefined
      ? { ttlMillis: waiter.grantTtlMillis, deadlineMillis: Math.max(0, waiter.deadline - now) }
      : {}),
    ...(waiter.grantValue !== undefined ? { value: waiter.grantValue } : {}),
    ...(waiter.mode !== MUTEX.mode ? { mode: waiter.mode } : {}),
  };
}
