/**
 * A black-holed PostgreSQL (a TCP proxy that stops forwarding, connections left
 * open): L4 answers 503 NOT_LEADER and /readyz 503 within 3 s, not a hung
 * request; when the proxy forwards again, service returns.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startBlackholeProxy, type BlackholeProxy } from '../support/blackhole-proxy.js';
import { eventually, httpClient } from '../support/http.js';
import { sharedPostgres, startServer, type TestServer } from '../support/server.js';

let proxy: BlackholeProxy;
let server: TestServer;

beforeAll(async () => {
  const direct = new URL(await (await sharedPostgres()).createDatabase());
  proxy = await startBlackholeProxy({ host: direct.hostname, port: Number(direct.port) });
  const viaProxy = new URL(direct);
  viaProxy.port = String(proxy.port);
  server = await startServer({
    store: 'postgres',
    // The default timeouts (HOLDFAST_PG_CONNECT_TIMEOUT_MS, HOLDFAST_PG_STATEMENT_TIMEOUT_MS) are what is tested.
    env: { DATABASE_URL: viaProxy.toString() },
  });
});
afterAll(async () => {
  proxy?.forward();
  await server?.stop();
  await proxy?.close();
});

test('black-holed PostgreSQL: L4 and /readyz answer 503 within 3 s; service returns with the proxy', async () => {
  const api = httpClient(server.url);
  const session = (await api.openSession({ ttlMillis: 60_000 })).body.sessionId as string;
  expect((await api.acquire('blackhole/before', { sessionId: session })).status).toBe(200);

  proxy.blackhole();
  const timed = async <T>(work: () => Promise<T>) => {
    const started = Date.now();
    const value = await work();
    return { value, millis: Date.now() - started };
  };
  const acquire = await timed(() => api.acquire('blackhole/during', { sessionId: session }));
  const ready = await timed(() => fetch(`${server.url}/readyz`));
  console.log(`black hole: L4 ${acquire.value.status} after ${acquire.millis} ms, /readyz ${ready.value.status} after ${ready.millis} ms`);
  expect(acquire.value.status).toBe(503);
  expect(acquire.value.body.error).toMatchObject({ code: 'NOT_LEADER', retryable: true });
  expect(acquire.value.headers.get('retry-after')).toBe('1');
  expect(acquire.millis).toBeLessThan(3000);
  expect(ready.value.status).toBe(503);
  expect(ready.millis).toBeLessThan(3000);

  proxy.forward();
  await eventually(async () => (await fetch(`${server.url}/readyz`)).status === 200, 15_000, 100);
  const after = await eventually(async () => {
    const answer = await api.acquire('blackhole/after', { sessionId: session });
    return answer.status === 200 ? answer : undefined;
  }, 15_000, 100);
  expect(after.body.key).toBe('blackhole/after');
}, 60_000);
