/**
 * Operator insight (issue 14): what has been held longest, which keys are
 * fought over, who waits for whom, and the recent story of one key. Core feeds
 * it where a grant starts or ends and where an attempt is contended (the same
 * places the log events are emitted); the admin routes read it.
 *
 * Scope: the contention window, the waits and the history are what this
 * instance saw; holders, ages and audit entries come from the store (fleet-wide).
 * A7 is fleet-wide where the store keeps fleet state: every instance publishes its
 * window's summary with its instance heartbeat, and A7 merges them (mergeTopK).
 */
import type { AuditEntry, LockGrant } from '../../contract/records.js';
import type { BrokenDeadlock, ContendedKey, WaitGraph } from '../../contract/insight.js';
import { lockKindOf, type HoldOutcome } from '../../contract/metric-table.js';
import type { LockEvents } from '../../contract/lock-events.js';
import type { EndedLock, HeldLock, LockStore } from '../store/spi.js';
import { ContentionTop, mergeTopK, rankEntries, type ContentionTopOptions, type TopKSummary } from './contention-top.js';
import { LockHistory, type LockHistoryEvent } from './lock-history.js';
import { findCycles, type WaitEdge } from './wait-graph.js';
import type { WaiterRegistry } from './waiters.js';

export type { BrokenDeadlock, ContendedKey, WaitGraph };

export interface LockInsightOptions {
  contention?: ContentionTopOptions;
  historyCapacity?: number;
}

/** Broken cycles the waits view keeps (per instance, newest first). */
const BROKEN_DEADLOCKS_KEPT = 20;
/** The most edges A7w reads from the fleet wait state (the oldest waits first). */
const WAIT_GRAPH_EDGES = 500;

/** How an ended grant is told apart in the history and in lock_hold_seconds. */
export interface GrantEnd {
  outcome: HoldOutcome;
  actor?: string;
  reason?: string;
  cause?: string;
  auditId?: string;
}

const OLDEST_SCAN_PAGE = 1000;
/**
 * How long one scan for the oldest grants answers identical asks: every open console
 * polls "held longest" every 2 s, and each scan reads every held lock.
 */
const OLDEST_REUSE_MILLIS = 1000;

export class LockInsight {
  readonly contention: ContentionTop;
  readonly history: LockHistory;
  private readonly broken: BrokenDeadlock[] = [];
  private readonly oldestScans = new Map<string, { startedAt: number; scan: Promise<HeldLock[]> }>();

  constructor(
    private readonly store: LockStore,
    private readonly waiters: WaiterRegistry,
    private readonly events: Pick<LockEvents, 'holdEnded'>,
    private readonly now: () => number,
    options: LockInsightOptions = {},
  ) {
    this.contention = new ContentionTop(now, options.contention);
    this.history = new LockHistory(options.historyCapacity);
  }

  // ---- fed by core ----------------------------------------------------------

  contended(key: string): void {
    this.contention.record(key);
  }

  granted(grant: LockGrant, owner: string): void {
    this.history.record({
      at: grant.grantedAt,
      kind: 'granted',
      key: grant.key,
      sessionId: grant.sessionId,
      owner,
      fencingToken: grant.fencingToken,
    });
  }

  /** Once per grant that ended: lock_hold_seconds and the history. */
  ended(lock: EndedLock, end: GrantEnd): void {
    const heldMillis = Math.max(0, lock.endedAt - lock.grantedAt);
    this.events.holdEnded({ outcome: end.outcome, seconds: heldMillis / 1000, kind: lockKindOf(lock) });
    this.history.record({
      at: lock.endedAt,
      kind: end.outcome === 'session_ended' ? 'session_ended' : end.outcome,
      key: lock.key,
      sessionId: lock.sessionId,
      owner: lock.owner,
      fencingToken: lock.fencingToken,
      heldMillis,
      ...(end.actor !== undefined ? { actor: end.actor } : {}),
      ...(end.reason !== undefined ? { reason: end.reason } : {}),
      ...(end.cause !== undefined ? { cause: end.cause } : {}),
      ...(end.auditId !== undefined ? { auditId: end.auditId } : {}),
    });
  }

  // ---- read by the admin routes ------------------------------------------------

