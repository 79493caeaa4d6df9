/**
 * Recent lock events on this server instance, for the console's per-key history
 * (GET /v1/admin/locks/{key}/history): grants, releases, expiries, revokes and
 * session ends, each with its fencing token and who. Fed where core emits the
 * matching log events, so the history and the log cannot disagree.
 *
 * One ring of `capacity` events for all keys: memory is bounded whatever the
 * number of keys, and a busy key pushes quiet keys' old events out first.
 * Per instance and not durable: the audit trail (store-wide, hash-chained) is
 * the record of revokes and kills; this is the recent story around them.
 */
import type { LockHistoryEvent, LockHistoryKind } from '../../contract/insight.js';

export type { LockHistoryEvent, LockHistoryKind };

export const DEFAULT_LOCK_HISTORY_CAPACITY = 10_000;

export class LockHistory {
  private readonly ring: (LockHistoryEvent | undefined)[];
  private next = 0;

  constructor(readonly capacity = DEFAULT_LOCK_HISTORY_CAPACITY) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive integer');
    this.ring = new Array(capacity);
  }

  record(event: LockHistoryEvent): void {
    this.ring[this.next % this.capacity] = event;
    this.next++;
  }

  /** The newest `limit` events of `key`, newest first. */
  forKey(key: string, limit: number): LockHistoryEvent[] {
    const found: LockHistoryEvent[] = [];
    const oldest = Math.max(0, this.next - this.capacity);
    for (let i = this.next - 1; i >= oldest && found.length < limit; i--) {
      const event = this.ring[i % this.capacity]!;
      if (event.key === key) found.push(event);
    }
    return found;
  }
}
