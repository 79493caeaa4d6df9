/**
 * What this process last saw of each session, so a session-scoped call need
 * not read the session before its txn.
 *
 * Safe to trust because what the store uses from it never changes within one
 * incarnation of a session (create revision, token hash, lease id), and every
 * txn that relies on it compares the liveness key's create revision: an ended
 * or replaced session fails the compare and the store re-reads. Whether the
 * session is live is never taken from here.
 */
import type { SessionRow } from './records.js';

const MAX_ENTRIES = 50_000;

export class SessionCache {
  private readonly rows = new Map<string, SessionRow>();

  get(sessionId: string): SessionRow | undefined {
    return this.rows.get(sessionId);
  }

  remember(row: SessionRow): void {
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
