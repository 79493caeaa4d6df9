/**
 * Property-based: thousands of malformed requests across every route. Every
 * answer is a 4xx with the pinned error body that docs/openapi.json documents
 * for its route and status, the server stays healthy, and the store's rows are
 * unchanged.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { openApiChecker } from '../support/openapi.js';
import { startServer, sharedPostgres, type TestServer } from '../support/server.js';

const RUNS = 2100;
let server: TestServer;
let liveSession: string;
let heldKey: string;
let heldToken: string;

beforeAll(async () => {
  server = await startServer({ store: 'postgres' });
  const session = await (await fetch(`${server.url}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"ttlMillis":300000}' })).json();
  liveSession = session.sessionId;
  heldKey = 'fuzz/held';
  const grant = await (
    await fetch(`${server.url}/v1/locks/${encodeURIComponent(heldKey)}/acquire`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${session.sessionToken}` },
      body: JSON.stringify({ sessionId: liveSession, ttlMillis: 600000 }),
    })
  ).json();
  heldToken = grant.fencingToken;
});
afterAll(async () => {
  await server?.stop();
});

/** Every table's rows, hashed: the fingerprint that must not move. */
async function storeFingerprint(): Promise<string> {
  const cluster = await sharedPostgres();
  const result = await cluster.sql(
    server.databaseUrl!,
    `SELECT
       (SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY session_id), '')) FROM holdfast_sessions t) AS sessions,
       (SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY key), '')) FROM holdfast_locks t) AS locks,
       (SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY id), '')) FROM holdfast_audit t) AS audit`,
  );
  return JSON.stringify(result.rows[0]);
}

// ---- malformed parts ----
const badKeySegment = fc.oneof(
  fc.constantFrom('%', '%Z1', '%C3%28', '%E0%A4%A', '%FF', '%ED%A0%80', '%00', '%0A', '%1F', '%7F', '%C2%85'),
  fc.string({ minLength: 513, maxLength: 700 }).map((s) => encodeURIComponent(`${'k'.repeat(513)}${s}`)),
  fc.stringMatching(/^[a-z]{0,5}$/).map((s) => `${s}%0D${s}`),
);
const goodKeySegment = fc.constantFrom(encodeURIComponent(heldKeyPlaceholder()), 'free-key', 'a%2Fb');
function heldKeyPlaceholder() {
  return 'fuzz/held';
}
const unknownSession = fc.stringMatching(/^s_[A-Za-z0-9_-]{22}$/);
// "." and ".." are dot segments: fetch removes them from the path before sending (WHATWG URL), so
// the server would see another route than the one the OpenAPI check looks up.
const badSessionId = fc.oneof(
  fc.constantFrom('has space', 'x'.repeat(65), '../etc', 'a.b', '%00'),
  fc.string({ minLength: 1, maxLength: 8 }).filter((s) => !/^[A-Za-z0-9_-]+$/.test(s) && s !== '.' && s !== '..'),
);
const wrongTypeForString = fc.oneof(fc.constant(null), fc.boolean(), fc.double(), fc.array(fc.integer(), { maxLength: 3 }), fc.object({ maxDepth: 1 }));
const wrongType = fc.oneof(wrongTypeForString, fc.string({ maxLength: 5 }));
const badInteger = fc.oneof(
  fc.integer({ min: -1_000_000, max: 999 }),
  fc.integer({ min: 600_001, max: 2_000_000_000 }),
  fc.double({ noInteger: true, noNaN: true }),
  fc.integer({ min: 1000, max: 10000 }).map(String),
);
const badToken = fc.oneof(
  fc.constantFrom('', '-1', '01', '1e3', '9223372036854775808', '99999999999999999999', ' 1', 'abc', '0x10'),
  fc.integer().map((n) => n),
);
const badJsonText = fc.oneof(
  fc.constantFrom('{', '{"sessionId":', 'nul', '[', '{"a":1}}', '\u0000', "{'a':1}", '{"__proto__":{"x":1}}'),
  fc.string({ maxLength: 30 }).filter((s) => {
    try {
      JSON.parse(s);
      return false;
    } catch {
      return true;
    }
  }),
);
const oversize = fc.constant(JSON.stringify({ sessionId: 'x', pad: 'p'.repeat(17 * 1024) }));

interface Probe {
  method: string;
  path: string;
  body?: string;
  contentType?: string;
  auth?: 'none' | 'bad' | 'viewer' | 'operator';
}

