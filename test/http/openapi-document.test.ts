/**
 * The OpenAPI document (issue 13): docs/openapi.json is what the route schemas
 * generate (freshness), the server serves exactly it, Redocly's
 * recommended-strict rules pass on it, every documented operation answers a
 * real request in a way the document allows, and the answer check the whole
 * HTTP suite runs (test/support/openapi.ts) catches what it must.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generatedApiFiles } from '../../scripts/gen.js';
import { OPENAPI_PATH } from '../../lock/http/openapi-document.js';
import { eventually, httpClient } from '../support/http.js';
import { openApiChecker } from '../support/openapi.js';
import { startServer, type TestServer } from '../support/server.js';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const committed = readFileSync(path.join(root, OPENAPI_PATH), 'utf8');
const documented = JSON.parse(committed) as { paths: Record<string, Record<string, { operationId: string }>> };
const operationIds = Object.values(documented.paths).flatMap((methods) => Object.values(methods).map((operation) => operation.operationId));

/** `redocly lint` with the repository's redocly.yaml (recommended-strict); no telemetry or update check. */
async function lint(file: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [path.join(root, 'node_modules/@redocly/cli/bin/cli.js'), 'lint', file, '--config', path.join(root, 'redocly.yaml'), '--format', 'stylish'],
      { cwd: root, timeout: 120_000, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' } },
    );
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

describe('docs/openapi.json', () => {
  test('equals what the route schemas generate (run `npm run gen`)', async () => {
    expect(committed).toBe((await generatedApiFiles())[OPENAPI_PATH]);
  });

  test('is OpenAPI 3.1 and names every route of C3 once', () => {
    const document = JSON.parse(committed) as { openapi: string };
    expect(document.openapi).toBe('3.1.0');
    expect(new Set(operationIds).size).toBe(operationIds.length);
    expect(Object.keys(documented.paths)).toEqual(
      expect.arrayContaining([
        '/v1/sessions',
        '/v1/sessions/{sessionId}/heartbeat',
        '/v1/sessions/{sessionId}',
        '/v1/locks/{key}/acquire',
        '/v1/locks/{key}/renew',
        '/v1/locks/{key}/release',
        '/v1/locks/{key}',
        '/v1/admin/locks',
        '/v1/admin/sessions',
        '/v1/admin/locks/{key}/revoke',
        '/v1/admin/audit',
        '/v1/admin/audit/verify',
        '/v1/admin/whoami',
        '/v1/admin/summary',
        '/v1/admin/sessions/{sessionId}/kill',
        '/v1/admin/contention',
        '/v1/admin/locks/{key}/history',
        '/v1/admin/waits',
        '/v1/admin/policies',
        '/metrics',
        '/healthz',
        '/readyz',
        '/openapi.json',
      ]),
    );
  });

  test('passes Redocly lint (recommended-strict); a broken copy fails it', async () => {
    const clean = await lint(OPENAPI_PATH);
    expect(clean.code, clean.output).toBe(0);
    expect(clean.output).toMatch(/valid/i);

    const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-openapi-lint-'));
    try {
      const broken = JSON.parse(committed);
      // An operation without a summary, one with a duplicate operationId, a $ref to nowhere.
      delete broken.paths['/healthz'].get.summary;
      broken.paths['/readyz'].get.operationId = 'healthz';
      broken.paths['/readyz'].get.responses['200'].content['application/json'].schema = { $ref: '#/components/schemas/Nowhere' };
      writeFileSync(path.join(dir, 'openapi.json'), JSON.stringify(broken));
      const failed = await lint(path.join(dir, 'openapi.json'));
      expect(failed.code, failed.output).not.toBe(0);
      for (const rule of ['operation-summary', 'operation-operationId-unique', 'no-unresolved-refs']) expect(failed.output).toContain(rule);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});

describe('a real server against the document', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  test('GET /openapi.json serves the committed document byte for byte', async () => {
    const response = await fetch(`${server.url}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.text()).toBe(committed);
  });

  test('every documented operation answers a real request as documented (the client checks each answer)', async () => {
    const api = httpClient(server.url);
    const viewer = api.admin(server.viewerToken);
    const operator = api.admin(server.operatorToken);
    const exercised = new Set<string>();
    const expectStatus = async (operationId: string, answer: Promise<{ status: number; body: any }>, status: number) => {
      const settled = await answer;
      expect(settled.status, `${operationId}: ${JSON.stringify(settled.body)}`).toBe(status);
      exercised.add(operationId);
      return settled.body;
    };
    const viewerGet = (p: string) => api.call('GET', p, undefined, { authorization: `Bearer ${server.viewerToken}` });

    const holder = await expectStatus('openSession', api.openSession({ owner: 'tour', ttlMillis: 60_000 }), 201);
    const waiter = (await api.openSession({ owner: 'tour-waiter', ttlMillis: 60_000 })).body.sessionId as string;
    await expectStatus('heartbeat', api.heartbeat(holder.sessionId), 200);
    const grant = await expectStatus('acquire', api.acquire('tour/a b/ü', { sessionId: holder.sessionId, ttlMillis: 60_000 }), 200);
    await expectStatus('renew', api.renew('tour/a b/ü', { sessionId: holder.sessionId, fencingToken: grant.fencingToken }), 200);
    await expectStatus('readLock', api.read('tour/a b/ü'), 200);
    await expectStatus('readLock', api.read('tour/free'), 200);
    await expectStatus('watchLock', api.watch('tour/a b/ü', `?after=${grant.fencingToken}&waitMillis=10`), 200);

    // A wait in progress (A7w) and a contended attempt (A7) on the held key.
    const waiting = api.acquire('tour/a b/ü', { sessionId: waiter, waitMillis: 5_000 });
    await eventually(async () => (await viewerGet('/v1/admin/waits')).body.items.length > 0);
    await expectStatus('waitGraph', viewerGet('/v1/admin/waits'), 200);
    await expectStatus('topContended', viewerGet('/v1/admin/contention?limit=5'), 200);

    await expectStatus('listLocks', viewer.listLocks('?limit=10'), 200);
    await expectStatus('listLocks', viewer.listLocks('?sort=age&limit=3'), 200);
    await expectStatus('listSessions', viewer.listSessions(), 200);
    await expectStatus('summary', viewer.summary(), 200);
    await expectStatus('whoami', viewerGet('/v1/admin/whoami'), 200);
    await expectStatus('listPolicies', viewerGet('/v1/admin/policies'), 200);
    // K1–K5: the console's sign-in codes and sessions (issue 25).
    const viewerCall = (method: string, p: string, body?: unknown) => api.call(method, p, body, { authorization: `Bearer ${server.viewerToken}` });
    const minted = await expectStatus('mintSignInCode', viewerCall('POST', '/v1/console/codes', { sealedToken: 'sealed-by-the-console' }), 201);
    await expectStatus('redeemSignInCode', api.call('POST', '/v1/console/codes/redeem', { code: minted.code }), 200);
    const consoleSession = await expectStatus('openConsoleSession', viewerCall('POST', '/v1/console/sessions'), 201);
    await expectStatus('checkConsoleSession', viewerCall('GET', `/v1/console/sessions/${consoleSession.consoleSessionId}`), 200);
    await expectStatus('closeConsoleSession', viewerCall('DELETE', `/v1/console/sessions/${consoleSession.consoleSessionId}`), 204);
    await expectStatus('release', api.release('tour/a b/ü', { sessionId: holder.sessionId, fencingToken: grant.fencingToken }), 200);
    const waited = await waiting;
    expect(waited.status).toBe(200);
    await expectStatus('forceRevoke', operator.revoke('tour/a b/ü', { reason: 'tour' }), 200);
    await expectStatus('forceRevoke', operator.revoke('tour/never-held', { reason: 'tour' }), 200);
    await expectStatus('keyHistory', viewerGet(`/v1/admin/locks/${encodeURIComponent('tour/a b/ü')}/history?limit=10`), 200);
    await expectStatus('killSession', operator.kill(waiter, { reason: 'tour' }), 200);
    await expectStatus('listAudit', viewer.audit('?limit=5'), 200);
    await expectStatus('verifyAudit', viewer.verify(), 200);
    await expectStatus('exportAudit', viewer.exportAudit(), 200);
    await expectStatus('pruneAudit', operator.pruneAudit({ before: 0, reason: 'tour' }), 200);
    await expectStatus('closeSession', api.closeSession(holder.sessionId), 204);
    await expectStatus('metrics', api.call('GET', '/metrics'), 200);
    await expectStatus('metrics', api.call('GET', '/metrics', undefined, { accept: 'application/openmetrics-text; version=1.0.0' }), 200);
    await expectStatus('healthz', api.call('GET', '/healthz'), 200);
    await expectStatus('readyz', api.call('GET', '/readyz'), 200);
    await expectStatus('openapi', api.call('GET', '/openapi.json'), 200);

    // A route added without a stop here fails this test: every operation is exercised.
    expect([...exercised].sort()).toEqual([...operationIds].sort());
  }, 120_000);
});

describe('the answer check (test/support/openapi.ts) fails what the document does not allow', () => {
  const checker = openApiChecker();
  const grant = { key: 'k', sessionId: 's_1', fencingToken: '7', ttlMillis: 30000, grantedAt: 1, expiresAt: 30001, mode: 'exclusive', limit: 1 };
  const json = 'application/json; charset=utf-8';
  const errorText = (code: string, retryable: boolean) => JSON.stringify({ error: { code, message: 'm', retryable } });

  test('a conforming answer passes', () => {
    expect(checker.problems({ method: 'POST', path: '/v1/locks/a%2Fb/acquire', status: 200, contentType: json, text: JSON.stringify(grant) })).toEqual([]);
    expect(checker.problems({ method: 'POST', path: '/v1/locks/k/acquire', status: 409, contentType: json, text: errorText('LOCK_CONTENDED', true) })).toEqual([]);
    expect(checker.problems({ method: 'DELETE', path: '/v1/sessions/s_1', status: 204, contentType: null, text: '' })).toEqual([]);
    expect(checker.problems({ method: 'PUT', path: '/v1/nope', status: 404, contentType: json, text: errorText('NOT_FOUND', false) })).toEqual([]);
  });

  test.each([
    ['an undocumented status', { method: 'GET', path: '/healthz', status: 418, contentType: json, text: '{}' }, /status not documented/],
    ['a field the record does not have', { method: 'POST', path: '/v1/locks/k/acquire', status: 200, contentType: json, text: JSON.stringify({ ...grant, extra: 1 }) }, /additional properties/],
    ['a missing field', { method: 'POST', path: '/v1/locks/k/renew', status: 200, contentType: json, text: JSON.stringify({ ...grant, fencingToken: undefined }) }, /fencingToken/],
    ['a numeric fencing token', { method: 'POST', path: '/v1/locks/k/acquire', status: 200, contentType: json, text: JSON.stringify({ ...grant, fencingToken: 7 }) }, /string/],
    ['a code this route cannot answer', { method: 'POST', path: '/v1/locks/k/acquire', status: 409, contentType: json, text: errorText('LOCK_LOST', false) }, /allowed values/],
    ['retryable other than the error table says', { method: 'POST', path: '/v1/locks/k/acquire', status: 409, contentType: json, text: errorText('LOCK_CONTENDED', false) }, /retryable: true/],
    ['a fourth key in the error body', { method: 'GET', path: '/readyz', status: 503, contentType: json, text: JSON.stringify({ error: { code: 'NOT_LEADER', message: 'm', retryable: true, extra: 1 } }) }, /additional properties/],
    ['an undocumented content type', { method: 'GET', path: '/healthz', status: 200, contentType: 'text/html', text: '<p>ok</p>' }, /content type/],
    ['a body on a 204', { method: 'DELETE', path: '/v1/sessions/s_1', status: 204, contentType: json, text: '{}' }, /without a body/],
    ['a 200 from an unknown route', { method: 'GET', path: '/v1/nope', status: 200, contentType: json, text: '{}' }, /no documented operation/],
  ])('%s', (_name, answer, problem) => {
    const problems = checker.problems(answer);
    expect(problems.join('\n')).toMatch(problem);
    expect(() => checker.assert(answer)).toThrow(/docs\/openapi.json/);
  });
});
