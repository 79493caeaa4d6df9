/**
 * The read side: locks with their waiter counts (fleet-wide from the store's wait state where
 * it keeps one, else this instance's), the oldest grants, the most contended keys across the
 * fleet, and the wait-for graph's cycles.
 */
import type { LockHolder, LockInfo, Page } from '../../contract/records.js';
import type { HeldLock, InstancePublication, LockStore } from '../store/spi.js';
import { asTopKSummary, type TopKSummary } from './contention-top.js';
import type { FleetCoordinator } from './fleet.js';
import type { ContendedKey, LockInsight } from './insight.js';
import type { WaiterRegistry } from './waiters.js';

export class LockReads {
  constructor(
    private readonly store: LockStore,
    private readonly waiters: WaiterRegistry,
    private readonly insight: LockInsight,
    private readonly fleet: FleetCoordinator | null,
  ) {}

  async readLock(key: string): Promise<LockInfo> {
    const [lock, counts] = await Promise.all([this.store.readLock(key), this.waiterCounts([key])]);
    return toInfo(key, lock, counts);
  }

  async listLocks(query: { prefix?: string; limit: number; cursor?: string }): Promise<Page<LockInfo>> {
    const page = await this.store.listLocks(query);
    const counts = await this.waiterCounts(page.items.map((lock) => lock.key));
    return { items: page.items.map((lock) => toInfo(lock.key, lock, counts)), nextCursor: page.nextCursor };
  }

  /** A1 with sort=age: the `limit` oldest grants, oldest first, counted like every other read. */
  async oldestLocks(limit: number, prefix?: string): Promise<LockInfo[]> {
    const oldest = await this.insight.oldestHeld(limit, prefix);
    const counts = await this.waiterCounts(oldest.map((lock) => lock.key));
    return oldest.map((lock) => toInfo(lock.key, lock, counts));
  }

  /** Waiters per key: fleet-wide from the store's wait state, else this instance's. */
  /** Waits on one key, fleet-wide where the store keeps wait state. */
  async waiterCount(key: string): Promise<number> {
    return (await this.waiterCounts([key])).get(key) ?? 0;
  }

  waiterCounts(keys: string[]): Promise<Map<string, number>> {
    if (this.store.fleet) return this.store.fleet.waiterCounts(keys);
    return Promise.resolve(new Map(keys.map((key) => [key, this.waiters.count(key)])));
  }

  /** Waiting acquires: fleet-wide when the store keeps wait state, else on this instance. */
  async waiterTotal(): Promise<number> {
    return this.store.fleet ? this.store.fleet.totalWaiters() : this.waiters.total();
  }

  /** Cycles in the wait-for graph: fleet-wide when the store keeps wait state, else this instance's. */
  async deadlockCycles(): Promise<number> {
    return this.fleet ? this.fleet.deadlockCycles() : this.waiters.deadlockCycles();
  }

  /**
   * What every live instance last published (this one included), for fleet-wide views that merge
   * per-instance summaries (A7). Null when the store keeps no fleet state: the caller uses its own.
   */
  async fleetPublications(): Promise<InstancePublication[] | null> {
    return this.store.fleet ? this.store.fleet.instancePublications() : null;
  }

  /**
   * A7: the most contended keys fleet-wide — this instance's live window merged with the
   * summaries the other live instances published (at most one instance heartbeat old).
   */
  async topContended(limit: number): Promise<{ windowMillis: number; items: ContendedKey[] }> {
    const publications = (await this.fleetPublications()) ?? [];
    const others = publications
      .filter((p) => p.instanceId !== this.fleet?.instanceId)
      .map((p) => asTopKSummary((p.published as { contentionTop?: unknown } | undefined)?.contentionTop))
      .filter((summary): summary is TopKSummary => summary !== null);
    return this.insight.topContended(limit, others, (keys) => this.waiterCounts(keys));
  }
}

function toInfo(key: string, lock: HeldLock | null, counts: Map<string, number>): LockInfo {
  const waiterCount = counts.get(key) ?? 0;
  if (!lock) return { key, held: false, holders: [], waiterCount };
  const holders = (lock.holders ?? [lock]).map(toHolder);
  // The single-holder fields describe the holder with the lowest token (SPEC v3), first in `holders`.
  const { value: _value, ...single } = toHolder(lock);
  return { key, held: true, ...single, mode: lock.mode, limit: lock.limit, holders, waiterCount };
}

function toHolder(lock: HeldLock): LockHolder {
  return {
    sessionId: lock.sessionId,
    owner: lock.owner,
    fencingToken: lock.fencingToken,
    grantedAt: lock.grantedAt,
    expiresAt: lock.expiresAt,
    ...(lock.value !== undefined ? { value: lock.value } : {}),
  };
}