const json = (value: unknown) => JSON.stringify(value);

const probes: fc.Arbitrary<Probe> = fc.oneof(
  // L1
  fc.record({ ttlMillis: fc.oneof(badInteger, wrongType) }).map((b) => ({ method: 'POST', path: '/v1/sessions', body: json(b) })),
  fc.record({ owner: fc.oneof(fc.string({ minLength: 129, maxLength: 200 }), wrongTypeForString, fc.constant('bad\u0001owner')) }).map((b) => ({ method: 'POST', path: '/v1/sessions', body: json(b) })),
  fc.dictionary(fc.stringMatching(/^[a-z]{3,8}$/).filter((k) => k !== 'owner'), fc.integer(), { minKeys: 1, maxKeys: 3 }).map((b) => ({ method: 'POST', path: '/v1/sessions', body: json(b) })),
  // L2 / L3
  unknownSession.map((id) => ({ method: 'POST', path: `/v1/sessions/${id}/heartbeat`, body: '{}' })),
  badSessionId.map((id) => ({ method: 'POST', path: `/v1/sessions/${encodeURIComponent(id)}/heartbeat`, body: '{}' })),
  unknownSession.map((id) => ({ method: 'DELETE', path: `/v1/sessions/${id}` })),
  badSessionId.map((id) => ({ method: 'DELETE', path: `/v1/sessions/${encodeURIComponent(id)}` })),
  // L4–L6 with bad keys
  fc.tuple(fc.constantFrom('acquire', 'renew', 'release'), badKeySegment).map(([op, key]) => ({
    method: 'POST',
    path: `/v1/locks/${key}/${op}`,
    body: json({ sessionId: 's_unknownsession', fencingToken: '1' }),
  })),
  badKeySegment.map((key) => ({ method: 'GET', path: `/v1/locks/${key}` })),
  // L4 bodies
  fc.tuple(goodKeySegment, fc.record({ sessionId: fc.oneof(wrongType, badSessionId), ttlMillis: badInteger }, { requiredKeys: [] })).map(([key, b]) => ({ method: 'POST', path: `/v1/locks/${key}/acquire`, body: json(b) })),
  fc.tuple(goodKeySegment, fc.oneof(badInteger, wrongType)).map(([key, wait]) => ({ method: 'POST', path: `/v1/locks/${key}/acquire`, body: json({ sessionId: 's_x', waitMillis: typeof wait === 'number' && Number.isInteger(wait) && wait >= 0 && wait <= 30000 ? 30001 : wait }) })),
  fc.tuple(goodKeySegment, unknownSession).map(([key, id]) => ({ method: 'POST', path: `/v1/locks/${key}/acquire`, body: json({ sessionId: id }) })),
  // L5 / L6 bodies
  fc.tuple(goodKeySegment, fc.constantFrom('renew', 'release'), badToken).map(([key, op, token]) => ({ method: 'POST', path: `/v1/locks/${key}/${op}`, body: json({ sessionId: 's_x', fencingToken: token }) })),
  fc.tuple(fc.constantFrom('renew', 'release'), unknownSession, fc.bigInt({ min: 1n, max: 9223372036854775807n })).map(([op, id, token]) => ({
    method: 'POST',
    path: `/v1/locks/free-key/${op}`,
    body: json({ sessionId: id, fencingToken: token.toString() }),
  })),
  // bad JSON, oversize, wrong content type — on every body route
  fc.tuple(fc.constantFrom('/v1/sessions', '/v1/locks/k/acquire', '/v1/locks/k/renew', '/v1/locks/k/release', '/v1/admin/locks/k/revoke'), fc.oneof(badJsonText, oversize)).map(([path, body]) => ({ method: 'POST', path, body, auth: 'operator' as const })),
  fc.tuple(fc.constantFrom('/v1/sessions', '/v1/locks/k/acquire'), fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x')).map(([path, contentType]) => ({ method: 'POST', path, body: 'sessionId=x', contentType })),
  // admin: auth problems and bad bodies/queries
  fc.tuple(fc.constantFrom('/v1/admin/locks', '/v1/admin/sessions', '/v1/admin/audit', '/v1/admin/summary'), fc.constantFrom('none' as const, 'bad' as const)).map(([path, auth]) => ({ method: 'GET', path, auth })),
  fc.constantFrom('viewer' as const, 'none' as const, 'bad' as const).map((auth) => ({ method: 'POST', path: `/v1/admin/locks/${encodeURIComponent('fuzz/held')}/revoke`, body: json({ reason: 'fuzz' }), auth })),
  fc.oneof(fc.constant({}), fc.record({ reason: fc.oneof(wrongTypeForString, fc.constant(''), fc.constant('   '), fc.constant('tab\tin reason'), fc.string({ minLength: 501, maxLength: 600 })) })).map((b) => ({ method: 'POST', path: `/v1/admin/locks/${encodeURIComponent('fuzz/held')}/revoke`, body: json(b), auth: 'operator' as const })),
  fc.record({ reason: fc.constant('fuzz'), expectedFencingToken: badToken }).map((b) => ({ method: 'POST', path: `/v1/admin/locks/${encodeURIComponent('fuzz/held')}/revoke`, body: json(b), auth: 'operator' as const })),
  fc.tuple(fc.constantFrom('/v1/admin/locks', '/v1/admin/sessions', '/v1/admin/audit'), fc.oneof(fc.constantFrom('limit=0', 'limit=-1', 'limit=1001', 'limit=abc', 'limit=1.5', 'cursor=%25%25', 'cursor=!!!', 'bogus=1', 'action=delete'), fc.string({ maxLength: 10 }).map((s) => `cursor=${encodeURIComponent(s)}!`))).map(([path, q]) => ({ method: 'GET', path: `${path}?${q}`, auth: 'viewer' as const })),
  fc.tuple(badSessionId, fc.constantFrom('operator' as const, 'viewer' as const, 'none' as const)).map(([id, auth]) => ({ method: 'POST', path: `/v1/admin/sessions/${encodeURIComponent(id)}/kill`, body: json({ reason: 'fuzz' }), auth })),
  fc.record({ reason: fc.oneof(wrongTypeForString, fc.constant('')) }).map((b) => ({ method: 'POST', path: `/v1/admin/sessions/${liveSessionPlaceholder()}/kill`, body: json(b), auth: 'operator' as const })),
  // unknown routes and methods
  fc.tuple(fc.constantFrom('GET', 'PUT', 'PATCH', 'DELETE'), fc.constantFrom('/v1/locks/k/acquire', '/v1/sessions', '/v2/locks/k', '/v1/admin/nope', '/')).map(([method, path]) => ({ method, path })),
);
function liveSessionPlaceholder() {
  return 'LIVE_SESSION';
}

test(`${RUNS} malformed requests: every answer a 4xx with the pinned body; rows unchanged; server healthy`, async () => {
  const before = await storeFingerprint();
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(probes, async (probe) => {
      const headers: Record<string, string> = {};
      if (probe.body !== undefined) headers['content-type'] = probe.contentType ?? 'application/json';
      if (probe.auth === 'bad') headers.authorization = 'Bearer not-a-token';
      if (probe.auth === 'viewer') headers.authorization = `Bearer ${server.viewerToken}`;
      if (probe.auth === 'operator') headers.authorization = `Bearer ${server.operatorToken}`;
      const path = probe.path.replace('LIVE_SESSION', liveSession);
      const response = await fetch(`${server.url}${path}`, {
        method: probe.method,
        headers,
        ...(probe.body !== undefined ? { body: probe.body } : {}),
      });
      const text = await response.text();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      expect(response.status, `${probe.method} ${path} ${probe.body?.slice(0, 200)} → ${text}`).toBeGreaterThanOrEqual(400);
      expect(response.status, `${probe.method} ${path} → ${text}`).toBeLessThan(500);
      const body = JSON.parse(text);
      expect(Object.keys(body)).toEqual(['error']);
      expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'retryable']);
      expect(typeof body.error.message).toBe('string');
      expect(typeof body.error.retryable).toBe('boolean');
      // …and the status, code and body are ones docs/openapi.json gives this route.
      openApiChecker().assert({ method: probe.method, path, status: response.status, contentType: response.headers.get('content-type'), text });
    }),
    { numRuns: RUNS },
  );
  console.log('malformed-input statuses:', Object.fromEntries(statuses));
  expect([...statuses.values()].reduce((a, b) => a + b, 0)).toBe(RUNS);
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  expect(await storeFingerprint()).toBe(before);
  // The held lock is untouched: same holder and token.
  const info = await (await fetch(`${server.url}/v1/locks/${encodeURIComponent(heldKey)}`)).json();
  expect(info).toMatchObject({ held: true, sessionId: liveSession, fencingToken: heldToken });
}, 180_000);
