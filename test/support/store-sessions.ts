/** Store-level test helpers: sessions with their credentials, as core would open them. */
import { randomBytes } from 'node:crypto';
import { hashSessionToken, newSessionToken } from '../../lock/core/session-token.js';
import type { LockStore, SessionCredential, SessionRecord } from '../../lock/store/spi.js';

export interface TestSession {
  record: SessionRecord;
  credential: SessionCredential;
  /** The same session id with a token that is not its own. */
  impostor: SessionCredential;
}

export async function openTestSession(
  store: LockStore,
  options: { ttlMillis?: number; owner?: string; sessionId?: string; openedBy?: string } = {},
): Promise<TestSession> {
  const token = newSessionToken();
  const sessionId = options.sessionId ?? `s_${randomBytes(12).toString('base64url')}`;
  const record = await store.openSession({
    sessionId,
    owner: options.owner ?? 'test',
    ttlMillis: options.ttlMillis ?? 60_000,
    tokenHash: hashSessionToken(token),
    ...(options.openedBy !== undefined ? { openedBy: options.openedBy } : {}),
  });
  return {
    record,
    credential: { sessionId, tokenHash: hashSessionToken(token) },
    impostor: { sessionId, tokenHash: hashSessionToken(newSessionToken()) },
  };
}
