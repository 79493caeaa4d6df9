import { describe, expect, it } from 'vitest';
import {
  NotLeaderError,
  ServerError,
  SessionLostError,
  TransportError,
  ValidationError,
} from '../../client/errors.js';
import { AcquirePolicy } from '../../client/policy.js';
import { error } from './support/fake-lock-server.js';
import { dropFirstAcquireAnswer } from './support/fake-transport.js';
import { fakeWorld } from './support/fake-world.js';

describe('acquire budget against a server that always answers 409 (criterion 2)', () => {
  it.each([
    ['budget binds (many attempts allowed)', { maxAttempts: 1_000 }, 0],
    ['attempts bind (default 12)', {}, 0],
    ['budget binds with 40 ms round trips', { maxAttempts: 1_000 }, 20],
  ])('%s: returns null, ≤ maxAttempts L4 calls, never past the deadline', async (_name, init, oneWayMillis) => {
    for (let seed = 1; seed <= 40; seed += 1) {
      const world = fakeWorld(seed);
      world.server.intercept = (call) => (call.route === 'L4' ? error(409, 'LOCK_CONTENDED', 'held', true) : undefined);
      const client = world.client({ network: { latency: () => oneWayMillis } });
      const session = await world.run(client.openSession({ ttlMillis: 15_000 }));
      const policy = new AcquirePolicy(init);
      const start = world.clock.now();
      const deadline = start + policy.totalBudgetMillis;

      const handle = await world.run(session.acquire('contended', { policy }));
      const returnedAt = world.clock.now();

      const l4 = world.server.calls.filter((c) => c.route === 'L4');
      expect(handle).toBeNull();
      expect(l4.length).toBeGreaterThanOrEqual(1);
      expect(l4.length).toBeLessThanOrEqual(policy.maxAttempts);
      // Every attempt was answered, and the call returned, no later than the deadline.
      expect(returnedAt).toBeLessThanOrEqual(deadline);
      for (const call of l4) expect(call.at).toBeLessThanOrEqual(deadline);
      // It used the budget rather than giving up early: the last retry was the last one that fit.
      if (policy.maxAttempts > 12) expect(returnedAt).toBeGreaterThan(deadline - policy.maxBackoffMillis - 2 * oneWayMillis);
      world.server.intercept = undefined;
      await world.run(session.close());
    }
  });

  it('runs in milliseconds of real time although the budget is 10 s of clock time', async () => {
    const world = fakeWorld(3);
    world.server.intercept = (call) => (call.route === 'L4' ? error(409, 'LOCK_CONTENDED', 'held', true) : undefined);
    const session = await world.run(world.client().openSession());
    const realStart = performance.now();
    const start = world.clock.now();
    expect(await world.run(session.acquire('k', { policy: { maxAttempts: 1_000 } }))).toBeNull();
    expect(world.clock.now() - start).toBeGreaterThan(7_000);
    expect(performance.now() - realStart).toBeLessThan(5_000);
  });

  it('waits at least the server Retry-After on CONTENTION_EXCEEDED', async () => {
    const world = fakeWorld(4);
    world.server.intercept = (call) =>
      call.route === 'L4' && world.server.count('L4') === 1 ? error(429, 'CONTENTION_EXCEEDED', 'budget', true) : undefined;
    const session = await world.run(world.client().openSession());
    const handle = await world.run(session.acquire('k'));
    const [first, second] = world.server.calls.filter((c) => c.route === 'L4');
    expect(handle).not.toBeNull();
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1_000);
  });
});

