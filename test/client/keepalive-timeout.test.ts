/**
 * Issue 10, item 6 (clock-exact part): a heartbeat or renewal that is never
 * answered is abandoned after a quarter of the TTL (at most half the time left to
 * its deadline) and sent again at once, so a server
 * that answers the next request saves the session or lock before its deadline.
 * Without the per-request timeout the stalled call held its loop until the
 * conservative deadline passed. The same over real sockets, through a proxy that
 * stalls one request, is in keepalive-stall-real.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { keepAliveTimeoutMillis } from '../../client/request-timeout.js';
import { fakeWorld } from './support/fake-world.js';

describe('per-request timeout on keep-alive calls', () => {
  it('the first heartbeat stalls forever: it is aborted at TTL/4, the retry (sent at once) succeeds, the session and its locks live on', async () => {
    const world = fakeWorld();
    let stalled = 0;
    let abortedAfter: number | undefined;
    const client = world.client({
      network: {
        fault: (request) => {
          if (request.path.endsWith('/heartbeat') && stalled === 0) {
            stalled += 1;
            const sentAt = world.clock.now();
            request.signal?.addEventListener('abort', () => (abortedAfter = world.clock.now() - sentAt));
            return 'drop_request';
          }
          return 'none';
        },
      },
    });
    const ttl = 6_000;
    const session = await world.run(client.openSession({ ttlMillis: ttl }));
    const openedAt = world.clock.now();
    const handle = (await world.run(session.acquire('k', { ttlMillis: 600_000 })))!;
    await world.clock.advance(5 * ttl);
    expect(stalled).toBe(1);
    // Sent at TTL/3 with 5,500 − 2,000 ms left: the timeout is min(TTL/4, half of that) = TTL/4.
    expect(abortedAfter).toBe(keepAliveTimeoutMillis(ttl, 3_500));
    expect(abortedAfter).toBe(ttl / 4);
    expect(session.lost).toBe(false);
    expect(handle.lost).toBe(false);
    expect(world.server.holder('k')?.sessionId).toBe(session.sessionId);
    expect(world.server.count('L2')).toBeGreaterThanOrEqual(10);
    // The retry went out the moment the stalled one was abandoned.
    const firstAnswered = world.server.calls.find((c) => c.route === 'L2')!.at;
    expect(firstAnswered).toBe(openedAt + session.heartbeatIntervalMillis + ttl / 4);
  });

  it('near the deadline the timeout shrinks to half the time left, so a retry always fits', () => {
    expect(keepAliveTimeoutMillis(15_000, 9_000)).toBe(3_750);
    expect(keepAliveTimeoutMillis(15_000, 2_000)).toBe(1_000);
    expect(keepAliveTimeoutMillis(15_000, 0)).toBe(1);
    expect(keepAliveTimeoutMillis(300_000, 200_000)).toBe(75_000);
  });

  it('the first renewal stalls forever: it is aborted at TTL/4, the retry succeeds, withLock keeps its lock', async () => {
    const world = fakeWorld();
    let stalled = 0;
    const client = world.client({
      network: {
        fault: (request) => {
          if (request.path.endsWith('/renew') && stalled === 0) {
            stalled += 1;
            return 'drop_request';
          }
          return 'none';
        },
      },
    });
    const session = await world.run(client.openSession({ ttlMillis: 60_000 }));
    const ttl = 3_000;
    const lost = await world.run(
      session.withLock(
        'job',
        async (handle) => {
          await world.clock.sleep(4 * ttl);
          return handle.lost;
        },
        { ttlMillis: ttl },
      ),
    );
    expect(stalled).toBe(1);
    expect(lost).toBe(false);
    expect(world.server.count('L5')).toBeGreaterThanOrEqual(10);
    expect(world.server.count('L6')).toBe(1);
  });
});
