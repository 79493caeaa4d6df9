/**
 * K1–K5 on a real server (issue 25, console replicas): the lock server keeps the console's one-time
 * sign-in codes and console sessions. Every answer is checked against the OpenAPI document
 * (test/support/http.ts). Pinned here:
 * - nothing is recorded for an unauthenticated caller: K1/K3–K5 without a token or with a client
 *   token are 401/403 and leave no code or session;
 * - a code redeems once, answers the sealed token, name and role it was minted with, and a second
 *   redeem is refused (two instances racing one take: the store conformance suite);
 * - five wrong secrets lock a pending code for everyone, the right secret included (LOCKED with
 *   retryAfterMillis), and a new code of that token works at once;
 * - a token has at most 8 pending codes: a ninth drops its oldest;
 * - a console session is found only with the token that opened it, and a sign-out (K5) is refused
 *   by every instance at once.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CONSOLE_SIGN_IN } from '../../lock/http/console-sign-in.js';
import { httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';

const clientToken = `cl-${randomBytes(16).toString('hex')}`;

describe('console sign-in kept by the lock server (K1–K5)', () => {
  let server: TestServer;
  let api: ReturnType<typeof httpClient>;
  const as = (token: string | undefined) => (method: string, path: string, body?: unknown) =>
    api.call(method, path, body, token ? { authorization: `Bearer ${token}` } : {});

  beforeAll(async () => {
    server = await startServer({ tokens: [{ name: 'ci-client', token: clientToken, role: 'client' }] });
    api = httpClient(server.url);
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('without an admin token nothing is minted or opened', async () => {
    const nobody = as(undefined);
    expect((await nobody('POST', '/v1/console/codes', { sealedToken: 'x' })).status).toBe(401);
    expect((await nobody('POST', '/v1/console/sessions')).status).toBe(401);
    expect((await as('not-a-token')('POST', '/v1/console/sessions')).status).toBe(401);
    expect((await as(clientToken)('POST', '/v1/console/codes', { sealedToken: 'x' })).status).toBe(403);
    expect((await nobody('GET', `/v1/console/sessions/${'a'.repeat(32)}`)).status).toBe(401);
    expect((await nobody('DELETE', `/v1/console/sessions/${'a'.repeat(32)}`)).status).toBe(401);
  });

  test('malformed input is 400 with the pinned body, never a 500', async () => {
    const viewer = as(server.viewerToken);
    for (const body of [{}, { sealedToken: '' }, { sealedToken: 'has space' }, { sealedToken: 'x', extra: 1 }, { sealedToken: 'x'.repeat(8193) }]) {
      const answer = await viewer('POST', '/v1/console/codes', body);
      expect(answer.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(answer.body.error.code).toBe('VALIDATION_FAILED');
    }
    for (const body of [{}, { code: 'short' }, { code: 7 }, { code: `${'a'.repeat(31)}!` }]) {
      expect((await api.call('POST', '/v1/console/codes/redeem', body)).status).toBe(400);
    }
    expect((await viewer('GET', '/v1/console/sessions/short')).status).toBe(400);
  });

  test('a code redeems once, with what it was minted with', async () => {
    const minted = await as(server.operatorToken)('POST', '/v1/console/codes', { sealedToken: 'sealed-op' });
    expect(minted.status).toBe(201);
    expect(minted.body.code).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const redeemed = await api.call('POST', '/v1/console/codes/redeem', { code: minted.body.code });
    expect(redeemed.body).toEqual({ outcome: 'SIGNED_IN', name: 'test-operator', role: 'operator', sealedToken: 'sealed-op' });
    const again = await api.call('POST', '/v1/console/codes/redeem', { code: minted.body.code });
    expect(again.status).toBe(401);
    expect(again.body.error.code).toBe('UNAUTHENTICATED');
  });

  test('five wrong secrets lock a pending code for everyone, the right one included', async () => {
    const minted = await as(server.viewerToken)('POST', '/v1/console/codes', { sealedToken: 'sealed-vw' });
    const code: string = minted.body.code;
    const wrong = () => `${code.slice(0, CONSOLE_SIGN_IN.codeIdChars)}${randomBytes(18).toString('base64url')}`;
    for (let i = 0; i < CONSOLE_SIGN_IN.maxMissesPerCode; i++) {
      expect((await api.call('POST', '/v1/console/codes/redeem', { code: wrong() })).status).toBe(401);
    }
    const locked = await api.call('POST', '/v1/console/codes/redeem', { code });
    expect(locked.status).toBe(200);
    expect(locked.body.outcome).toBe('LOCKED');
    expect(locked.body.retryAfterMillis).toBeGreaterThan(0);
    expect(locked.body.retryAfterMillis).toBeLessThanOrEqual(CONSOLE_SIGN_IN.missWindowMillis + 2_000);
    // A new code of the same token is not held back.
    const fresh = await as(server.viewerToken)('POST', '/v1/console/codes', { sealedToken: 'sealed-vw-2' });
    expect((await api.call('POST', '/v1/console/codes/redeem', { code: fresh.body.code })).body.outcome).toBe('SIGNED_IN');
  });

  test('a token keeps at most 8 pending codes: a ninth drops its oldest', async () => {
    const token = server.operatorToken;
    const codes: string[] = [];
    for (let i = 0; i <= CONSOLE_SIGN_IN.maxCodesPerIssuer; i++) codes.push((await as(token)('POST', '/v1/console/codes', { sealedToken: `s${i}` })).body.code);
    expect((await api.call('POST', '/v1/console/codes/redeem', { code: codes[0] })).status).toBe(401);
    for (const code of codes.slice(1)) expect((await api.call('POST', '/v1/console/codes/redeem', { code })).body.outcome).toBe('SIGNED_IN');
  });

  test('a console session is found only with its own token, and sign-out ends it on every instance', async () => {
    const opened = await as(server.viewerToken)('POST', '/v1/console/sessions');
    expect(opened.status).toBe(201);
    expect(opened.body).toMatchObject({ name: 'test-viewer', role: 'viewer' });
    const path = `/v1/console/sessions/${opened.body.consoleSessionId}`;
    expect((await as(server.viewerToken)('GET', path)).body).toMatchObject({ consoleSessionId: opened.body.consoleSessionId, name: 'test-viewer' });
    // Another token does not find it, and cannot end it.
    expect((await as(server.operatorToken)('GET', path)).status).toBe(404);
    expect((await as(server.operatorToken)('DELETE', path)).status).toBe(204);
    expect((await as(server.viewerToken)('GET', path)).status).toBe(200);

    expect((await as(server.viewerToken)('DELETE', path)).status).toBe(204);
    const after = await as(server.viewerToken)('GET', path);
    expect(after.status).toBe(404);
    expect(after.body.error.code).toBe('SESSION_NOT_FOUND');
    expect((await as(server.viewerToken)('DELETE', path)).status).toBe(204);
  });
});
