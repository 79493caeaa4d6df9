/**
 * Who is behind a session, for fair shares of the shared contention budget: the token that
 * opened it when the server needs client tokens, else its declared owner (an open server has
 * no identities; the owner still keeps an honest but greedy client to its share). Sessions
 * opened here are known at once; one opened through another instance is read from the store
 * the first time it contends here. A failed read never fails the request: that session is
 * then its own principal, as fair as the per-session budget already makes it.
 */
import type { LockStore, SessionRecord } from '../store/spi.js';

/** Bounded like the verified-credentials cache: a session costs one entry until it ends. */
const MAX_REMEMBERED = 10_000;

export function principalOf(session: Pick<SessionRecord, 'owner' | 'openedBy'>): string {
  return session.openedBy !== undefined ? `token:${session.openedBy}` : `owner:${session.owner}`;
}

export class SessionPrincipals {
  private readonly known = new Map<string, string>();

  constructor(private readonly store: Pick<LockStore, 'getSession'>) {}

  remember(session: Pick<SessionRecord, 'sessionId' | 'owner' | 'openedBy'>): void {
    if (this.known.size >= MAX_REMEMBERED) this.known.delete(this.known.keys().next().value!);
    this.known.set(session.sessionId, principalOf(session));
  }

  async of(sessionId: string): Promise<string> {
    const known = this.known.get(sessionId);
    if (known !== undefined) return known;
    try {
      const session = await this.store.getSession(sessionId);
      if (session) {
        this.remember(session);
        return principalOf(session);
      }
    } catch {
      // The store's trouble is answered elsewhere; here it only costs this session its pooling.
    }
    return `session:${sessionId}`;
  }

  forget(sessionId: string): void {
    this.known.delete(sessionId);
  }
}
