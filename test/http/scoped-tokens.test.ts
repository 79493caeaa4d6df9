/**
 * Tokens scoped to key prefixes (issue 26, SPEC "v3 — teams on one service"), on every store:
 * every keyed route × role (client, viewer, operator; scoped and unscoped) × a key (or session) in
 * and out of the scope. Out of scope → 403 FORBIDDEN with the pinned body and the store's state
 * (locks, sessions, audit) the same before and after; in scope → as for an unscoped token. Then a
 * scoped viewer's and a scoped operator's every list and read (A1 every way, A2, A4, A5, A7, A7h,
 * A7w, L7, whoami) is searched, as text, for any out-of-scope key, owner or session id.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually, httpClient, type Answer } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { STORES } from '../support/stores.js';

/** Two prefixes, so lists that one store prefix cannot cover are exercised too. */
const SCOPE = ['team-a/', 'shared/a-'];
const IN_KEYS = ['shared/a-report', 'team-a/job-1'];
const OUT_KEYS = ['shared/b-ledger', 'team-b/payouts'];
/** Held by an unscoped client's session: out of scope, and between the two scope prefixes in key order. */
const OTHER_KEY = 'shared/c-other';
/** Text no answer to a scoped token may hold (session ids are added as they are made). */
const OUT_MARKS = ['team-b', 'shared/b-', 'shared/c-', 'owner-out'];

const TOKEN_LABELS = ['client-scoped', 'client-unscoped', 'viewer-scoped', 'viewer-unscoped', 'operator-scoped', 'operator-unscoped'] as const;
type TokenLabel = (typeof TOKEN_LABELS)[number];
type Role = 'client' | 'viewer' | 'operator';
const roleOf = (label: TokenLabel) => label.split('-')[0] as Role;
const isScoped = (label: TokenLabel) => label.endsWith('-scoped');

const KEYED_ROUTES = ['L4 acquire', 'L7 read', 'L8 watch', 'A1 ?prefix=', 'A3 revoke', 'A6 kill', 'A7h history'] as const;
type KeyedRoute = (typeof KEYED_ROUTES)[number];
type Target = 'in' | 'out';

/** What the route answers today, with the scope rule on top: a key or session out of scope is 403. */
function expectedStatus(route: KeyedRoute, label: TokenLabel, target: Target): 200 | 403 {
  const role = roleOf(label);
  const outOfScope = isScoped(label) && target === 'out';
  switch (route) {
    case 'L4 acquire': // by a session the label's token opened (L1 takes a token of any role)
    case 'L7 read':
    case 'L8 watch': // L7's access (C3)
      return outOfScope ? 403 : 200;
    case 'A1 ?prefix=':
      return role === 'client' ? 403 : 200; // out of scope: 200 with nothing listed
    case 'A7h history':
      return role === 'client' || outOfScope ? 403 : 200;
    case 'A3 revoke':
    case 'A6 kill':
      return role !== 'operator' || outOfScope ? 403 : 200;
  }
}

const ROWS = KEYED_ROUTES.flatMap((route) =>
  TOKEN_LABELS.flatMap((label) => (['in', 'out'] as const).map((target) => ({ route, label, target, status: expectedStatus(route, label, target) }))),
);

const expectForbidden = (answer: Answer) => {
  expect(answer.status).toBe(403);
  expect(Object.keys(answer.body)).toEqual(['error']);
  expect(Object.keys(answer.body.error).sort()).toEqual(['code', 'message', 'retryable']);
  expect(answer.body.error.code).toBe('FORBIDDEN');
  expect(answer.body.error.retryable).toBe(false);
};

