/**
 * Issue 10, item 6 over real sockets: a real server behind a TCP proxy that
 * freezes the connection of one heartbeat and of one renewal (no answer, no
 * close). The SDK abandons each after a quarter of the TTL and sends it again
 * on a new connection, which the server answers: neither the session nor the
 * lock is lost. Before the per-request timeout, the frozen call held its loop
 * until the conservative deadline and the handle was lost.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockClient } from '../../client/client.js';
import { startServer, type TestServer } from '../support/server.js';
import { startStallingProxy, type StallingProxy } from './support/stalling-proxy.js';

let server: TestServer;
let proxy: StallingProxy;

beforeAll(async () => {
  server = await startServer();
  proxy = await startStallingProxy(server.url);
});

afterAll(async () => {
  await proxy?.close();
  await server?.stop();
});

describe('a stalled keep-alive request over a real connection', () => {
  it('one frozen heartbeat and one frozen renewal: retried on a new connection, session and lock survive', { timeout: 90_000 }, async () => {
    const client = new LockClient({ baseUrl: proxy.url });
    // Session TTL 15 s: heartbeat every 5 s, the frozen one abandoned after ≤ 3.75 s and sent
    // again at once, ≥ 5 s before the conservative deadline. Lock TTL 10 s: renewal every 3.3 s,
    // abandoned after ≤ 2.5 s (half the time left, if less), sent again at once. Generous TTLs:
    // this shares two cores with other suites, and the point is the stall, not the load.
    const session = await client.openSession({ ttlMillis: 15_000, owner: 'stall-test' });
    proxy.stallNext(/^POST \/v1\/sessions\/[^/]+\/heartbeat /);
    proxy.stallNext(/^POST \/v1\/locks\/stall%2Fjob\/renew /);
    const outcome = await session.withLock(
      'stall/job',
      async (handle) => {
        await new Promise((resolve) => setTimeout(resolve, 20_000));
        const info = await client.readLock('stall/job');
        return { lost: handle.lost, token: handle.fencingToken, info };
      },
      { ttlMillis: 10_000 },
    );
    const heartbeats = proxy.requests.filter((r) => r.includes('/heartbeat'));
    const renewals = proxy.requests.filter((r) => r.includes('/renew'));
    console.log(`stall: ${proxy.stalled.length} frozen; ${heartbeats.length} heartbeats, ${renewals.length} renewals sent through the proxy`);
    expect(proxy.stalled).toHaveLength(2);
    // Whatever the machine's pace: the frozen heartbeat and its retry (the session outlived its 15 s TTL), and the
    // frozen renewal and at least two more (the lock outlived 20 s on a 9 s conservative deadline). A quiet run sends
    // 5 and 7; the SDK's cadence itself is checked on the simulated clock.
    expect(heartbeats.length).toBeGreaterThanOrEqual(2);
    expect(renewals.length).toBeGreaterThanOrEqual(3);
    expect(outcome!.lost).toBe(false);
    expect(outcome!.info).toMatchObject({ held: true, sessionId: session.sessionId, fencingToken: outcome!.token });
    expect(session.lost).toBe(false);
    await session.close();
    expect((await client.readLock('stall/job')).held).toBe(false);
  });
});
