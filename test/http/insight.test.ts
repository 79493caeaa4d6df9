/**
 * Operator insight over HTTP (issue 14, C3): A7 most contended keys, the
 * per-key history, the wait-for graph and A1's sort=age, on every store.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually, httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { STORES } from '../support/stores.js';

const expectError = (answer: { status: number; body: any }, status: number, code: string) => {
  expect(answer.status).toBe(status);
  expect(Object.keys(answer.body)).toEqual(['error']);
  expect(answer.body.error.code).toBe(code);
};

describe.each(STORES)('insight routes on %s', (storeName) => {
  let server: TestServer;
  let api: ReturnType<typeof httpClient>;
  const get = (path: string, token?: string) => api.call('GET', path, undefined, token ? { authorization: `Bearer ${token}` } : {});

  beforeAll(async () => {
    server = await startServer({ store: storeName });
    api = httpClient(server.url);
  });
  afterAll(async () => {
    await server?.stop();
  });

  const open = async (owner: string) => {
    const answer = await api.openSession({ owner, ttlMillis: 60_000 });
    expect(answer.status).toBe(201);
    return answer.body.sessionId as string;
  };

  test('A7: after 30 contended attempts on one key and 3 on another, a viewer sees them ranked in that order', async () => {
    const holder = await open('hot-holder');
    expect((await api.acquire('insight/hot', { sessionId: holder })).status).toBe(200);
    expect((await api.acquire('insight/warm', { sessionId: holder })).status).toBe(200);
    // Three contenders, so no session's own contention budget (50/s, burst 100) is the limit.
    const contenders = [await open('c1'), await open('c2'), await open('c3')];
    for (let i = 0; i < 30; i++) {
      expect((await api.acquire('insight/hot', { sessionId: contenders[i % 3] })).status).toBe(409);
    }
    for (let i = 0; i < 3; i++) {
      expect((await api.acquire('insight/warm', { sessionId: contenders[i] })).status).toBe(409);
    }

    const answer = await get('/v1/admin/contention', server.viewerToken);
    expect(answer.status).toBe(200);
    expect(answer.body.windowMillis).toBe(60_000);
    expect(answer.body.items).toEqual([
      { key: 'insight/hot', contended: 30, waiters: 0, holderSessionId: holder, holderOwner: 'hot-holder' },
      { key: 'insight/warm', contended: 3, waiters: 0, holderSessionId: holder, holderOwner: 'hot-holder' },
    ]);
    expect((await get('/v1/admin/contention?limit=1', server.viewerToken)).body.items.map((i: { key: string }) => i.key)).toEqual([
      'insight/hot',
    ]);

    // A freed key stays ranked, without a holder.
    await api.admin(server.operatorToken).revoke('insight/warm', { reason: 'insight test' });
    const freed = (await get('/v1/admin/contention', server.viewerToken)).body.items[1];
    expect(freed).toEqual({ key: 'insight/warm', contended: 3, waiters: 0 });
  });

  test('A7 and the other insight routes refuse the unauthenticated and validate their query', async () => {
    for (const path of ['/v1/admin/contention', '/v1/admin/waits', '/v1/admin/locks/x/history']) {
      expectError(await get(path), 401, 'UNAUTHENTICATED');
      expectError(await get(path, 'not-a-token'), 401, 'UNAUTHENTICATED');
    }
    for (const query of ['limit=0', 'limit=101', 'limit=abc', 'limit=-1', 'other=1']) {
      expectError(await get(`/v1/admin/contention?${query}`, server.viewerToken), 400, 'VALIDATION_FAILED');
    }
    expectError(await get('/v1/admin/waits?x=1', server.viewerToken), 400, 'VALIDATION_FAILED');
    expectError(await get('/v1/admin/locks/x/history?limit=501', server.viewerToken), 400, 'VALIDATION_FAILED');
    expectError(await get('/v1/admin/locks/%E0%A4%A/history', server.viewerToken), 400, 'VALIDATION_FAILED');
    expectError(await get('/v1/admin/locks?sort=oldest', server.viewerToken), 400, 'VALIDATION_FAILED');
    expectError(await get('/v1/admin/locks?sort=age&cursor=abc', server.viewerToken), 400, 'VALIDATION_FAILED');
  });

  test('per-key history: grants, release, revoke, expiry and session end with tokens and who, newest first, plus the audit', async () => {
    const key = 'insight/story/a b'; // a space and a slash survive the path
    const a = await open('worker-a');
    const g1 = (await api.acquire(key, { sessionId: a })).body;
    await api.release(key, { sessionId: a, fencingToken: g1.fencingToken });
    const g2 = (await api.acquire(key, { sessionId: a })).body;
    const revoke = (await api.admin(server.operatorToken).revoke(key, { reason: 'INC-9 wedged' })).body;
    const b = await open('worker-b');
    const g3 = (await api.acquire(key, { sessionId: b })).body;
    await api.admin(server.operatorToken).kill(b, { reason: 'runaway' });
    const g4 = (await api.acquire(key, { sessionId: a, ttlMillis: 1000 })).body;
    await eventually(async () => {
      const h = await get(`/v1/admin/locks/${encodeURIComponent(key)}/history`, server.viewerToken);
      return h.body.items[0]?.kind === 'expired';
    });

    const history = await get(`/v1/admin/locks/${encodeURIComponent(key)}/history`, server.viewerToken);
    expect(history.status).toBe(200);
    expect(history.body.key).toBe(key);
    const story = history.body.items.map((e: any) => [e.kind, e.fencingToken, e.sessionId, e.actor ?? null, e.cause ?? null]);
    expect(story).toEqual([
      ['expired', g4.fencingToken, a, null, 'ttl'],
      ['granted', g4.fencingToken, a, null, null],
      ['session_ended', g3.fencingToken, b, 'test-operator', 'session_killed'],
      ['granted', g3.fencingToken, b, null, null],
      ['revoked', g2.fencingToken, a, 'test-operator', null],
      ['granted', g2.fencingToken, a, null, null],
      ['released', g1.fencingToken, a, null, null],
      ['granted', g1.fencingToken, a, null, null],
    ]);
    const revoked = history.body.items.find((e: any) => e.kind === 'revoked');
    expect(revoked).toMatchObject({ owner: 'worker-a', reason: 'INC-9 wedged', auditId: revoke.auditId });
    expect(revoked.heldMillis).toBeGreaterThanOrEqual(0);
    expect(history.body.audit.map((e: any) => e.action)).toEqual(['lock.revoke']);
    expect(history.body.audit[0].id).toBe(revoke.auditId);
    expect((await get(`/v1/admin/locks/${encodeURIComponent(key)}/history?limit=2`, server.viewerToken)).body.items).toHaveLength(2);
    expect((await get('/v1/admin/locks/insight%2Fnever/history', server.viewerToken)).body).toEqual({ key: 'insight/never', items: [], audit: [] });
  });

  test('waits: a waiting acquire shows as waiter → key → holder, with their owners and no cycle (from the fleet wait state)', async () => {
    const holder = await open('w-holder');
    const waiter = await open('w-waiter');
    const grant = (await api.acquire('insight/wait', { sessionId: holder })).body;
    const waiting = api.acquire('insight/wait', { sessionId: waiter, waitMillis: 10_000 });
    const graph = await eventually(async () => {
      const answer = await get('/v1/admin/waits', server.viewerToken);
      return answer.body.items.some((w: any) => w.holderSessionId === holder) ? answer.body : null;
    });
    expect(graph).toEqual({
      scope: 'fleet',
      items: [{ waiterSessionId: waiter, key: 'insight/wait', holderSessionId: holder, waiterOwner: 'w-waiter', holderOwner: 'w-holder' }],
      cycles: [],
      broken: [],
    });
    await api.release('insight/wait', { sessionId: holder, fencingToken: grant.fencingToken });
    expect((await waiting).status).toBe(200);
    expect((await get('/v1/admin/waits', server.viewerToken)).body.items).toEqual([]);
  });

  test('A1 sort=age: the oldest grants of all locks first, one page', async () => {
    const s = await open('ager');
    const grants: { key: string; grantedAt: number }[] = [];
    for (const key of ['age/z', 'age/a', 'age/m']) {
      const answer = await api.acquire(key, { sessionId: s });
      expect(answer.status).toBe(200);
      grants.push(answer.body);
    }
    // Oldest grant first; equal instants (store clock milliseconds) by key.
    const expected = [...grants].sort((x, y) => x.grantedAt - y.grantedAt || (x.key < y.key ? -1 : 1)).map((g) => g.key);
    const page = await get('/v1/admin/locks?sort=age&prefix=age/&limit=2', server.viewerToken);
    expect(page.status).toBe(200);
    expect(page.body.items.map((l: any) => l.key)).toEqual(expected.slice(0, 2));
    expect(page.body.items[0]).toMatchObject({ held: true, sessionId: s, owner: 'ager', waiterCount: 0 });
    expect(page.body.nextCursor).toBeNull();
    const byKey = await get('/v1/admin/locks?sort=key&prefix=age/', server.viewerToken);
    expect(byKey.body.items.map((l: any) => l.key)).toEqual(['age/a', 'age/m', 'age/z']);
  });
});