describe('acquire answers (criterion 3)', () => {
  it('NOT_LEADER twice then 200: a grant whose token equals the server’s', async () => {
    const world = fakeWorld(5);
    world.server.intercept = (call) =>
      call.route === 'L4' && world.server.count('L4') <= 2 ? error(503, 'NOT_LEADER', 'no leader', true) : undefined;
    const session = await world.run(world.client().openSession());
    const handle = await world.run(session.acquire('ledger'));
    expect(handle).not.toBeNull();
    expect(world.server.count('L4')).toBe(3);
    expect(handle!.fencingToken).toBe(world.server.holder('ledger')!.token);
    expect(world.server.holder('ledger')!.sessionId).toBe(session.sessionId);
    const [first, second, third] = world.server.calls.filter((c) => c.route === 'L4');
    // Each retry waited at least the short fixed floor.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(100);
    expect(third!.at - second!.at).toBeGreaterThanOrEqual(100);
  });

  it('VALIDATION_FAILED: throws at once with one call', async () => {
    const world = fakeWorld(6);
    world.server.intercept = (call) => (call.route === 'L4' ? error(400, 'VALIDATION_FAILED', 'bad ttl') : undefined);
    const session = await world.run(world.client().openSession());
    const start = world.clock.now();
    await expect(world.run(session.acquire('k'))).rejects.toBeInstanceOf(ValidationError);
    expect(world.server.count('L4')).toBe(1);
    expect(world.clock.now()).toBe(start);
  });

  it('any other non-retryable answer (403, 500) throws at once with one call', async () => {
    for (const [status, code] of [
      [403, 'FORBIDDEN'],
      [500, 'INTERNAL'],
    ] as const) {
      const world = fakeWorld(7);
      world.server.intercept = (call) => (call.route === 'L4' ? error(status, code, 'no') : undefined);
      const session = await world.run(world.client().openSession());
      const failure = await world.run(session.acquire('k')).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(ServerError);
      expect((failure as ServerError).serverCode).toBe(code);
      expect(world.server.count('L4')).toBe(1);
    }
  });

  it('an invalid key throws ValidationError and sends nothing', async () => {
    const world = fakeWorld(8);
    const session = await world.run(world.client().openSession());
    for (const key of ['', 'a\u0000b', 'x'.repeat(513), '\uD800']) {
      await expect(session.acquire(key)).rejects.toBeInstanceOf(ValidationError);
    }
    expect(world.server.count('L4')).toBe(0);
  });

  it('NOT_LEADER for the whole budget throws NotLeaderError within the budget', async () => {
    const world = fakeWorld(9);
    world.server.intercept = (call) => (call.route === 'L4' ? error(503, 'NOT_LEADER', 'no leader', true) : undefined);
    const session = await world.run(world.client().openSession());
    const start = world.clock.now();
    await expect(world.run(session.acquire('k', { policy: { totalBudgetMillis: 2_000 } }))).rejects.toBeInstanceOf(
      NotLeaderError,
    );
    expect(world.clock.now() - start).toBeLessThanOrEqual(2_000);
    expect(world.server.count('L4')).toBeGreaterThan(1);
  });

  it('SESSION_NOT_FOUND on acquire loses the session and throws SessionLostError', async () => {
    const world = fakeWorld(10);
    const session = await world.run(world.client().openSession());
    world.server.kill(session.sessionId);
    await expect(world.run(session.acquire('k'))).rejects.toBeInstanceOf(SessionLostError);
    expect(session.lost).toBe(true);
    await expect(session.acquire('other')).rejects.toBeInstanceOf(SessionLostError);
    expect(world.server.count('L4')).toBe(1);
  });

  it('a lost response is retried and returns the same grant (L4 is idempotent per session)', async () => {
    const world = fakeWorld(11);
    const client = world.client({ network: dropFirstAcquireAnswer() });
    const session = await world.run(client.openSession());
    const handle = await world.run(session.acquire('k', { policy: { totalBudgetMillis: 60_000 } }));
    expect(handle).not.toBeNull();
    expect(world.server.count('L4')).toBe(2);
    expect(handle!.fencingToken).toBe(world.server.holder('k')!.token);
    // The deadline is measured from the FIRST (unanswered) attempt, which may be the one that granted.
    const firstSend = world.server.calls.find((c) => c.route === 'L4')!.at;
    expect(handle!.expiresAt).toBeLessThanOrEqual(firstSend + 30_000);
  });

  describe('an existing grant from an earlier call whose answer was lost', () => {
    /** Call 1 is granted (ttl 3 s) by the server, but its answer is lost and it gives up. */
    async function lostFirstGrant() {
      const world = fakeWorld(13);
      const client = world.client({ network: dropFirstAcquireAnswer() });
      const session = await world.run(client.openSession({ ttlMillis: 60_000 }));
      const first = session.acquire('k', { ttlMillis: 3_000, policy: { totalBudgetMillis: 1_000 } });
      await expect(world.run(first)).rejects.toBeInstanceOf(TransportError);
      const grantedAt = world.server.calls.find((c) => c.route === 'L4')!.at;
      const lost = world.server.holder('k')!;
      expect(lost.sessionId).toBe(session.sessionId);
      return { world, session, grantedAt, lost };
    }

    it('is measured from that call’s send time, not this one’s', async () => {
      const { world, session, grantedAt, lost } = await lostFirstGrant();
      await world.clock.advanceTo(grantedAt + 2_000); // the old grant lives until grantedAt + 3,000
      const handle = await world.run(session.acquire('k', { ttlMillis: 3_000 }));
      expect(handle!.fencingToken).toBe(lost.token);
      expect(handle!.expiresAt).toBe(grantedAt + 3_000 - 500);
      expect(world.server.count('L6')).toBe(0);
    });

    it('is given back, and a fresh token taken, when that deadline has passed', async () => {
      const { world, session, grantedAt, lost } = await lostFirstGrant();
      await world.clock.advanceTo(grantedAt + 2_700); // alive on the server, past our deadline
      const handle = await world.run(session.acquire('k', { ttlMillis: 3_000 }));
      expect(handle!.fencingToken).not.toBe(lost.token);
      expect(world.server.calls.filter((c) => c.route === 'L6').map((c) => c.body.fencingToken)).toEqual([lost.token]);
      expect(world.server.holder('k')!.token).toBe(handle!.fencingToken);
      expect(handle!.expiresAt).toBeGreaterThan(world.clock.now());
    });
  });

  it('the server said NOT_LEADER, then the last attempts went unanswered: NotLeaderError (what the server said), not TransportError', async () => {
    const world = fakeWorld(13);
    let acquires = 0;
    const client = world.client({
      // The first L4 is answered 503 NOT_LEADER; every later one is lost on the way (a store outage
      // seen through a flaky network): the budget ends on an unanswered attempt.
      network: { fault: (request) => (request.path.endsWith('/acquire') && ++acquires > 1 ? 'drop_request' : 'none') },
    });
    world.server.intercept = (call) => (call.route === 'L4' ? error(503, 'NOT_LEADER', 'the postgres store is unreachable', true) : undefined);
    const session = await world.run(client.openSession());
    const failure = await world.run(session.acquire('k', { policy: { totalBudgetMillis: 3_000 } })).catch((e: unknown) => e);
    expect(acquires).toBeGreaterThan(1);
    expect(failure).toBeInstanceOf(NotLeaderError);
    expect((failure as NotLeaderError).message).toContain('unreachable');
  });

  it('a server that never answers: TransportError after the budget, not a hang', async () => {
    const world = fakeWorld(12);
    const client = world.client({
      network: { fault: (request) => (request.path.endsWith('/acquire') ? 'drop_request' : 'none') },
    });
    const session = await world.run(client.openSession());
    const start = world.clock.now();
    await expect(world.run(session.acquire('k', { policy: { totalBudgetMillis: 3_000 } }))).rejects.toBeInstanceOf(
      TransportError,
    );
    expect(world.clock.now() - start).toBeLessThanOrEqual(3_000 + 250);
  });
});
