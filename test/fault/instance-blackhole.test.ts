/**
 * Fault (d): two Holdfast instances on one PostgreSQL; the network between
 * instance A and PostgreSQL black-holed (a TCP proxy that swallows packets and
 * leaves connections open). A answers L4 503 within 3 s; B keeps serving; the
 * SDK workload (both endpoints) moves to B; 0 fenced writes refused, 0 overlaps.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startBlackholeProxy, type BlackholeProxy } from '../support/blackhole-proxy.js';
import { startWorkload } from '../support/fault-workload.js';
import { eventually, httpClient } from '../support/http.js';
import { sharedPostgres, startServer, type TestServer } from '../support/server.js';

let proxy: BlackholeProxy;
let a: TestServer;
let b: TestServer;

beforeAll(async () => {
  const direct = new URL(await (await sharedPostgres()).createDatabase());
  proxy = await startBlackholeProxy({ host: direct.hostname, port: Number(direct.port) });
  const viaProxy = new URL(direct);
  viaProxy.port = String(proxy.port);
  b = await startServer({ store: 'postgres', env: { DATABASE_URL: direct.toString(), HOLDFAST_PG_POOL_SIZE: '8' } });
  a = await startServer({ store: 'postgres', env: { DATABASE_URL: viaProxy.toString(), HOLDFAST_PG_POOL_SIZE: '8' } });
}, 120_000);
afterAll(async () => {
  proxy?.forward();
  await a?.stop();
  await b?.stop();
  await proxy?.close();
});

test('A cut off from PostgreSQL: A answers 503 within 3 s, B keeps serving, the SDK moves, 0 overlaps', async () => {
  const workload = startWorkload({
    urls: [a.url, b.url],
    workers: 4,
    keys: 2,
    keyPrefix: 'cut',
    sessionTtlMillis: 10_000,
    lockTtlMillis: 8_000,
    workMillis: 10,
  });
  const viaA = httpClient(a.url);
  const probeSession = (await viaA.openSession({ ttlMillis: 60_000 })).body.sessionId as string;
  await eventually(async () => workload.grants.length >= 20 && (workload.requests.get('A 200') ?? 0) > 0, 30_000, 20);

  const cutAt = Date.now();
  proxy.blackhole();
  const started = Date.now();
  const answer = await viaA.acquire('cut/probe', { sessionId: probeSession });
  const answeredIn = Date.now() - started;
  await new Promise((r) => setTimeout(r, 4000));
  const grantsViaB = workload.grants.filter((g) => g.grantedAt > cutAt + answeredIn).length;
  const firstAfter = workload.firstGrantAfter(cutAt);
  proxy.forward();
  await eventually(async () => (await fetch(`${a.url}/readyz`)).status === 200, 15_000, 100);
  await workload.stop();

  console.log(
    `black-holed A: L4 on A ${answer.status} ${answer.body?.error?.code ?? ''} after ${answeredIn} ms; ` +
      `${grantsViaB} grants in the 4 s after, first ${firstAfter! - cutAt} ms after the cut; ` +
      workload.summary(),
  );
  expect(answer.status).toBe(503);
  expect(answer.body.error.code).toBe('NOT_LEADER');
  expect(answeredIn).toBeLessThan(3000);
  expect(grantsViaB).toBeGreaterThan(5);
  expect(workload.recorder.rejected).toEqual([]);
  expect(workload.overlaps()).toEqual([]);
  expect([...workload.requests.keys()].filter((k) => / 500$/.test(k))).toEqual([]);
}, 120_000);