  /**
   * A7: the most contended keys of the window — this instance's summary merged with what the
   * other instances of the fleet published (`others`; none on a store without fleet state) —
   * with their waiters (`waiterCounts`: fleet-wide where the store keeps wait state) and holders now.
   */
  async topContended(
    limit: number,
    others: readonly TopKSummary[] = [],
    waiterCounts: (keys: string[]) => Promise<Map<string, number>> = async (keys) =>
      new Map(keys.map((key) => [key, this.waiters.count(key)])),
  ): Promise<{ windowMillis: number; items: ContendedKey[] }> {
    const own = this.contention.summary();
    const summary = others.length > 0 ? mergeTopK([own, ...others], own.capacity) : own;
    const top = rankEntries(summary, limit);
    const keys = top.map((entry) => entry.key);
    const [holders, counts] = await Promise.all([Promise.all(keys.map((key) => this.store.readLock(key))), waiterCounts(keys)]);
    return {
      windowMillis: this.contention.windowMillis,
      items: top.map((entry, i) => {
        const holder = holders[i];
        return {
          key: entry.key,
          contended: entry.count,
          waiters: counts.get(entry.key) ?? 0,
          ...(holder ? { holderSessionId: holder.sessionId, holderOwner: holder.owner } : {}),
        };
      }),
    };
  }

  /** A cycle was broken here: its youngest wait was answered DEADLOCK_DETECTED. */
  deadlockBroken(deadlock: BrokenDeadlock): void {
    this.broken.unshift(deadlock);
    if (this.broken.length > BROKEN_DEADLOCKS_KEPT) this.broken.length = BROKEN_DEADLOCKS_KEPT;
  }

  /**
   * A7w: every instance's recorded waits, with owners, where the store keeps fleet wait state (the
   * edges the deadlock detector reads); else this instance's. The deadlocks broken are this instance's.
   */
  async waitGraph(): Promise<WaitGraph> {
    const fleet = this.store.fleet;
    if (!fleet) {
      const items = this.waiters.snapshot();
      return { scope: 'instance', items, cycles: findCycles(items), broken: [...this.broken] };
    }
    const items = (await fleet.waitForEdges(WAIT_GRAPH_EDGES)).map((edge) => ({
      waiterSessionId: edge.sessionId,
      key: edge.key,
      holderSessionId: edge.holderSessionId,
      ...(edge.owner !== undefined ? { waiterOwner: edge.owner } : {}),
      ...(edge.holderOwner !== undefined ? { holderOwner: edge.holderOwner } : {}),
      ...(edge.holderKind !== undefined ? { holderKind: edge.holderKind } : {}),
    }));
    return { scope: 'fleet', items, cycles: findCycles(items), broken: [...this.broken] };
  }

  /** This instance's recent events of `key` and the store's audit entries about it, both newest first. */
  async keyHistory(key: string, limit: number): Promise<{ key: string; items: LockHistoryEvent[]; audit: AuditEntry[] }> {
    const audit = await this.store.listAudit({ target: key, limit });
    return { key, items: this.history.forKey(key, limit), audit: audit.items };
  }

  /**
   * A1 with sort=age: the `limit` oldest live grants, oldest first. The SPI lists
   * by key only, so this walks every held lock keeping the oldest `limit`
   * (O(held locks) store reads, O(limit) memory); identical asks within
   * OLDEST_REUSE_MILLIS share one scan. The caller adds the waiter counts (always
   * current, and fleet-wide where the store keeps wait state).
   */
  async oldestHeld(limit: number, prefix?: string): Promise<HeldLock[]> {
    const ask = JSON.stringify([limit, prefix ?? '']);
    const now = this.now();
    let entry = this.oldestScans.get(ask);
    if (!entry || now - entry.startedAt >= OLDEST_REUSE_MILLIS) {
      for (const [other, old] of this.oldestScans) if (now - old.startedAt >= OLDEST_REUSE_MILLIS) this.oldestScans.delete(other);
      const fresh = { startedAt: now, scan: this.scanOldest(limit, prefix) };
      this.oldestScans.set(ask, fresh);
      // A failed scan is not reused.
      fresh.scan.catch(() => {
        if (this.oldestScans.get(ask) === fresh) this.oldestScans.delete(ask);
      });
      entry = fresh;
    }
    return entry.scan;
  }

  private async scanOldest(limit: number, prefix?: string): Promise<HeldLock[]> {
    const oldest: HeldLock[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.store.listLocks({ limit: OLDEST_SCAN_PAGE, ...(prefix ? { prefix } : {}), ...(cursor ? { cursor } : {}) });
      for (const lock of page.items) {
        if (oldest.length === limit && !olderThan(lock, oldest[limit - 1]!)) continue;
        const at = oldest.findIndex((other) => olderThan(lock, other));
        oldest.splice(at === -1 ? oldest.length : at, 0, lock);
        if (oldest.length > limit) oldest.pop();
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return oldest;
  }
}

/** Older grant first; equal instants by key, so the order is stable across pages. */
function olderThan(a: HeldLock, b: HeldLock): boolean {
  return a.grantedAt < b.grantedAt || (a.grantedAt === b.grantedAt && a.key < b.key);
}

export type { LockHistoryEvent };
