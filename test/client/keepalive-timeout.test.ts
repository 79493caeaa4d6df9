/**
 * Issue 10, item 6 (clock-exact part): a heartbeat or renewal that is never
 * answered is abandoned after a quarter of the TTL and sent again, so a server
 * that answers the next request saves the session or lock before its deadline.
 * Without the per-request timeout the stalled call held its loop until the
 * conservative deadline passed. The same over real sockets, through a proxy that
 * stalls one request, is in keepalive-stall-real.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { keepAliveTimeoutMillis } from '../../client/request-timeout.js';
import { fakeWorld } from './support/fake-world.js';

describe('per-request timeout on keep-alive calls', () => {
  it('the first heartbeat stalls forever: it is aborted at TTL/4, the retry succeeds, the session and its locks live on', async () => {
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
    const handle = (await world.run(session.acquire('k', { ttlMillis: 600_000 })))!;
    await world.clock.advance(5 * ttl);
    expect(stalled).toBe(1);
    expect(abortedAfter).toBe(keepAliveTimeoutMillis(ttl));
    expect(session.lost).toBe(false);
    expect(handle.lost).toBe(false);
    expect(world.server.holder('k')?.sessionId).toBe(session.sessionId);
    expect(world.server.count('L2')).toBeGreaterThanOrEqual(10);
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
