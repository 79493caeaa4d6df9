/**
 * The session capability (C3 "Session capability (v2)", "Clients (v2)"): what a
 * third party can do with what L7 shows, and where the sessionToken never appears.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually, httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';

const STORES = (process.env.HOLDFAST_TEST_STORES?.split(',') ?? ['embedded', 'postgres']).filter((s) => s !== 'etcd') as ('embedded' | 'postgres')[];

describe.each(STORES)('session capability on %s', (storeName) => {
  let server: TestServer;
  let api: ReturnType<typeof httpClient>;
  let keys = 0;
  const freshKey = () => `cap/${storeName}/${++keys}/${Date.now()}`;

  beforeAll(async () => {
    server = await startServer({ store: storeName });
    api = httpClient(server.url);
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('with only what L7 shows, a third party cannot release, renew, heartbeat or close: 401 and nothing changes', async () => {
    const holder = (await api.openSession({ ttlMillis: 60_000, owner: 'holder' })).body;
    const thief = (await api.openSession({ owner: 'thief' })).body;
    const key = freshKey();
    expect((await api.acquire(key, { sessionId: holder.sessionId })).status).toBe(200);
    const shown = (await api.read(key)).body;
    const sessionsBefore = (await api.admin(server.viewerToken).listSessions('?limit=1000')).body.items;
    const holderBefore = sessionsBefore.find((s: { sessionId: string }) => s.sessionId === holder.sessionId);

    const attempts = [
      { authorization: '' },
      { authorization: `Bearer ${thief.sessionToken}` },
      { authorization: 'Bearer made-up-token' },
      { authorization: `Bearer ${holder.sessionToken}x` },
    ];
    for (const headers of attempts) {
      const body = { sessionId: holder.sessionId, fencingToken: shown.fencingToken };
      for (const answer of [
        await api.release(key, body, headers),
        await api.renew(key, { ...body, ttlMillis: 600_000 }, headers),
        await api.heartbeat(holder.sessionId, headers),
        await api.closeSession(holder.sessionId, headers),
        await api.acquire(freshKey(), { sessionId: holder.sessionId }, headers),
      ]) {
        expect(answer.status).toBe(401);
        expect(answer.body.error).toMatchObject({ code: 'UNAUTHENTICATED', retryable: false });
      }
    }
    // Nothing changed: same grant, same expiry; the session's expiry untouched; no lock added.
    expect((await api.read(key)).body).toEqual(shown);
    const sessionsAfter = (await api.admin(server.viewerToken).listSessions('?limit=1000')).body.items;
    expect(sessionsAfter.find((s: { sessionId: string }) => s.sessionId === holder.sessionId)).toEqual(holderBefore);
    // The holder, with its own token, still can.
    expect((await api.renew(key, { sessionId: holder.sessionId, fencingToken: shown.fencingToken })).status).toBe(200);
    expect((await api.release(key, { sessionId: holder.sessionId, fencingToken: shown.fencingToken })).status).toBe(200);
  });

  test('a session that is not live is 404 SESSION_NOT_FOUND whatever token is sent', async () => {
    const gone = (await api.openSession({})).body;
    expect((await api.closeSession(gone.sessionId)).status).toBe(204);
    for (const headers of [{}, { authorization: '' }, { authorization: 'Bearer wrong' }] as Record<string, string>[]) {
      expect((await api.heartbeat(gone.sessionId, headers)).body.error.code).toBe('SESSION_NOT_FOUND');
      expect((await api.acquire(freshKey(), { sessionId: gone.sessionId }, headers)).status).toBe(404);
      expect((await api.release(freshKey(), { sessionId: gone.sessionId, fencingToken: '1' }, headers)).status).toBe(404);
    }
    expect((await api.heartbeat('s_neverExisted')).status).toBe(404);
  });

  test('L2 without a body is accepted; L5 without ttlMillis keeps the grant’s own TTL', async () => {
    const session = (await api.openSession({})).body;
    const beat = await fetch(`${server.url}/v1/sessions/${session.sessionId}/heartbeat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session.sessionToken}` },
    });
    expect(beat.status).toBe(200);
    expect(((await beat.json()) as { expiresAt: number }).expiresAt).toBeGreaterThanOrEqual(session.expiresAt);
    const key = freshKey();
    const grant = (await api.acquire(key, { sessionId: session.sessionId, ttlMillis: 600_000 })).body;
    const renewed = (await api.renew(key, { sessionId: session.sessionId, fencingToken: grant.fencingToken })).body;
    expect(renewed.ttlMillis).toBe(600_000);
    expect(renewed.expiresAt).toBeGreaterThanOrEqual(grant.expiresAt);
  });

  test('the sessionToken never appears in L7, A1, A2, /metrics or the event log', async () => {
    const session = (await api.openSession({ owner: 'secretive' })).body;
    const key = freshKey();
    const grant = (await api.acquire(key, { sessionId: session.sessionId })).body;
    await api.renew(key, { sessionId: session.sessionId, fencingToken: grant.fencingToken });
    await api.heartbeat(session.sessionId);
    await api.release(key, { sessionId: session.sessionId, fencingToken: '1' });
    await api.acquire(key, { sessionId: session.sessionId });
    const admin = api.admin(server.operatorToken);
    const seen = [
      JSON.stringify((await api.read(key)).body),
      JSON.stringify((await admin.listLocks('?limit=1000')).body),
      JSON.stringify((await admin.listSessions('?limit=1000')).body),
      JSON.stringify((await admin.summary()).body),
      await (await fetch(`${server.url}/metrics`)).text(),
      JSON.stringify(server.logs),
    ].join('\n');
    expect(seen).toContain(session.sessionId);
    expect(seen).not.toContain(session.sessionToken);
    await admin.kill(session.sessionId, { reason: 'done' });
    expect(JSON.stringify(server.logs)).not.toContain(session.sessionToken);
  });
});

describe('client tokens (tokens file with a client entry)', () => {
  let server: TestServer;
  // A real token: a weak one (`client-cccc…`) is refused at start (lock/token-strength.ts).
  const clientToken = `client-${randomBytes(16).toString('hex')}`;

  beforeAll(async () => {
    server = await startServer({ store: 'embedded', tokens: [{ name: 'payments-client', token: clientToken, role: 'client' }] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('L1 and L7 need a bearer token of any role; a client token may not use admin routes', async () => {
    const anonymous = httpClient(server.url);
    expect((await anonymous.openSession({})).status).toBe(401);
    expect((await anonymous.read('k')).status).toBe(401);
    expect((await anonymous.openSession({}, { authorization: 'Bearer not-a-token' })).status).toBe(401);

    const client = httpClient(server.url, { clientToken });
    const session = await client.openSession({});
    expect(session.status).toBe(201);
    expect((await client.read('k')).status).toBe(200);
    // L2–L6 use the session's own token, not the client token.
    expect((await client.acquire('k', { sessionId: session.body.sessionId })).status).toBe(200);
    expect((await client.heartbeat(session.body.sessionId, { authorization: `Bearer ${clientToken}` })).status).toBe(401);
    // Viewer and operator tokens also open sessions (any role).
    expect((await anonymous.openSession({}, { authorization: `Bearer ${server.viewerToken}` })).status).toBe(201);

    const asClient = client.admin(clientToken);
    expect((await asClient.listLocks()).status).toBe(403);
    expect((await asClient.revoke('k', { reason: 'x' })).status).toBe(403);
  });
});

describe('waits per session are capped (HOLDFAST_MAX_WAITS_PER_SESSION)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ store: 'embedded', env: { HOLDFAST_MAX_WAITS_PER_SESSION: '2' } });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('a third concurrent wait of one session is 429 CONTENTION_EXCEEDED with Retry-After; other sessions still wait', async () => {
    const api = httpClient(server.url);
    const holder = (await api.openSession({})).body.sessionId as string;
    const waiter = (await api.openSession({})).body.sessionId as string;
    const other = (await api.openSession({})).body.sessionId as string;
    const grant = (await api.acquire('capped', { sessionId: holder })).body;
    const waits = [api.acquire('capped', { sessionId: waiter, waitMillis: 20_000 }), api.acquire('capped', { sessionId: waiter, waitMillis: 20_000 })];
    await eventually(async () => (await api.read('capped')).body.waiterCount === 2);
    const third = await api.acquire('capped', { sessionId: waiter, waitMillis: 20_000 });
    expect(third.status).toBe(429);
    expect(third.body.error).toMatchObject({ code: 'CONTENTION_EXCEEDED', retryable: true });
    expect(third.body.error.message).toContain('HOLDFAST_MAX_WAITS_PER_SESSION');
    expect(third.headers.get('retry-after')).toBe('1');
    const otherWait = api.acquire('capped', { sessionId: other, waitMillis: 20_000 });
    await eventually(async () => (await api.read('capped')).body.waiterCount === 3);
    expect((await api.release('capped', { sessionId: holder, fencingToken: grant.fencingToken })).status).toBe(200);
    await api.closeSession(waiter);
    await api.closeSession(other);
    await Promise.allSettled([...waits, otherWait]);
  });
});