describe.each(STORES)('scoped tokens on %s', (storeName) => {
  let server: TestServer;
  const secrets = {} as Record<TokenLabel | 'worker-b', string>;
  let api: ReturnType<typeof httpClient>;
  /** L1 with each client token: sessions remember who opened them. */
  let teamA: ReturnType<typeof httpClient>;
  let teamB: ReturnType<typeof httpClient>;
  let anyTeam: ReturnType<typeof httpClient>;
  let sessionA: string;
  const outSessions: string[] = [];
  let fresh = 0;

  const bearer = (label: TokenLabel) => ({ authorization: `Bearer ${secrets[label]}` });
  const enc = encodeURIComponent;

  const open = async (client: ReturnType<typeof httpClient>, owner: string) => {
    const answer = await client.openSession({ owner, ttlMillis: 300_000 });
    expect(answer.status).toBe(201);
    return answer.body.sessionId as string;
  };
  const hold = async (client: ReturnType<typeof httpClient>, sessionId: string, key: string) => {
    const answer = await client.acquire(key, { sessionId, ttlMillis: 600_000 });
    expect(answer.status).toBe(200);
  };
  /** A session of team A or team B holding a fresh key of its own: the target of an action that changes something. */
  const freshTarget = async (target: Target) => {
    fresh += 1;
    const client = target === 'in' ? teamA : teamB;
    const sessionId = await open(client, target === 'in' ? `owner-in-${fresh}` : `owner-out-${fresh}`);
    if (target === 'out') outSessions.push(sessionId);
    const key = target === 'in' ? `team-a/fresh-${fresh}` : `team-b/fresh-${fresh}`;
    await hold(client, sessionId, key);
    return { sessionId, key };
  };

  const allPages = async (path: string, token: string) => {
    const items: any[] = [];
    let cursor: string | null = null;
    do {
      const answer: Answer = await api.call('GET', `${path}${path.includes('?') ? '&' : '?'}limit=1000${cursor ? `&cursor=${enc(cursor)}` : ''}`, undefined, {
        authorization: `Bearer ${token}`,
      });
      expect(answer.status).toBe(200);
      items.push(...answer.body.items);
      cursor = answer.body.nextCursor;
    } while (cursor);
    return items;
  };
  /** The store's state as the unscoped operator sees it, without what moves on its own (etcd reads expiries off leases). */
  const storeState = async () => {
    const locks = (await allPages('/v1/admin/locks', server.operatorToken)).map(({ expiresAt: _e, ...lock }) => lock);
    const sessions = (await allPages('/v1/admin/sessions', server.operatorToken)).map(
      ({ expiresAt: _e, lastHeartbeatAt: _h, ...session }) => session,
    );
    const audit = await allPages('/v1/admin/audit', server.operatorToken);
    return { locks, sessions, audit };
  };

  beforeAll(async () => {
    for (const label of [...TOKEN_LABELS, 'worker-b'] as const) secrets[label] = `${label}-${randomBytes(16).toString('hex')}`;
    server = await startServer({
      store: storeName,
      tokens: [
        { name: 'client-scoped', token: secrets['client-scoped'], role: 'client', prefixes: SCOPE },
        { name: 'client-unscoped', token: secrets['client-unscoped'], role: 'client' },
        { name: 'worker-b', token: secrets['worker-b'], role: 'client', prefixes: ['team-b/', 'shared/b-'] },
        { name: 'viewer-scoped', token: secrets['viewer-scoped'], role: 'viewer', prefixes: SCOPE },
        { name: 'operator-scoped', token: secrets['operator-scoped'], role: 'operator', prefixes: SCOPE },
      ],
    });
    secrets['viewer-unscoped'] = server.viewerToken;
    secrets['operator-unscoped'] = server.operatorToken;
    api = httpClient(server.url);
    teamA = httpClient(server.url, { clientToken: secrets['client-scoped'] });
    teamB = httpClient(server.url, { clientToken: secrets['worker-b'] });
    anyTeam = httpClient(server.url, { clientToken: secrets['client-unscoped'] });

    sessionA = await open(teamA, 'owner-in-scope');
    for (const key of IN_KEYS) await hold(teamA, sessionA, key);
    const sessionB = await open(teamB, 'owner-out-of-scope');
    outSessions.push(sessionB);
    for (const key of OUT_KEYS) await hold(teamB, sessionB, key);
    const sessionAny = await open(anyTeam, 'owner-out-unscoped');
    outSessions.push(sessionAny);
    await hold(anyTeam, sessionAny, OTHER_KEY);
  });
  afterAll(async () => {
    await server?.stop();
  });

  const clients = new Map<TokenLabel, ReturnType<typeof httpClient>>();
  /** An L1/L4 client presenting the label's token (it remembers the session tokens of what it opened). */
  const clientOf = (label: TokenLabel) => {
    if (!clients.has(label)) clients.set(label, httpClient(server.url, { clientToken: secrets[label] }));
    return clients.get(label)!;
  };

  const callRoute = async (route: KeyedRoute, label: TokenLabel, target: { key: string; sessionId: string; prefix: string }) => {
    const auth = bearer(label);
    switch (route) {
      case 'L4 acquire':
        // A long TTL: the grant must outlive the test (a lapse would change the state the later rows compare).
        return clientOf(label).acquire(target.key, { sessionId: target.sessionId, ttlMillis: 300_000 });
      case 'L7 read':
        return api.call('GET', `/v1/locks/${enc(target.key)}`, undefined, auth);
      case 'L8 watch':
        return api.call('GET', `/v1/locks/${enc(target.key)}/watch`, undefined, auth);
      case 'A1 ?prefix=':
        return api.call('GET', `/v1/admin/locks?prefix=${enc(target.prefix)}`, undefined, auth);
      case 'A7h history':
        return api.call('GET', `/v1/admin/locks/${enc(target.key)}/history`, undefined, auth);
      case 'A3 revoke':
        return api.call('POST', `/v1/admin/locks/${enc(target.key)}/revoke`, { reason: `scope test ${label}` }, auth);
      case 'A6 kill':
        return api.call('POST', `/v1/admin/sessions/${target.sessionId}/kill`, { reason: `scope test ${label}` }, auth);
    }
  };

  test.each(ROWS)('$route by $label on a key $target of scope → $status', async ({ route, label, target, status }) => {
    const changes = status === 200 && (route === 'A3 revoke' || route === 'A6 kill');
    fresh += 1;
    const subject = route === 'L4 acquire'
      ? {
          // Opened before the state is read: the acquire is the only thing that may change it.
          sessionId: await open(clientOf(label), `owner-l4-${label}`),
          key: target === 'in' ? `team-a/new-${fresh}` : `team-b/new-${fresh}`,
          prefix: '',
        }
      : changes
      ? { ...(await freshTarget(target)), prefix: '' }
      : target === 'in'
        ? { key: 'team-a/job-1', sessionId: sessionA, prefix: 'team-a/' }
        : { key: 'team-b/payouts', sessionId: outSessions[0]!, prefix: 'team-b/' };
    const before = await storeState();
    const answer = await callRoute(route, label, subject);

    if (status === 403) {
      expectForbidden(answer);
      expect(await storeState()).toEqual(before);
      return;
    }
    expect(answer.status).toBe(200);
    switch (route) {
      case 'L4 acquire':
        expect(answer.body).toMatchObject({ key: subject.key, sessionId: subject.sessionId });
        break;
      case 'L7 read':
      case 'L8 watch':
        expect(answer.body).toMatchObject({ key: subject.key, held: true });
        break;
      case 'A1 ?prefix=': {
        const keys = answer.body.items.map((lock: { key: string }) => lock.key);
        // A scoped viewer asking for another team's prefix is answered nothing, not refused.
        if (isScoped(label) && target === 'out') expect(keys).toEqual([]);
        else expect(keys).toContain(subject.key);
        expect(keys.every((key: string) => key.startsWith(subject.prefix))).toBe(true);
        expect(answer.body.nextCursor).toBeNull();
        break;
      }
      case 'A7h history':
        expect(answer.body.key).toBe(subject.key);
        break;
      case 'A3 revoke':
        expect(answer.body).toMatchObject({ key: subject.key, outcome: 'REVOKED' });
        break;
      case 'A6 kill':
        expect(answer.body).toMatchObject({ sessionId: subject.sessionId, outcome: 'KILLED', releasedLocks: 1 });
        break;
    }
  });

  test('A6: a scoped operator may not kill a session an unscoped client opened, even one holding only keys in scope; nothing changes', async () => {
    const sessionId = await open(anyTeam, 'owner-out-unscoped-holder');
    outSessions.push(sessionId);
    await hold(anyTeam, sessionId, 'team-a/held-by-an-unscoped-client');
    const before = await storeState();
    expectForbidden(await api.call('POST', `/v1/admin/sessions/${sessionId}/kill`, { reason: 'not mine' }, bearer('operator-scoped')));
    // Nor an unknown session: whether it exists is not told.
    expectForbidden(await api.call('POST', '/v1/admin/sessions/no-such-session/kill', { reason: 'not mine' }, bearer('operator-scoped')));
    expect(await storeState()).toEqual(before);
    // It revokes the key instead (A3 is per key).
    const revoked = await api.call('POST', `/v1/admin/locks/${enc('team-a/held-by-an-unscoped-client')}/revoke`, { reason: 'mine' }, bearer('operator-scoped'));
    expect(revoked.body).toMatchObject({ outcome: 'REVOKED' });
  });

  test("a scoped token's every list and read names no key, owner or session outside its scope", async () => {
    // Revokes on both sides, so the audit trail has something to hide and something to show.
    const inRevoke = await freshTarget('in');
    const outRevoke = await freshTarget('out');
    expect((await api.call('POST', `/v1/admin/locks/${enc(inRevoke.key)}/revoke`, { reason: 'r' }, bearer('operator-scoped'))).status).toBe(200);
    expect((await api.call('POST', `/v1/admin/locks/${enc(outRevoke.key)}/revoke`, { reason: 'r' }, bearer('operator-unscoped'))).status).toBe(200);
    // Contention on both sides (A7), and a wait on each side (A7w).
    const contenderA = await open(teamA, 'owner-in-contender');
    const contenderB = await open(teamB, 'owner-out-contender');
    outSessions.push(contenderB);
    for (let i = 0; i < 2; i++) expect((await teamA.acquire('team-a/job-1', { sessionId: contenderA })).status).toBe(409);
    for (let i = 0; i < 3; i++) expect((await teamB.acquire('team-b/payouts', { sessionId: contenderB })).status).toBe(409);
    const waiterA = await open(teamA, 'owner-in-waiter');
    const waiterB = await open(teamB, 'owner-out-waiter');
    outSessions.push(waiterB);
    const waits = [
      teamA.acquire('team-a/job-1', { sessionId: waiterA, waitMillis: 30_000 }),
      teamB.acquire('team-b/payouts', { sessionId: waiterB, waitMillis: 30_000 }),
    ];
    try {
      await eventually(async () => {
        const graph = await api.call('GET', '/v1/admin/waits', undefined, bearer('viewer-unscoped'));
        return graph.body.items.filter((edge: { holderSessionId: string | null }) => edge.holderSessionId !== null).length === 2;
      });

      for (const label of ['viewer-scoped', 'operator-scoped'] as const) {
        const get = (path: string) => api.call('GET', path, undefined, bearer(label));
        const answers: Record<string, Answer> = {
          A1: await get('/v1/admin/locks'),
          'A1 prefix=shared/': await get(`/v1/admin/locks?prefix=${enc('shared/')}`),
          'A1 sort=age': await get('/v1/admin/locks?sort=age'),
          A2: await get('/v1/admin/sessions'),
          A4: await get('/v1/admin/audit'),
          A5: await get('/v1/admin/summary'),
          A7: await get('/v1/admin/contention?limit=100'),
          A7w: await get('/v1/admin/waits'),
          A7h: await get(`/v1/admin/locks/${enc('team-a/job-1')}/history`),
          L7: await get(`/v1/locks/${enc('team-a/job-1')}`),
          whoami: await get('/v1/admin/whoami'),
        };
        // Paged one item at a time: every page, every cursor.
        const pagedLocks: string[] = [];
        const pagedSessions: string[] = [];
        for (const [path, into, id] of [
          ['/v1/admin/locks', pagedLocks, 'key'],
          ['/v1/admin/sessions', pagedSessions, 'sessionId'],
        ] as const) {
          let cursor: string | null = null;
          let page = 0;
          do {
            const answer: Answer = await get(`${path}?limit=1${cursor ? `&cursor=${enc(cursor)}` : ''}`);
            answers[`${path} page ${++page}`] = answer;
            into.push(...answer.body.items.map((item: Record<string, string>) => item[id]!));
            cursor = answer.body.nextCursor;
          } while (cursor);
        }

        for (const [name, answer] of Object.entries(answers)) {
          expect(answer.status, name).toBe(200);
          const raw = JSON.stringify(answer.body);
          for (const mark of [...OUT_MARKS, ...outSessions]) expect(raw.includes(mark), `${label} ${name} names ${mark}: ${raw}`).toBe(false);
        }

        // ...and what is in scope is all there, as an unscoped token sees it.
        const inScopeHeld = (await allPages('/v1/admin/locks', server.operatorToken))
          .map((lock: { key: string }) => lock.key)
          .filter((key: string) => SCOPE.some((prefix) => key.startsWith(prefix)));
        expect(inScopeHeld).toEqual(expect.arrayContaining(IN_KEYS));
        expect(answers.A1!.body.items.map((lock: { key: string }) => lock.key)).toEqual(inScopeHeld);
        expect(pagedLocks).toEqual(inScopeHeld);
        expect(answers['A1 prefix=shared/']!.body.items.map((lock: { key: string }) => lock.key)).toEqual(['shared/a-report']);
        expect(answers['A1 sort=age']!.body.items.map((lock: { key: string }) => lock.key).sort()).toEqual([...inScopeHeld].sort());
        expect(answers.A2!.body.items.map((s: { sessionId: string }) => s.sessionId)).toContain(sessionA);
        expect(answers.A2!.body.items.find((s: { sessionId: string }) => s.sessionId === sessionA).lockCount).toBe(IN_KEYS.length);
        expect(pagedSessions).toEqual(answers.A2!.body.items.map((s: { sessionId: string }) => s.sessionId));
        expect(answers.A4!.body.items.map((e: { target: string }) => e.target)).toContain(inRevoke.key);
        expect(answers.A5!.body.heldLocks).toBe(inScopeHeld.length);
        expect(answers.A7!.body.items.map((item: { key: string }) => item.key)).toEqual(['team-a/job-1']);
        expect(answers.A7w!.body.items).toEqual([
          { waiterSessionId: waiterA, key: 'team-a/job-1', holderSessionId: sessionA, waiterOwner: 'owner-in-waiter', holderOwner: 'owner-in-scope' },
        ]);
        expect(answers.L7!.body).toMatchObject({ held: true, sessionId: sessionA });
        expect(answers.whoami!.body).toEqual({ name: label, role: roleOf(label), prefixes: SCOPE });
      }

      // An unscoped viewer sees everything, as before.
      const everything = JSON.stringify((await api.call('GET', '/v1/admin/locks', undefined, bearer('viewer-unscoped'))).body);
      for (const key of [...IN_KEYS, ...OUT_KEYS, OTHER_KEY]) expect(everything).toContain(key);
      expect((await api.call('GET', '/v1/admin/whoami', undefined, bearer('viewer-unscoped'))).body).toEqual({ name: 'test-viewer', role: 'viewer' });
    } finally {
      // Ending the waiters' sessions ends their waits (404).
      expect((await teamA.closeSession(waiterA)).status).toBe(204);
      expect((await teamB.closeSession(waiterB)).status).toBe(204);
      for (const wait of await Promise.all(waits)) expect(wait.status).toBe(404);
    }
  });
  test("the audit trail records a scoped actor's scope (in the entry's hash), and A4x/A4p refuse scoped tokens", async () => {
    const { key } = await freshTarget('in');
    const revoked = await api.call('POST', `/v1/admin/locks/${enc(key)}/revoke`, { reason: 'scoped revoke' }, bearer('operator-scoped'));
    expect(revoked.body).toMatchObject({ outcome: 'REVOKED' });
    const entries = await api.call('GET', `/v1/admin/audit?target=${enc(key)}`, undefined, { authorization: `Bearer ${server.operatorToken}` });
    expect(entries.body.items).toEqual([expect.objectContaining({ actor: 'operator-scoped', actorScope: SCOPE, action: 'lock.revoke' })]);
    const verified = await api.call('GET', '/v1/admin/audit/verify', undefined, { authorization: `Bearer ${server.operatorToken}` });
    expect(verified.body, JSON.stringify(verified.body)).toMatchObject({ ok: true });
    const unscoped = await freshTarget('out');
    await api.call('POST', `/v1/admin/locks/${enc(unscoped.key)}/revoke`, { reason: 'unscoped revoke' }, bearer('operator-unscoped'));
    const plain = await api.call('GET', `/v1/admin/audit?target=${enc(unscoped.key)}`, undefined, { authorization: `Bearer ${server.operatorToken}` });
    expect(plain.body.items[0]).not.toHaveProperty('actorScope');
    const before = await storeState();
    expectForbidden(await api.call('GET', '/v1/admin/audit/export', undefined, bearer('viewer-scoped')));
    expectForbidden(await api.call('POST', '/v1/admin/audit/prune', { before: Date.now(), reason: 'not mine' }, bearer('operator-scoped')));
    expect(await storeState()).toEqual(before);
  });
});

describe('scoped tokens on an open server (no client entries)', () => {
  let server: TestServer;
  const scopedViewer = `viewer-scoped-${randomBytes(16).toString('hex')}`;
  beforeAll(async () => {
    server = await startServer({ store: 'embedded', tokens: [{ name: 'viewer-scoped', token: scopedViewer, role: 'viewer', prefixes: SCOPE }] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('L7 needs no token, but a scoped token presented there (the console sends it) reads only its keys', async () => {
    const api = httpClient(server.url);
    const sessionId = (await api.openSession({ owner: 'o' })).body.sessionId;
    expect((await api.acquire('team-b/payouts', { sessionId })).status).toBe(200);
    expect((await api.read('team-b/payouts')).body).toMatchObject({ held: true });
    expectForbidden(await api.read('team-b/payouts', { authorization: `Bearer ${scopedViewer}` }));
    expect((await api.read('team-a/job-1', { authorization: `Bearer ${scopedViewer}` })).body).toMatchObject({ held: false });
  });
});
