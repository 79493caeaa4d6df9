/**
 * Issue 20: a black-holed PostgreSQL (a TCP proxy that stops forwarding, connections
 * left open: the hung store no refused connect reveals), with a real `holdfast server`
 * process on the default timeouts. The first store call that outlives
 * HOLDFAST_STORE_TIMEOUT_MS turns the server's health state down; from then on every
 * L4 is answered 503 NOT_LEADER at once (no connect or statement timeout per request)
 * and /readyz 503; when the proxy forwards again, the probe brings the state back and
 * the first grant comes within 1 s; nothing overlaps; the server never exits.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startBlackholeProxy, type BlackholeProxy } from '../support/blackhole-proxy.js';
import { sharedPostgres } from '../support/server.js';
import { spawnServer, type ServerProcess } from '../support/server-process.js';
import { expectOutageHandled, runStoreOutage } from '../support/store-outage.js';

let proxy: BlackholeProxy;
let server: ServerProcess;

beforeAll(async () => {
  const direct = new URL(await (await sharedPostgres()).createDatabase());
  proxy = await startBlackholeProxy({ host: direct.hostname, port: Number(direct.port) });
  const viaProxy = new URL(direct);
  viaProxy.port = String(proxy.port);
  server = await spawnServer({ HOLDFAST_STORE: 'postgres', DATABASE_URL: viaProxy.toString() });
}, 120_000);
afterAll(async () => {
  proxy?.forward();
  if (server && server.child.exitCode === null) server.child.kill('SIGKILL');
  await proxy?.close();
});

test('black-holed PostgreSQL: 503 at once while down, /readyz 503; a grant within 1 s of the proxy forwarding again; no overlap', async () => {
  const report = await runStoreOutage({
    server,
    label: 'blackhole',
    breakStore: () => proxy.blackhole(),
    downMillis: 5_000, // ~150 L4s while down, so the p99 is not just the slowest one
    restoreStore: () => proxy.forward(),
  });
  console.log(`postgres black hole: ${report.line}`);
  expectOutageHandled(report, server, expect, 'allowed');
}, 180_000);
