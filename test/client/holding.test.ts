/**
 * `session.acquire(key, { mode, limit })` (issue 23 slice 2) against the scripted fake server:
 * what L4 carries (mode/limit only when not a mutex's), what is refused before anything is sent,
 * 409 LIMIT_MISMATCH as LimitMismatchError (one call, not retried), the handle's `mode`/`limit`
 * from its grant, a nested acquire of another kind refused, a waiting semaphore acquire waiting
 * on the server like a mutex one, and a grant of another kind than asked given back. Server-side
 * waits: each at most half the grant's vouched life, and one the server ran to its end is
 * followed by the next L4 at once (a waiting writer stays recorded, so readers cannot slip in).
 */
import { describe, expect, it } from 'vitest';
import { LimitMismatchError, ValidationError } from '../../client/errors.js';
import type { AcquireOptions } from '../../client/session.js';
import type { Transport, TransportRequest, TransportResponse } from '../../client/transport.js';
import { error } from './support/fake-lock-server.js';
import { FakeTransport } from './support/fake-transport.js';
import { fakeWorld, type FakeWorld } from './support/fake-world.js';

const l4Bodies = (world: FakeWorld) => world.server.calls.filter((c) => c.route === 'L4').map((c) => c.body);

describe('acquire with mode and limit', () => {
  it('sends limit and mode only when not a mutex’s; the handle tells its grant’s mode and limit', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    const mutex = (await world.run(session.acquire('m')))!;
    const explicitMutex = (await world.run(session.acquire('m2', { mode: 'exclusive', limit: 1 })))!;
    const permit = (await world.run(session.acquire('s', { limit: 3 })))!;
    const reader = (await world.run(session.acquire('r', { mode: 'shared' })))!;
    expect(l4Bodies(world).map(({ mode, limit }) => ({ mode, limit }))).toEqual([
      { mode: undefined, limit: undefined },
      { mode: undefined, limit: undefined },
      { mode: undefined, limit: 3 },
      { mode: 'shared', limit: undefined },
    ]);
    expect([mutex, explicitMutex, permit, reader].map((h) => [h.mode, h.limit])).toEqual([
      ['exclusive', 1],
      ['exclusive', 1],
      ['exclusive', 3],
      ['shared', 1],
    ]);
  });

  it('a grant without mode or limit (a server before v3) is a mutex', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    world.server.intercept = (c) => {
      if (c.route !== 'L4') return undefined;
      const now = world.clock.now();
      return { status: 200, body: { key: 'old', sessionId: session.sessionId, fencingToken: '7', ttlMillis: 30_000, grantedAt: now, expiresAt: now + 30_000 } };
    };
    const handle = (await world.run(session.acquire('old')))!;
    expect([handle.mode, handle.limit]).toEqual(['exclusive', 1]);
  });

  it.each<[string, AcquireOptions]>([
    ['shared with limit 2', { mode: 'shared', limit: 2 }],
    ['limit 0', { limit: 0 }],
    ['limit 1001', { limit: 1_001 }],
    ['limit 2.5', { limit: 2.5 }],
    ['limit NaN', { limit: Number.NaN }],
    ['limit as a string', { limit: '3' as unknown as number }],
    ['an unknown mode', { mode: 'read' as unknown as 'shared' }],
    ['waitMillis beside the options (it belongs in policy)', { waitMillis: 3_000 } as unknown as AcquireOptions],
    ['a misspelt option', { ttlMilis: 5_000 } as unknown as AcquireOptions],
  ])('refuses %s with a ValidationError before anything is sent', async (_, options) => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    await expect(world.run(session.acquire('k', options))).rejects.toBeInstanceOf(ValidationError);
    await expect(world.run(session.acquireAll(['k', 'j'], options))).rejects.toBeInstanceOf(ValidationError);
    await expect(world.run(session.withLock('k', () => 1, options))).rejects.toBeInstanceOf(ValidationError);
    expect(world.server.count('L4')).toBe(0);
  });

  it('an unknown option names itself and, for a policy field, where it belongs; one set to undefined is let be', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    const thrown = await world.run(session.acquire('k', { waitMillis: 3_000 } as unknown as AcquireOptions)).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(ValidationError);
    expect((thrown as Error).message).toContain('unknown acquire option "waitMillis" (a policy field: pass it as policy: { waitMillis })');
    const granted = await world.run(session.acquire('k', { ttlMillis: 30_000, extra: undefined } as unknown as AcquireOptions));
    expect(granted?.key).toBe('k');
  });

  it('409 LIMIT_MISMATCH: LimitMismatchError after one L4, not retryable, naming the key and the limit asked', async () => {
    const world = fakeWorld();
    world.server.intercept = (c) => (c.route === 'L4' ? error(409, 'LIMIT_MISMATCH', 'the key is held with limit 2') : undefined);
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    const thrown = await world.run(session.acquire('s', { limit: 3, policy: { waitMillis: 5_000, totalBudgetMillis: 20_000 } })).catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(LimitMismatchError);
    const mismatch = thrown as LimitMismatchError;
    expect([mismatch.code, mismatch.retryable, mismatch.key, mismatch.limit]).toEqual(['LIMIT_MISMATCH', false, 's', 3]);
    expect(mismatch.serverMessage).toBe('the key is held with limit 2');
    expect(mismatch.requestId).toMatch(/^req-/);
    expect(world.server.count('L4')).toBe(1);
    expect(session.lost).toBe(false);
  });

  it('a waiting semaphore or shared acquire waits on the server like a mutex one (waitMillis sent with limit / mode)', async () => {
    const world = fakeWorld();
    let contended = 2;
    world.server.intercept = (c) => (c.route === 'L4' && contended-- > 0 ? error(409, 'LOCK_CONTENDED', 'held', true) : undefined);
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    const handle = await world.run(session.acquire('s', { limit: 4, policy: { waitMillis: 2_000, totalBudgetMillis: 30_000 } }));
    expect(handle).not.toBeNull();
    contended = 1;
    await world.run(session.acquire('r', { mode: 'shared', policy: { waitMillis: 2_000, totalBudgetMillis: 30_000 } }));
    const bodies = l4Bodies(world);
    expect(bodies).toHaveLength(5);
    for (const body of bodies) expect(body.waitMillis).toBe(2_000);
    expect(bodies.slice(0, 3).every((b) => b.limit === 4 && b.mode === undefined)).toBe(true);
    expect(bodies.slice(3).every((b) => b.mode === 'shared' && b.limit === undefined)).toBe(true);
  });

  it('a nested acquire of the held kind nests (no L4); of another kind it is a ValidationError, the hold unchanged', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    const reader = (await world.run(session.acquire('r', { mode: 'shared' })))!;
    expect(await world.run(session.acquire('r', { mode: 'shared' }))).toBe(reader);
    await expect(world.run(session.acquire('r'))).rejects.toThrow(/holds "r" as shared; a nested acquire cannot ask for a mutex/);
    await expect(world.run(session.acquire('r', { limit: 2 }))).rejects.toBeInstanceOf(ValidationError);
    expect(world.server.count('L4')).toBe(1);
    await world.run(session.release(reader));
    await world.run(session.release(reader));
    expect(world.server.count('L6')).toBe(1);
  });

  it('a grant of another kind than asked (left by an abandoned acquire of this session) is given back and taken again', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 60_000 }));
    await world.run(session.release((await world.run(session.acquire('other')))!)); // token 1: the fake grant below is older than the next
    // The first answer is a mutex grant the session already had (the server answers the grant it has, whatever is asked).
    world.server.intercept = (c) => {
      if (c.route !== 'L4') return undefined;
      world.server.intercept = undefined;
      const now = world.clock.now();
      return { status: 200, body: { key: 's', sessionId: session.sessionId, fencingToken: '1', ttlMillis: 30_000, grantedAt: now, expiresAt: now + 30_000, mode: 'exclusive', limit: 1 } };
    };
    const handle = (await world.run(session.acquire('s', { limit: 2 })))!;
    expect([handle.mode, handle.limit]).toEqual(['exclusive', 2]);
    const onS = world.server.calls.filter((c) => (c.route === 'L4' || c.route === 'L6') && c.path.includes('/s/'));
    expect(onS.map((c) => `${c.route} ${String(c.body.fencingToken ?? '')}`)).toEqual(['L4 ', 'L6 1', 'L4 ']);
  });
});

