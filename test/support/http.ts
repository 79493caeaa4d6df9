/**
 * A thin JSON-over-HTTP helper for black-box tests of the C3 surface. Every
 * answer is checked against docs/openapi.json (test/support/openapi.ts): an
 * undocumented status, content type or body shape fails the calling test.
 */
import { openApiChecker } from './openapi.js';

export interface Answer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/**
 * Session-scoped calls (L2–L6) send the sessionToken L1 answered for the session they
 * name, remembered per client; pass `headers` (e.g. `{authorization: ''}` or another
 * session's token) to send something else. `clientToken` goes with L1 and L7.
 */
export function httpClient(baseUrl: string, options: { clientToken?: string } = {}) {
  const sessionTokens = new Map<string, string>();
  const bearer = (token: string | undefined): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {});
  const asSession = (sessionId: unknown, headers: Record<string, string> = {}) => ({
    ...bearer(typeof sessionId === 'string' ? sessionTokens.get(sessionId) : undefined),
    ...headers,
  });
  const sessionOf = (body: Record<string, unknown>) => body.sessionId;
  async function call<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer<T>> {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    const contentType = response.headers.get('content-type');
    openApiChecker().assert({ method, path, status: response.status, contentType, text });
    // JSON answers parsed; any other (the /metrics text) kept as text.
    // (An audit export, application/x-ndjson, is kept as text: one JSON object a line.)
    const parsed = text === '' ? undefined : /[/+]json/.test(contentType ?? '') ? JSON.parse(text) : text;
    return { status: response.status, body: parsed as T, headers: response.headers };
  }
  const key = (k: string) => encodeURIComponent(k);
  return {
    call,
    openSession: async (body: Record<string, unknown> = {}, headers: Record<string, string> = {}) => {
      const answer = await call('POST', '/v1/sessions', body, { ...bearer(options.clientToken), ...headers });
      if (answer.status === 201) sessionTokens.set(answer.body.sessionId, answer.body.sessionToken);
      return answer;
    },
    /** The sessionToken L1 answered for a session this client opened. */
    sessionToken: (sessionId: string) => sessionTokens.get(sessionId),
    heartbeat: (sessionId: string, headers?: Record<string, string>) =>
      call('POST', `/v1/sessions/${sessionId}/heartbeat`, {}, asSession(sessionId, headers)),
    closeSession: (sessionId: string, headers?: Record<string, string>) =>
      call('DELETE', `/v1/sessions/${sessionId}`, undefined, asSession(sessionId, headers)),
    acquire: (k: string, body: Record<string, unknown>, headers?: Record<string, string>) =>
      call('POST', `/v1/locks/${key(k)}/acquire`, body, asSession(sessionOf(body), headers)),
    renew: (k: string, body: Record<string, unknown>, headers?: Record<string, string>) =>
      call('POST', `/v1/locks/${key(k)}/renew`, body, asSession(sessionOf(body), headers)),
    release: (k: string, body: Record<string, unknown>, headers?: Record<string, string>) =>
      call('POST', `/v1/locks/${key(k)}/release`, body, asSession(sessionOf(body), headers)),
    read: (k: string, headers: Record<string, string> = {}) => call('GET', `/v1/locks/${key(k)}`, undefined, { ...bearer(options.clientToken), ...headers }),
    /** L8; `query` as sent (e.g. `?after=12&waitMillis=5000`). */
    watch: (k: string, query = '', headers: Record<string, string> = {}) =>
      call('GET', `/v1/locks/${key(k)}/watch${query}`, undefined, { ...bearer(options.clientToken), ...headers }),
    admin: (token: string | undefined) => {
      const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
      return {
        listLocks: (query = '') => call('GET', `/v1/admin/locks${query}`, undefined, auth),
        listSessions: (query = '') => call('GET', `/v1/admin/sessions${query}`, undefined, auth),
        revoke: (k: string, body: unknown) => call('POST', `/v1/admin/locks/${key(k)}/revoke`, body, auth),
        kill: (sessionId: string, body: unknown) => call('POST', `/v1/admin/sessions/${sessionId}/kill`, body, auth),
        audit: (query = '') => call('GET', `/v1/admin/audit${query}`, undefined, auth),
        verify: () => call('GET', '/v1/admin/audit/verify', undefined, auth),
        /** A4x: the export's text (JSON lines). */
        exportAudit: () => call<string>('GET', '/v1/admin/audit/export', undefined, auth),
        pruneAudit: (body: unknown) => call('POST', '/v1/admin/audit/prune', body, auth),
        summary: () => call('GET', '/v1/admin/summary', undefined, auth),
      };
    },
  };
}

/**
 * Polls `check` until it returns a truthy value or the deadline passes (for asynchronous effects such as sweeps).
 * The deadline only bounds a failing test: passing costs no more with a generous one, so the default is far
 * (≥ 10×) above what the slowest use needs on a quiet machine (an instance heartbeat or a 1 s TTL plus a sweep).
 */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMillis = 30_000, everyMillis = 50): Promise<T> {
  const deadline = Date.now() + timeoutMillis;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMillis} ms`);
    await new Promise((r) => setTimeout(r, everyMillis));
  }
}
