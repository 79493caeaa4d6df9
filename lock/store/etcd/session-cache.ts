/**
 * What this process last saw of each session, so an acquire is one txn
 * instead of read-then-txn.
 *
 * Safe to trust because a session only changes in two ways: a heartbeat moves
 * `expiresAt` forward (a cached value is then too early, never too late: when
 * the cache says "expired" the store re-reads), and an end deletes the key
 * (every txn that relies on the cache compares the key's create revision, so
 * an ended or replaced session fails the compare).
 */
import type { SessionRow } from './records.js';

const MAX_ENTRIES = 50_000;

export class SessionCache {
  private readonly rows = new Map<string, SessionRow>();

  get(sessionId: string): SessionRow | undefined {
    return this.rows.get(sessionId);
  }

  /** Keeps the row with the later expiry, so an older read cannot shorten a session. */
  remember(row: SessionRow): void {
    const known = this.rows.get(row.session.sessionId);
    if (known && known.createRevision === row.createRevision && known.session.expiresAt > row.session.expiresAt) return;
    this.rows.delete(row.session.sessionId);
    this.rows.set(row.session.sessionId, row);
    if (this.rows.size > MAX_ENTRIES) {
      const oldest = this.rows.keys().next();
      if (!oldest.done) this.rows.delete(oldest.value);
    }
  }

  forget(sessionId: string): void {
    this.rows.delete(sessionId);
  }
}
