/**
 * The HTTP black-box suite of contract C3, run unchanged against every store.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { LockStore } from '../../lock/store/spi.js';
import { eventually, httpClient } from '../support/http.js';
import { waitOutcomeCount } from '../support/metrics.js';
import { startServer, type TestServer } from '../support/server.js';
import { STORES } from '../support/stores.js';

const expectError = (answer: { status: number; body: any }, status: number, code: string, retryable?: boolean) => {
  expect(answer.status).toBe(status);
  expect(Object.keys(answer.body)).toEqual(['error']);
  expect(Object.keys(answer.body.error).sort()).toEqual(['code', 'message', 'retryable']);
  expect(answer.body.error.code).toBe(code);
  expect(typeof answer.body.error.message).toBe('string');
  if (retryable !== undefined) expect(answer.body.error.retryable).toBe(retryable);
};

describe.each(STORES)('lock API on %s', (storeName) => {
  let server: TestServer;
  let api: ReturnType<typeof httpClient>;
  let tryAcquireCalls = 0;

  beforeAll(async () => {
    server = await startServer({
      store: storeName,
      wrapStore: (store) => countTryAcquire(store, () => tryAcquireCalls++),
    });
    api = httpClient(server.url);
  });
  afterAll(async () => {
    await server?.stop();
  });

  const open = async (body: Record<string, unknown> = {}) => {
    const answer = await api.openSession(body);
    expect(answer.status).toBe(201);
    return answer.body as { sessionId: string; owner: string; ttlMillis: number; expiresAt: number };
  };
  let keyCounter = 0;
  const freshKey = (label = 'k') => `${storeName}/${label}/${++keyCounter}/${Date.now()}`;

  test('a query parameter a route does not list is a 400 with the pinned body, and nothing is done', async () => {
    const session = await open();
    const { sessionId } = session;
    const key = encodeURIComponent(freshKey('query'));
    const asSession = { authorization: `Bearer ${api.sessionToken(sessionId)}` };
    const asOperator = { authorization: `Bearer ${server.operatorToken}` };
    const refused: [string, string, unknown, Record<string, string>][] = [
      ['POST', '/v1/sessions?bogus=1', {}, {}],
      ['POST', `/v1/sessions/${sessionId}/heartbeat?bogus=1`, {}, asSession],
      ['POST', `/v1/locks/${key}/acquire?bogus=1`, { sessionId }, asSession],
      ['GET', `/v1/locks/${key}?bogus=1`, undefined, {}],
      ['GET', '/v1/admin/summary?bogus=1', undefined, asOperator],
      ['POST', `/v1/admin/locks/${key}/revoke?bogus=1`, { reason: 'query check' }, asOperator],
      ['DELETE', `/v1/sessions/${sessionId}?bogus=1`, undefined, asSession],
    ];
    for (const [method, path, body, headers] of refused) expectError(await api.call(method, path, body, headers), 400, 'VALIDATION_FAILED', false);
    expect((await api.call('GET', `/v1/locks/${key}`)).body.held).toBe(false);
    expect((await api.heartbeat(sessionId)).status).toBe(200);
    expect((await api.admin(server.operatorToken).audit(`?target=${key}`)).body.items).toEqual([]);
  });

  test('L1 opens a session with defaults and the pinned shape; L2 extends it; L3 closes it', async () => {
    const before = Date.now();
    const session = await open({ owner: 'payout-worker-1' });
    expect(Object.keys(session).sort()).toEqual(['expiresAt', 'owner', 'sessionId', 'sessionToken', 'ttlMillis']);
    // >= 128 random bits, base64url.
    expect((session as unknown as { sessionToken: string }).sessionToken).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect(session.ttlMillis).toBe(15000);
    expect(session.owner).toBe('payout-worker-1');
    expect(session.expiresAt).toBeGreaterThanOrEqual(before + 15000);

    const beat = await api.heartbeat(session.sessionId);
    expect(beat.status).toBe(200);
    expect(beat.body.sessionId).toBe(session.sessionId);
    expect(beat.body.expiresAt).toBeGreaterThanOrEqual(session.expiresAt);

    expect((await api.closeSession(session.sessionId)).status).toBe(204);
    expectError(await api.heartbeat(session.sessionId), 404, 'SESSION_NOT_FOUND', false);
    expectError(await api.closeSession(session.sessionId), 404, 'SESSION_NOT_FOUND');
  });

  test('every response carries a request id, echoing a valid incoming one', async () => {
    const answer = await api.call('GET', '/healthz', undefined, { 'x-request-id': 'trace-me-123' });
    expect(answer.headers.get('x-request-id')).toBe('trace-me-123');
    const generated = await api.call('GET', '/healthz');
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(generated.headers.get('holdfast-backend')).toBe(server.backend);
  });

  test('L4 grants with the LockGrant shape; a second L4 by the holder returns the same grant', async () => {
    const session = await open();
    const key = freshKey();
    const first = await api.acquire(key, { sessionId: session.sessionId, ttlMillis: 20000 });
    expect(first.status).toBe(200);
    expect(Object.keys(first.body).sort()).toEqual(['expiresAt', 'fencingToken', 'grantedAt', 'key', 'limit', 'mode', 'sessionId', 'ttlMillis']);
    expect(first.body).toMatchObject({ mode: 'exclusive', limit: 1 });
    expect(first.body.key).toBe(key);
    expect(first.body.fencingToken).toMatch(/^[1-9][0-9]*$/);
    expect(first.body.expiresAt - first.body.grantedAt).toBe(20000);

    const again = await api.acquire(key, { sessionId: session.sessionId, ttlMillis: 60000 });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body); // same token, no TTL change
  });

  test('a release with a wrong token is LOCK_LOST and the lock stays held', async () => {
    const session = await open();
    const key = freshKey();
    const grant = (await api.acquire(key, { sessionId: session.sessionId })).body;
    const wrong = (BigInt(grant.fencingToken) + 1000n).toString();
    expectError(await api.release(key, { sessionId: session.sessionId, fencingToken: wrong }), 409, 'LOCK_LOST', false);
    const info = await api.read(key);
    expect(info.body).toMatchObject({ key, held: true, fencingToken: grant.fencingToken, sessionId: session.sessionId });
    const released = await api.release(key, { sessionId: session.sessionId, fencingToken: grant.fencingToken });
    expect(released.status).toBe(200);
    expect(released.body).toEqual({ key, released: true });
    expect((await api.read(key)).body).toEqual({ key, held: false, holders: [], waiterCount: 0 });
    expectError(await api.release(key, { sessionId: session.sessionId, fencingToken: grant.fencingToken }), 409, 'LOCK_LOST');
  });

  test('another session is refused with LOCK_CONTENDED (retryable); tokens increase across keys', async () => {
    const a = await open();
    const b = await open();
    const key = freshKey();
    const grant = (await api.acquire(key, { sessionId: a.sessionId })).body;
    expectError(await api.acquire(key, { sessionId: b.sessionId }), 409, 'LOCK_CONTENDED', true);
    const other = (await api.acquire(freshKey(), { sessionId: b.sessionId })).body;
    expect(BigInt(other.fencingToken)).toBeGreaterThan(BigInt(grant.fencingToken));
    await api.release(key, { sessionId: a.sessionId, fencingToken: grant.fencingToken });
    const taken = (await api.acquire(key, { sessionId: b.sessionId })).body;
    expect(BigInt(taken.fencingToken)).toBeGreaterThan(BigInt(other.fencingToken));
  });

  test('L5 renews with the same token and a later expiry; a stranger token is LOCK_LOST', async () => {
    const session = await open();
    const key = freshKey();
    const grant = (await api.acquire(key, { sessionId: session.sessionId, ttlMillis: 5000 })).body;
    const renewed = await api.renew(key, { sessionId: session.sessionId, fencingToken: grant.fencingToken, ttlMillis: 60000 });
    expect(renewed.status).toBe(200);
    expect(renewed.body.fencingToken).toBe(grant.fencingToken);
    expect(renewed.body.expiresAt).toBeGreaterThan(grant.expiresAt);
    expect(renewed.body.ttlMillis).toBe(60000);
    expectError(await api.renew(key, { sessionId: session.sessionId, fencingToken: '999999999' }), 409, 'LOCK_LOST');
  });

  test('unknown sessions are SESSION_NOT_FOUND on acquire and heartbeat', async () => {
    expectError(await api.acquire(freshKey(), { sessionId: 's_doesNotExist' }), 404, 'SESSION_NOT_FOUND', false);
    expectError(await api.heartbeat('s_doesNotExist'), 404, 'SESSION_NOT_FOUND');
  });

  test('expiry: a silent session loses its locks; a new holder gets a higher token; the old one is LOCK_LOST / SESSION_NOT_FOUND', async () => {
    // 10 s: the open and the grant below must both land while the session lives, on however busy a machine. A quiet
    // one needs tens of ms; 3 s left ~3 s of slack, and a loaded CI run was ~1 s late even at the takeover (3978 ms
    // after the open). 10 s leaves ~10 s. Longer only makes the test wait longer (it waits out the TTL); what it
    // proves is unchanged: not taken over before the TTL, then a higher token and the old session gone.
    const ttlMillis = 10_000;
    const openedAt = Date.now();
    const old = await open({ ttlMillis });
    const key = freshKey('expiry');
    const grant = (await api.acquire(key, { sessionId: old.sessionId, ttlMillis: 30000 })).body;
    expect(grant.fencingToken).toEqual(expect.any(String));
    const successor = await open();
    // Taken over once the silent session lapsed: 10.0–10.2 s after its open here (a little later on etcd, whose
    // leases are whole seconds). The deadline leaves 50 s past the TTL; it only tells "released" from "never".
    const taken = await eventually(async () => {
      const answer = await api.acquire(key, { sessionId: successor.sessionId });
      return answer.status === 200 ? answer.body : undefined;
    }, 60_000, 25);
    const takenAfter = Date.now() - openedAt;
    console.log(`expiry on ${storeName}: a silent ${ttlMillis} ms session's lock taken over ${takenAfter} ms after its open`);
    // Never before the session's TTL ran out (the store's clock is this machine's).
    expect(takenAfter).toBeGreaterThanOrEqual(ttlMillis);
    expect(BigInt(taken.fencingToken)).toBeGreaterThan(BigInt(grant.fencingToken));
    // The old session is not live: every session-scoped call names that, not the lock.
    expectError(await api.renew(key, { sessionId: old.sessionId, fencingToken: grant.fencingToken }), 404, 'SESSION_NOT_FOUND');
    expectError(await api.release(key, { sessionId: old.sessionId, fencingToken: grant.fencingToken }), 404, 'SESSION_NOT_FOUND');
    expectError(await api.heartbeat(old.sessionId), 404, 'SESSION_NOT_FOUND');
    expect((await api.read(key)).body.sessionId).toBe(successor.sessionId);
    // The TTL waited out, plus the deadline above: only bounds a failure.
  }, 120_000);

  test("a lock's own TTL ends it even while its session heartbeats", async () => {
    const holder = await open();
    const key = freshKey('lock-ttl');
    const grant = (await api.acquire(key, { sessionId: holder.sessionId, ttlMillis: 1000 })).body;
    // Free 1–3 s after the grant; the deadline only bounds a failure.
    await eventually(async () => (await api.read(key)).body.held === false, 30_000, 25);
    expect((await api.heartbeat(holder.sessionId)).status).toBe(200);
    expectError(await api.renew(key, { sessionId: holder.sessionId, fencingToken: grant.fencingToken }), 409, 'LOCK_LOST');
  });

  test('L3 releases every lock of the session', async () => {
    const session = await open();
    const keys = [freshKey('close'), freshKey('close'), freshKey('close')];
    for (const key of keys) expect((await api.acquire(key, { sessionId: session.sessionId })).status).toBe(200);
    expect((await api.closeSession(session.sessionId)).status).toBe(204);
    for (const key of keys) expect((await api.read(key)).body.held).toBe(false);
  });

  test('server-side wait: granted soon after the holder releases 300 ms later', async () => {
    const holder = await open();
    const waiter = await open();
    const key = freshKey('wait');
    const grant = (await api.acquire(key, { sessionId: holder.sessionId })).body;
    const startedAt = Date.now();
    const waiting = api.acquire(key, { sessionId: waiter.sessionId, waitMillis: 30000 });
    await eventually(async () => (await api.read(key)).body.waiterCount > 0, 30_000, 10);
    await new Promise((r) => setTimeout(r, Math.max(0, 300 - (Date.now() - startedAt))));
    const releasedAt = Date.now();
    await api.release(key, { sessionId: holder.sessionId, fencingToken: grant.fencingToken });
    const answer = await waiting;
    const grantedAfterRelease = Date.now() - releasedAt;
    console.log(`server-side wait on ${storeName}: granted ${grantedAfterRelease} ms after the release was sent`);
    expect(answer.status).toBe(200);
    expect(answer.body.sessionId).toBe(waiter.sessionId);
    expect(BigInt(answer.body.fencingToken)).toBeGreaterThan(BigInt(grant.fencingToken));
    // Soon after the release, far inside the 30 s wait: a few ms to a poll step here; the bound is ≥ 10× that.
    expect(grantedAfterRelease).toBeLessThan(10_000);
    // The wait's record is ended after the answer (the answer does not wait for bookkeeping): gone soon, not necessarily yet.
    await eventually(async () => (await api.read(key)).body.waiterCount === 0, 30_000, 20);
  });

  test('server-side wait: nobody releases → LOCK_CONTENDED after about waitMillis, with bounded store queries', async () => {
    const holder = await open();
    const waiter = await open();
    const key = freshKey('deadline');
    await api.acquire(key, { sessionId: holder.sessionId });
    const callsBefore = tryAcquireCalls;
    const startedAt = Date.now();
    const answer = await api.acquire(key, { sessionId: waiter.sessionId, waitMillis: 2000 });
    const elapsed = Date.now() - startedAt;
    console.log(`server-side wait on ${storeName}: a 2000 ms wait answered after ${elapsed} ms`);
    expectError(answer, 409, 'LOCK_CONTENDED', true);
    // Never before waitMillis; after it by a timer's and a request's lateness (tens of ms here), bounded at
    // ≥ 10× the whole wait: it tells "at waitMillis" from "never", or from a far longer wait.
    expect(elapsed).toBeGreaterThanOrEqual(1990);
    expect(elapsed).toBeLessThan(2000 + 18_000);
    // Polling has a 10 ms floor and grows to a 500 ms cap: a 2 s wait is a few dozen queries at most, never a busy loop.
    const queries = tryAcquireCalls - callsBefore;
    expect(queries).toBeGreaterThanOrEqual(1);
    expect(queries).toBeLessThanOrEqual(40);
  });

  test('a waiter whose session is killed stops at once with SESSION_NOT_FOUND', async () => {
    const holder = await open();
    const waiter = await open();
    const key = freshKey('killed-waiter');
    await api.acquire(key, { sessionId: holder.sessionId });
    const startedAt = Date.now();
    const waiting = api.acquire(key, { sessionId: waiter.sessionId, waitMillis: 30000 });
    await eventually(async () => (await api.read(key)).body.waiterCount > 0, 30_000, 10);
    const abortedBefore = await waitOutcomeCount(server.url, 'aborted');
    const killedAt = Date.now();
    const kill = await api.admin(server.operatorToken).kill(waiter.sessionId, { reason: 'test: stuck waiter' });
    expect(kill.status).toBe(200);
    expect(kill.body.outcome).toBe('KILLED');
    expectError(await waiting, 404, 'SESSION_NOT_FOUND');
    const stoppedAfterKill = Date.now() - killedAt;
    console.log(`killed waiter on ${storeName}: answered ${stoppedAfterKill} ms after the kill was sent (waited ${Date.now() - startedAt} ms in all)`);
    // "At once": far inside the 30 s wait it would otherwise run to.
    expect(stoppedAfterKill).toBeLessThan(15_000);
    // The wait's end is observed like any other (lock_wait_seconds{outcome="aborted"}).
    expect(await waitOutcomeCount(server.url, 'aborted')).toBeGreaterThan(abortedBefore);
  });

  test('force-revoke: 401 without a token, 403 for a viewer, 400 without a reason, REVOKED for an operator', async () => {
    const holder = await open({ owner: 'stuck-worker' });
    const key = freshKey('revoke');
    const grant = (await api.acquire(key, { sessionId: holder.sessionId })).body;
    expectError(await api.admin(undefined).revoke(key, { reason: 'x' }), 401, 'UNAUTHENTICATED');
    expectError(await api.admin('not-a-real-token-at-all').revoke(key, { reason: 'x' }), 401, 'UNAUTHENTICATED');
    expectError(await api.admin(server.viewerToken).revoke(key, { reason: 'x' }), 403, 'FORBIDDEN');
    const operator = api.admin(server.operatorToken);
    expectError(await operator.revoke(key, {}), 400, 'VALIDATION_FAILED');
    expectError(await operator.revoke(key, { reason: '' }), 400, 'VALIDATION_FAILED');
    expectError(await operator.revoke(key, { reason: '   ' }), 400, 'VALIDATION_FAILED');
    expect((await api.read(key)).body.held).toBe(true);

    const revoked = await operator.revoke(key, { reason: 'INC-42: worker wedged', expectedFencingToken: grant.fencingToken });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ key, outcome: 'REVOKED', revokedFencingToken: grant.fencingToken, auditId: expect.any(String) });
    expect((await api.read(key)).body.held).toBe(false);
    expectError(await api.renew(key, { sessionId: holder.sessionId, fencingToken: grant.fencingToken }), 409, 'LOCK_LOST');
    expectError(await api.release(key, { sessionId: holder.sessionId, fencingToken: grant.fencingToken }), 409, 'LOCK_LOST');

    const audit = await operator.audit(`?target=${encodeURIComponent(key)}`);
    expect(audit.status).toBe(200);
    const entry = audit.body.items.find((e: any) => e.id === revoked.body.auditId);
    expect(entry).toMatchObject({
      actor: 'test-operator',
      action: 'lock.revoke',
      target: key,
      reason: 'INC-42: worker wedged',
      fencingToken: grant.fencingToken,
      outcome: 'REVOKED',
    });
    expect(entry.hash).toMatch(/^[0-9a-f]{64}$/);
    expect((await operator.verify()).body).toMatchObject({ ok: true });
  });

  test('force-revoke outcomes NOT_HELD and TOKEN_MISMATCH revoke nothing', async () => {
    const operator = api.admin(server.operatorToken);
    const free = freshKey('not-held');
    const notHeld = await operator.revoke(free, { reason: 'cleanup' });
    expect(notHeld.status).toBe(200);
    expect(notHeld.body).toEqual({ key: free, outcome: 'NOT_HELD', auditId: expect.any(String) });

    const holder = await open();
    const key = freshKey('mismatch');
    const grant = (await api.acquire(key, { sessionId: holder.sessionId })).body;
    const stale = (BigInt(grant.fencingToken) - 1n).toString();
    const mismatch = await operator.revoke(key, { reason: 'stale view', expectedFencingToken: stale });
    expect(mismatch.status).toBe(200);
    expect(mismatch.body).toEqual({ key, outcome: 'TOKEN_MISMATCH', auditId: expect.any(String) });
    expect((await api.read(key)).body).toMatchObject({ held: true, fencingToken: grant.fencingToken });
    const entries = (await operator.audit(`?target=${encodeURIComponent(key)}`)).body.items;
    expect(entries[0]).toMatchObject({ outcome: 'TOKEN_MISMATCH', actor: 'test-operator', reason: 'stale view' });
  });

  test('A6 kill releases the session’s locks and is audited; viewers may read but not act', async () => {
    const victim = await open({ owner: 'victim' });
    const key = freshKey('kill');
    await api.acquire(key, { sessionId: victim.sessionId });
    expectError(await api.admin(server.viewerToken).kill(victim.sessionId, { reason: 'x' }), 403, 'FORBIDDEN');
    expect((await api.admin(server.viewerToken).listSessions()).status).toBe(200);
    const killed = await api.admin(server.operatorToken).kill(victim.sessionId, { reason: 'runaway' });
    expect(killed.body).toMatchObject({ sessionId: victim.sessionId, outcome: 'KILLED', releasedLocks: 1 });
    expect((await api.read(key)).body.held).toBe(false);
    expectError(await api.heartbeat(victim.sessionId), 404, 'SESSION_NOT_FOUND');
    const again = await api.admin(server.operatorToken).kill(victim.sessionId, { reason: 'again' });
    expect(again.body.outcome).toBe('NOT_FOUND');
    const audit = (await api.admin(server.operatorToken).audit(`?target=${victim.sessionId}`)).body.items;
    expect(audit.map((e: any) => e.outcome)).toEqual(['NOT_FOUND', 'KILLED']);
  });

  test('A1 lists held locks by prefix with cursor pagination', async () => {
    const session = await open();
    const prefix = `${freshKey('page')}/`;
    const keys = Array.from({ length: 7 }, (_, i) => `${prefix}${String(i).padStart(2, '0')}`);
    for (const key of keys) await api.acquire(key, { sessionId: session.sessionId });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `?prefix=${encodeURIComponent(prefix)}&limit=3${cursor ? `&cursor=${cursor}` : ''}`;
      const page = await api.admin(server.viewerToken).listLocks(query);
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(3);
      seen.push(...page.body.items.map((i: any) => i.key));
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual(keys);
    expect(pages).toBe(3);
    expectError(await api.admin(server.viewerToken).listLocks('?limit=0'), 400, 'VALIDATION_FAILED');
    expectError(await api.admin(server.viewerToken).listLocks('?cursor=%25%25%25'), 400, 'VALIDATION_FAILED');
  });

  test('whoami names the token and its role', async () => {
    expect((await api.call('GET', '/v1/admin/whoami', undefined, { authorization: `Bearer ${server.viewerToken}` })).body).toEqual({
      name: 'test-viewer',
      role: 'viewer',
    });
    expect((await api.call('GET', '/v1/admin/whoami', undefined, { authorization: `Bearer ${server.operatorToken}` })).body).toEqual({
      name: 'test-operator',
      role: 'operator',
    });
    expectError(await api.call('GET', '/v1/admin/whoami'), 401, 'UNAUTHENTICATED');
  });

  test('A5 summary reports counts, rates and SLO windows', async () => {
    const summary = await api.admin(server.viewerToken).summary();
    expect(summary.status).toBe(200);
    expect(summary.body.backend).toBe(server.backend);
    expect(summary.body.heldLocks).toBeGreaterThan(0);
    expect(summary.body.activeSessions).toBeGreaterThan(0);
    expect(summary.body.rates['1m'].acquire.granted).toBeGreaterThan(0);
    expect(summary.body.slo.objective).toBe(0.999);
    expect(summary.body.slo.windows['5m'].requests).toBeGreaterThan(0);
  });

  test('strict input: no coercion, unknown fields rejected, keys validated', async () => {
    const session = await open();
    expectError(await api.acquire(freshKey(), { sessionId: session.sessionId, ttlMillis: '15000' }), 400, 'VALIDATION_FAILED');
    expectError(await api.acquire(freshKey(), { sessionId: session.sessionId, extra: 1 }), 400, 'VALIDATION_FAILED');
    expectError(await api.acquire(freshKey(), { sessionId: session.sessionId, waitMillis: 30001 }), 400, 'VALIDATION_FAILED');
    expectError(await api.openSession({ ttlMillis: 999 }), 400, 'VALIDATION_FAILED');
    expectError(await api.acquire('x'.repeat(513), { sessionId: session.sessionId }), 400, 'VALIDATION_FAILED');
    expect((await api.acquire('é'.repeat(256), { sessionId: session.sessionId })).status).toBe(200); // 512 bytes
    expectError(await api.acquire('é'.repeat(257), { sessionId: session.sessionId }), 400, 'VALIDATION_FAILED');
    expectError(await api.acquire('tab\there', { sessionId: session.sessionId }), 400, 'VALIDATION_FAILED');
    expectError(await api.release(freshKey(), { sessionId: session.sessionId, fencingToken: '99999999999999999999' }), 400, 'VALIDATION_FAILED');
    expectError(await api.release(freshKey(), { sessionId: session.sessionId, fencingToken: 12 }), 400, 'VALIDATION_FAILED');
    expectError(await api.call('POST', '/v1/locks/a/acquire', '{"sessionId":'), 400, 'VALIDATION_FAILED');
    // Lone surrogates would be stored as U+FFFD and break the audit hash of a reason; pairs are fine.
    const operator = api.admin(server.operatorToken);
    expectError(await operator.revoke(freshKey(), { reason: 'x\ud800y' }), 400, 'VALIDATION_FAILED');
    expectError(await api.openSession({ owner: 'bad\udc00owner' }), 400, 'VALIDATION_FAILED');
    expect((await api.openSession({ owner: 'payout 💸 worker' })).status).toBe(201);
    expect((await operator.revoke(freshKey(), { reason: 'INC-1 💥 stuck' })).body.outcome).toBe('NOT_HELD');
    // Cursors and filters that decode to control characters are input errors, not store errors.
    expectError(await operator.listLocks('?cursor=AA'), 400, 'VALIDATION_FAILED');
    expectError(await operator.listSessions('?cursor=AA'), 400, 'VALIDATION_FAILED');
    // Nor can a page start after something no page of this server ends with: a session id with a
    // space or over 64 characters, a key over 512 bytes.
    const cursorOf = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
    expectError(await operator.listSessions(`?cursor=${cursorOf('a b')}`), 400, 'VALIDATION_FAILED');
    expectError(await operator.listSessions(`?cursor=${cursorOf('s'.repeat(65))}`), 400, 'VALIDATION_FAILED');
    expectError(await operator.listLocks(`?cursor=${cursorOf('k'.repeat(513))}`), 400, 'VALIDATION_FAILED');
    expect((await operator.listSessions(`?cursor=${cursorOf('s_any-issued_id')}`)).status).toBe(200);
    expect((await operator.listLocks(`?cursor=${cursorOf('k'.repeat(512))}`)).status).toBe(200);
    expectError(await operator.audit('?target=%00'), 400, 'VALIDATION_FAILED');
    // Admin auth comes before validation: no token, no schema details.
    expectError(await api.admin(undefined).revoke(freshKey(), { bogus: true }), 401, 'UNAUTHENTICATED');
    expect((await operator.verify()).body.ok).toBe(true);
  });
});

/** Counts tryAcquire calls reaching the store, to prove waits do not busy-loop. */
function countTryAcquire(store: LockStore, count: () => void): LockStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property === 'tryAcquire') {
        return (...args: Parameters<LockStore['tryAcquire']>) => {
          count();
          return target.tryAcquire(...args);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
