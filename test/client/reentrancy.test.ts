import { describe, expect, it } from 'vitest';
import { LockLostError, ValidationError } from '../../client/errors.js';
import { fakeWorld } from './support/fake-world.js';

describe('reentrancy per session (criterion 4)', () => {
  it('two nested acquires make one L4 with one token, and exactly one L6 on the outer release', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession());
    const outer = await world.run(session.acquire('orders'));
    const inner = await world.run(session.acquire('orders'));
    expect(inner).toBe(outer);
    expect(inner!.fencingToken).toBe(outer!.fencingToken);
    expect(world.server.count('L4')).toBe(1);

    await world.run(session.release(inner!));
    expect(world.server.count('L6')).toBe(0);
    expect(outer!.signal.aborted).toBe(false);
    expect(world.server.holder('orders')?.sessionId).toBe(session.sessionId);

    await world.run(session.release(outer!));
    expect(world.server.count('L6')).toBe(1);
    expect(world.server.holder('orders')).toBeUndefined();
    expect(outer!.signal.aborted).toBe(true);
    expect(outer!.lost).toBe(false);
  });

  it('re-acquiring a key whose handle is lost throws LockLostError and sends no L4', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession());
    const handle = await world.run(session.withLock('orders', async (h) => {
      world.server.revoke('orders');
      // The next renewal is refused: the handle is lost, its signal aborts.
      await world.run(new Promise<void>((resolve) => h.signal.addEventListener('abort', () => resolve())));
      expect(h.lost).toBe(true);
      const l4Before = world.server.count('L4');
      await expect(session.acquire('orders')).rejects.toBeInstanceOf(LockLostError);
      expect(world.server.count('L4')).toBe(l4Before);
      return h;
    }));
    expect(handle!.lost).toBe(true);
    expect(handle!.signal.reason).toBeInstanceOf(LockLostError);
    // Once fully released, the key can be taken again, with a new, higher token.
    const again = await world.run(session.acquire('orders'));
    expect(BigInt(again!.fencingToken)).toBeGreaterThan(BigInt(handle!.fencingToken));
  });

  it('a second acquire while the first is still in flight is not a nested hold: it gets null and sends nothing', async () => {
    const world = fakeWorld();
    const client = world.client({ network: { latency: () => 10 } });
    const session = await world.run(client.openSession());
    const first = session.acquire('orders');
    const second = await session.acquire('orders');
    expect(second).toBeNull();
    const handle = await world.run(first);
    expect(handle).not.toBeNull();
    expect(world.server.count('L4')).toBe(1);
    // The first holder's depth is still 1: one release frees the lock.
    await world.run(session.release(handle!));
    expect(world.server.holder('orders')).toBeUndefined();
  });

  it('reentrancy is per session: another session of the same client contends', async () => {
    const world = fakeWorld();
    const client = world.client();
    const a = await world.run(client.openSession());
    const b = await world.run(client.openSession());
    expect(await world.run(a.acquire('k'))).not.toBeNull();
    expect(await world.run(b.acquire('k', { policy: { totalBudgetMillis: 200 } }))).toBeNull();
  });

  it('releasing a handle this session does not hold throws ValidationError', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession());
    const handle = await world.run(session.acquire('k'));
    await world.run(session.release(handle!));
    await expect(session.release(handle!)).rejects.toBeInstanceOf(ValidationError);
    expect(world.server.count('L6')).toBe(1);
  });
});
