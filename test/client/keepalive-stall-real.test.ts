/**
 * Issue 10, item 6 over real sockets: a real server behind a TCP proxy that
 * freezes the connection of one heartbeat and of one renewal (no answer, no
 * close). The SDK abandons each after a quarter of the TTL and sends it again
 * on a new connection, which the server answers: neither the session nor the
 * lock is lost, though the job outlives both TTLs. Before the per-request
 * timeout, the frozen call held its loop until the conservative deadline and
 * the handle was lost.
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
  it('one frozen heartbeat and one frozen renewal: retried on a new connection, session and lock survive', { timeout: 150_000 }, async () => {
    const client = new LockClient({ baseUrl: proxy.url });
    // Both TTLs 30 s (1 s margin: deadlines at 29 s). The first heartbeat and the first renewal go out
    // 10 s in and freeze; each is abandoned after a quarter of the TTL (7.5 s) and sent again at once,
    // which leaves its retry 11.5 s to be answered. Generous on purpose: this shares two cores with
    // other suites (a CI run loaded enough to delay an answer 3 s lost the lock at TTL 10 s), and the
    // point is the stall, not the machine's pace. The cadence itself is checked on the simulated clock.
    const ttlMillis = 30_000;
    const session = await client.openSession({ ttlMillis, owner: 'stall-test' });
    proxy.stallNext(/^POST \/v1\/sessions\/[^/]+\/heartbeat /);
    proxy.stallNext(/^POST \/v1\/locks\/stall%2Fjob\/renew /);
    const outcome = await session.withLock(
      'stall/job',
      async (handle) => {
        // The job outlives both TTLs: the server still has the session and the lock only if the
        // frozen calls' retries reached it.
        await new Promise((resolve) => setTimeout(resolve, ttlMillis + 2_000));
        const info = await client.readLock('stall/job');
        const why = handle.lost ? String((handle.signal.reason as Error | undefined)?.message) : undefined;
        return { lost: handle.lost, why, token: handle.fencingToken, info };
      },
      { ttlMillis },
    );
    const heartbeats = proxy.requests.filter((r) => r.includes('/heartbeat'));
    const renewals = proxy.requests.filter((r) => r.includes('/renew'));
    console.log(`stall: ${proxy.stalled.length} frozen; ${heartbeats.length} heartbeats, ${renewals.length} renewals sent through the proxy`);
    if (outcome!.lost || session.lost) console.log(`lost: ${outcome!.why}; session lost: ${session.lost}\n${proxy.timeline.join('\n')}`);
    expect(proxy.stalled).toHaveLength(2);
    // The frozen heartbeat and renewal, and at least one retry of each (a quiet run sends 3 and 3).
    expect(heartbeats.length).toBeGreaterThanOrEqual(2);
    expect(renewals.length).toBeGreaterThanOrEqual(2);
    expect(outcome!.lost).toBe(false);
    expect(outcome!.info).toMatchObject({ held: true, sessionId: session.sessionId, fencingToken: outcome!.token });
    expect(session.lost).toBe(false);
    await session.close();
    expect((await client.readLock('stall/job')).held).toBe(false);
  });
});
