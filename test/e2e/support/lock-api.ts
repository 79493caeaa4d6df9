/**
 * The test client: plain HTTP to the lock server (C3), so each assertion sees the
 * server's exact answer (status and error code), not an SDK's interpretation.
 *
 * It remembers the sessionToken of every session it opened and sends it as the
 * bearer of that session's L2–L6 calls (SPEC "Session capability"), so specs
 * keep passing session ids around as before.
 */
import type { AuditEntry, LockGrant, LockInfo, Page } from '../../../contract/records.js';

export interface Answer<T> {
  status: number;
  body: T;
  code?: string;
}

export class LockApi {
  readonly #sessionTokens = new Map<string, string>();

  constructor(
    readonly baseUrl: string,
    private readonly adminToken?: string,
  ) {}

  /** `bearer`: `true` for the admin token, a session id for that session's token, else none. */
  async call<T>(method: string, path: string, body?: unknown, bearer: boolean | { session: string } = false): Promise<Answer<T>> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (bearer === true && this.adminToken) headers.authorization = `Bearer ${this.adminToken}`;
    if (typeof bearer === 'object') {
      const token = this.#sessionTokens.get(bearer.session);
      if (token) headers.authorization = `Bearer ${token}`;
    }
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    const parsed = text ? (JSON.parse(text) as T & { error?: { code?: string } }) : (undefined as T);
    return { status: response.status, body: parsed, code: (parsed as { error?: { code?: string } } | undefined)?.error?.code };
  }

  async openSession(owner: string, ttlMillis = 60_000): Promise<string> {
    const answer = await this.call<{ sessionId: string; sessionToken: string }>('POST', '/v1/sessions', { owner, ttlMillis });
    if (answer.status !== 201) throw new Error(`open session: ${answer.status} ${JSON.stringify(answer.body)}`);
    this.#sessionTokens.set(answer.body.sessionId, answer.body.sessionToken);
    return answer.body.sessionId;
  }

  /** The sessionToken L1 returned for a session this client opened (for leak checks). */
  sessionTokenOf(sessionId: string): string | undefined {
    return this.#sessionTokens.get(sessionId);
  }

  heartbeat(sessionId: string) {
    return this.call<unknown>('POST', `/v1/sessions/${encodeURIComponent(sessionId)}/heartbeat`, {}, { session: sessionId });
  }

  closeSession(sessionId: string) {
    return this.call<unknown>('DELETE', `/v1/sessions/${encodeURIComponent(sessionId)}`, undefined, { session: sessionId });
  }

  acquire(key: string, sessionId: string, ttlMillis = 120_000) {
    return this.call<LockGrant>(
      'POST',
      `/v1/locks/${encodeURIComponent(key)}/acquire`,
      { sessionId, ttlMillis },
      { session: sessionId },
    );
  }

  async mustAcquire(key: string, sessionId: string, ttlMillis = 120_000): Promise<LockGrant> {
    const answer = await this.acquire(key, sessionId, ttlMillis);
    if (answer.status !== 200) throw new Error(`acquire ${key}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  }

  renew(key: string, sessionId: string, fencingToken: string) {
    return this.call<LockGrant>(
      'POST',
      `/v1/locks/${encodeURIComponent(key)}/renew`,
      { sessionId, fencingToken },
      { session: sessionId },
    );
  }

  release(key: string, sessionId: string, fencingToken: string) {
    return this.call<unknown>(
      'POST',
      `/v1/locks/${encodeURIComponent(key)}/release`,
      { sessionId, fencingToken },
      { session: sessionId },
    );
  }

  readLock(key: string) {
    return this.call<LockInfo>('GET', `/v1/locks/${encodeURIComponent(key)}`);
  }

  revoke(key: string, reason: string, expectedFencingToken?: string) {
    return this.call<unknown>('POST', `/v1/admin/locks/${encodeURIComponent(key)}/revoke`, { reason, expectedFencingToken }, true);
  }

  audit(query = 'limit=1000') {
    return this.call<Page<AuditEntry>>('GET', `/v1/admin/audit?${query}`, undefined, true);
  }
}
