/**
 * `promtool check metrics` (Prometheus's own exposition parser and linter)
 * accepts the server's real /metrics page, after traffic has moved every kind
 * of series, and rejects a page that breaks the rules it checks.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ store: 'embedded' });
});
afterAll(async () => {
  await server?.stop();
});

function promtoolCheckMetrics(page: string) {
  const result = spawnSync('promtool', ['check', 'metrics'], { input: page, encoding: 'utf8' });
  if (result.error) throw result.error;
  return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
}

test('promtool check metrics accepts /metrics after real traffic', async () => {
  const api = httpClient(server.url);
  const a = (await api.openSession({ owner: 'promtool-a' })).body.sessionId as string;
  const b = (await api.openSession({ owner: 'promtool-b' })).body.sessionId as string;
  const grant = (await api.acquire('promtool/k', { sessionId: a })).body as { fencingToken: string };
  expect((await api.acquire('promtool/k', { sessionId: b })).status).toBe(409);
  expect((await api.renew('promtool/k', { sessionId: a, fencingToken: grant.fencingToken })).status).toBe(200);
  expect((await api.release('promtool/k', { sessionId: a, fencingToken: grant.fencingToken })).status).toBe(200);
  expect((await api.acquire('promtool/k', { sessionId: b, waitMillis: 50 })).status).toBe(200);

  const response = await fetch(`${server.url}/metrics`);
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  const page = await response.text();
  expect(page).toContain('lock_acquire_seconds_bucket{');
  expect(promtoolCheckMetrics(page)).toEqual({ status: 0, output: '' });
});

test('promtool is really checking: a gauge named _total and a malformed line are rejected', () => {
  const linted = promtoolCheckMetrics('# HELP x_total a gauge\n# TYPE x_total gauge\nx_total 1\n');
  expect(linted.status).not.toBe(0);
  expect(linted.output).toContain('non-counter metrics should not have "_total" suffix');
  expect(promtoolCheckMetrics('lock_held{backend="embedded" 1\n').status).not.toBe(0);
});
