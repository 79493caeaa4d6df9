/**
 * DEADLOCK_DETECTED (SPEC "Deadlock (v2)"): the answer to the youngest wait in a
 * cycle. `acquire` surfaces it as DeadlockDetectedError (not retried: retrying
 * while holding the same locks closes the same cycle); `acquireAll` gives back
 * what it took and tries the whole set again within its one budget.
 */
import { describe, expect, it } from 'vitest';
import { DeadlockDetectedError } from '../../client/errors.js';
import { error } from './support/fake-lock-server.js';
import { fakeWorld } from './support/fake-world.js';

const deadlock = () => error(409, 'DEADLOCK_DETECTED', 'this wait closed a cycle of waits');

describe('DEADLOCK_DETECTED', () => {
  it('acquire throws DeadlockDetectedError after one L4 and keeps what the session holds', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    const held = (await world.run(session.acquire('x')))!;
    world.server.intercept = (c) => (c.route === 'L4' && c.path.includes('/y/') ? deadlock() : undefined);
    const thrown = await world.run(session.acquire('y', { policy: { waitMillis: 5_000 } })).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(DeadlockDetectedError);
    expect((thrown as DeadlockDetectedError).key).toBe('y');
    expect((thrown as DeadlockDetectedError).code).toBe('DEADLOCK_DETECTED');
    expect(world.server.calls.filter((c) => c.route === 'L4' && c.path.includes('/y/'))).toHaveLength(1);
    expect(world.server.count('L6')).toBe(0);
    expect(held.lost).toBe(false);
    expect(world.server.holder('x')?.sessionId).toBe(session.sessionId);
    expect(session.lost).toBe(false);
  });

  it('acquireAll gives back what it took, then takes the whole set again within its budget', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    let deadlocks = 0;
    world.server.intercept = (c) => {
      if (c.route === 'L4' && c.path.includes('/b/') && deadlocks === 0) {
        deadlocks += 1;
        // The server answers the youngest wait; at that instant this session holds `a`.
        expect(world.server.holder('a')?.sessionId).toBe(session.sessionId);
        return deadlock();
      }
      return undefined;
    };
    const started = world.clock.now();
    const handles = await world.run(session.acquireAll(['b', 'a'], { policy: { totalBudgetMillis: 5_000 } }));
    expect(handles?.map((h) => h.key)).toEqual(['a', 'b']);
    expect(world.clock.now() - started).toBeLessThanOrEqual(5_000);
    // a, b (deadlock) → give back a → a, b.
    expect(world.server.calls.filter((c) => c.route === 'L4' || c.route === 'L6').map((c) => `${c.route} ${c.path.split('/')[3]}`)).toEqual([
      'L4 a',
      'L4 b',
      'L6 a',
      'L4 a',
      'L4 b',
    ]);
    expect(world.server.holder('a')?.token).toBe(handles![0]!.fencingToken);
    expect(world.server.holder('b')?.token).toBe(handles![1]!.fencingToken);
  });

  it('acquireAll that deadlocks every round returns null inside its budget, holding nothing', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    world.server.intercept = (c) => (c.route === 'L4' && c.path.includes('/b/') ? deadlock() : undefined);
    const started = world.clock.now();
    const result = await world.run(
      session.acquireAll(['a', 'b'], { policy: { totalBudgetMillis: 2_000, baseBackoffMillis: 50, maxBackoffMillis: 200 } }),
    );
    expect(result).toBeNull();
    expect(world.clock.now() - started).toBeLessThanOrEqual(2_000);
    const rounds = world.server.calls.filter((c) => c.route === 'L4' && c.path.includes('/b/')).length;
    expect(rounds).toBeGreaterThan(1);
    expect(world.server.count('L6')).toBe(rounds);
    expect(world.server.holder('a')).toBeUndefined();
    expect(world.server.holder('b')).toBeUndefined();
  });
});
