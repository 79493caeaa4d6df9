import { describe, expect, it } from 'vitest';
import { LockLostError } from '../../client/errors.js';
import type { LockHandle } from '../../client/handle.js';
import { renewIntervalMillis } from '../../client/renewer.js';
import { error } from './support/fake-lock-server.js';
import { fakeWorld } from './support/fake-world.js';

describe('withLock (clock-driven part of criterion 9)', () => {
  it('a fn that runs three TTLs keeps its lock (renewed, same token) and releases it after', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    const ttl = 3_000;
    const seen: string[] = [];
    const result = await world.run(
      session.withLock(
        'report',
        async (handle) => {
          for (let i = 0; i < 9; i += 1) {
            await world.clock.sleep(ttl / 3);
            expect(handle.lost).toBe(false);
            seen.push(world.server.holder('report')!.token);
          }
          return handle;
        },
        { ttlMillis: ttl },
      ),
    );
    expect(result!.lost).toBe(false);
    expect(new Set(seen)).toEqual(new Set([result!.fencingToken]));
    expect(world.server.count('L5')).toBeGreaterThanOrEqual(8);
    expect(world.server.count('L4')).toBe(1);
    expect(world.server.count('L6')).toBe(1);
    expect(world.server.holder('report')).toBeUndefined();
  });

  it('a revoke mid-run aborts fn’s signal within one renewal interval', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    const ttl = 3_000;
    let revokedAt = 0;
    let abortedAt = 0;
    await world.run(
      session.withLock(
        'report',
        async (handle) => {
          handle.signal.addEventListener('abort', () => (abortedAt = world.clock.now()));
          await world.clock.sleep(1_700);
          world.server.revoke('report');
          revokedAt = world.clock.now();
          await world.clock.sleep(10 * ttl, handle.signal).catch(() => {});
          expect(handle.lost).toBe(true);
          expect(handle.signal.reason).toBeInstanceOf(LockLostError);
        },
        { ttlMillis: ttl },
      ),
    );
    expect(abortedAt).toBeGreaterThan(revokedAt);
    expect(abortedAt - revokedAt).toBeLessThanOrEqual(renewIntervalMillis(ttl));
  });

  it('renewals that keep failing (503) lose the handle at its conservative deadline, before the server TTL', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    let lostAt = 0;
    let grantedAt = 0;
    await world.run(
      session.withLock(
        'k',
        async (handle) => {
          grantedAt = world.server.calls.find((c) => c.route === 'L4')!.at;
          world.server.intercept = (c) => (c.route === 'L5' ? error(503, 'NOT_LEADER', 'x', true) : undefined);
          handle.signal.addEventListener('abort', () => (lostAt = world.clock.now()));
          await world.clock.sleep(20_000, handle.signal).catch(() => {});
        },
        { ttlMillis: 3_000 },
      ),
    );
    expect(lostAt).toBeGreaterThan(0);
    expect(lostAt).toBeLessThanOrEqual(grantedAt + 3_000 - 500);
  });

  it('returns null without running fn when not granted', async () => {
    const world = fakeWorld();
    const client = world.client();
    const holder = await world.run(client.openSession());
    const other = await world.run(client.openSession());
    await world.run(holder.acquire('k'));
    let ran = false;
    const result = await world.run(other.withLock('k', () => (ran = true), { policy: { totalBudgetMillis: 300 } }));
    expect(result).toBeNull();
    expect(ran).toBe(false);
  });

  it('releases in finally when fn throws, and rethrows fn’s error', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession());
    const boom = new Error('boom');
    await expect(
      world.run(
        session.withLock('k', () => {
          throw boom;
        }),
      ),
    ).rejects.toBe(boom);
    expect(world.server.count('L6')).toBe(1);
    expect(world.server.holder('k')).toBeUndefined();
  });

  it('an abort of the caller’s signal stops waiting and releases whatever acquireAll took', async () => {
    const world = fakeWorld();
    const client = world.client();
    const holder = await world.run(client.openSession());
    const waiter = await world.run(client.openSession());
    await world.run(holder.acquire('b'));
    const controller = new AbortController();
    const attempt = waiter.acquireAll(['b', 'a'], { signal: controller.signal });
    await world.clock.advance(500);
    expect(world.server.holder('a')?.sessionId).toBe(waiter.sessionId); // took a, waiting for b
    const reason = new Error('shutting down');
    controller.abort(reason);
    await expect(world.run(attempt)).rejects.toBe(reason);
    expect(world.server.holder('a')).toBeUndefined();
    expect(world.server.holder('b')?.sessionId).toBe(holder.sessionId);
  });

  it('a grant that lands after the caller aborted is released, not leaked', async () => {
    const world = fakeWorld();
    const client = world.client({ network: { latency: () => 50 } });
    const session = await world.run(client.openSession());
    const controller = new AbortController();
    const attempt = session.acquire('k', { signal: controller.signal });
    await world.clock.advance(60); // the L4 reached the server and granted; the answer is on its way
    expect(world.server.holder('k')?.sessionId).toBe(session.sessionId);
    controller.abort(new Error('cancel'));
    await expect(world.run(attempt)).rejects.toThrow('cancel');
    await world.clock.advance(500);
    expect(world.server.count('L6')).toBe(1);
    expect(world.server.holder('k')).toBeUndefined();
  });

  it('nested withLock on the same key shares one renewer and one L6', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    await world.run(
      session.withLock(
        'k',
        async (outer: LockHandle) =>
          session.withLock('k', async (inner) => {
            expect(inner).toBe(outer);
            await world.clock.sleep(3_000);
          }),
        { ttlMillis: 3_000 },
      ),
    );
    // One renewal per interval (1 s) over 3 s, not two.
    expect(world.server.count('L5')).toBeLessThanOrEqual(3);
    expect(world.server.count('L6')).toBe(1);
  });
});