/** The fake server with real server-side waits: a contended L4 is answered when its `waitMillis` has passed. */
class WaitingServer implements Transport {
  contendedAnswers: number;
  constructor(
    private readonly world: FakeWorld,
    contended: number,
    private readonly inner = new FakeTransport(world.server, world.clock),
  ) {
    this.contendedAnswers = contended;
  }
  async send(request: TransportRequest): Promise<TransportResponse> {
    const body = (request.body ?? {}) as { waitMillis?: number };
    if (request.path.endsWith('/acquire') && this.contendedAnswers > 0) {
      this.contendedAnswers -= 1;
      this.world.server.intercept = () => error(409, 'LOCK_CONTENDED', 'held', true);
      const answer = await this.inner.send(request);
      this.world.server.intercept = undefined;
      await this.world.clock.sleep(body.waitMillis ?? 0, request.signal);
      return answer;
    }
    return this.inner.send(request);
  }
}

describe('server-side waits', () => {
  it('each wait is at most half the vouched life of the TTL asked; one the server waited out is followed by the next L4 at once; the grant is kept', async () => {
    const world = fakeWorld();
    const client = world.client({ transport: new WaitingServer(world, 3) });
    const session = await world.run(client.openSession({ ttlMillis: 60_000 }));
    // TTL 5 s, margin 500 ms: vouched for 4.5 s from the L4's send, so waits of 2.25 s.
    const handle = await world.run(session.acquire('w', { ttlMillis: 5_000, policy: { waitMillis: 30_000, totalBudgetMillis: 20_000 } }));
    expect(handle).not.toBeNull();
    const l4 = world.server.calls.filter((c) => c.route === 'L4');
    expect(l4.map((c) => c.body.waitMillis)).toEqual([2_250, 2_250, 2_250, 2_250]);
    expect(l4.slice(1).map((c, i) => c.at - l4[i]!.at)).toEqual([2_250, 2_250, 2_250]);
    expect(world.server.count('L6')).toBe(0);
    expect(handle!.lost).toBe(false);
  });

  it('without ttlMillis the waits are half the vouched life of C3’s default TTL (30 s)', async () => {
    const world = fakeWorld();
    const client = world.client({ transport: new WaitingServer(world, 1) });
    const session = await world.run(client.openSession({ ttlMillis: 60_000 }));
    await world.run(session.acquire('w', { policy: { waitMillis: 30_000, totalBudgetMillis: 60_000 } }));
    expect(world.server.calls.filter((c) => c.route === 'L4').map((c) => c.body.waitMillis)).toEqual([14_750, 14_750]);
  });
});
