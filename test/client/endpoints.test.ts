/**
 * SDK endpoints (issue 11): `baseUrl: [a, b]` — two instances in front of one
 * store, modelled as two FakeTransports onto one FakeLockServer. When one
 * instance fails (refuses, goes silent, answers 503) the client moves to the
 * other within its budget and keeps its session: acquires, heartbeats and
 * renewals all carry on with the same session id and token.
 */
import { describe, expect, it } from 'vitest';
import { LockClient } from '../../client/client.js';
import { EndpointsTransport } from '../../client/endpoints.js';
import { ValidationError } from '../../client/errors.js';
import type { Transport, TransportRequest, TransportResponse } from '../../client/transport.js';
import { FakeTransport } from './support/fake-transport.js';
import { fakeWorld } from './support/fake-world.js';

type Mode = 'up' | 'refuse' | 'silent' | 'unavailable';

/** One instance: its own network to the shared server, and a switch to break it. */
class Instance implements Transport {
  mode: Mode = 'up';
  sent = 0;
  constructor(private readonly inner: Transport) {}
  async send(request: TransportRequest): Promise<TransportResponse> {
    this.sent += 1;
    if (this.mode === 'refuse') throw new TypeError('fetch failed (connect ECONNREFUSED)');
    if (this.mode === 'silent') {
      return new Promise((_, reject) => request.signal?.addEventListener('abort', () => reject(request.signal!.reason), { once: true }));
    }
    if (this.mode === 'unavailable') {
      const body = { error: { code: 'NOT_LEADER', message: 'draining', retryable: true } };
      return { status: 503, header: (n) => (n.toLowerCase() === 'retry-after' ? '1' : null), body };
    }
    return this.inner.send(request);
  }
}

function twoInstances(seed = 1) {
  const world = fakeWorld(seed);
  const a = new Instance(new FakeTransport(world.server, world.clock, { latency: () => 2 }));
  const b = new Instance(new FakeTransport(world.server, world.clock, { latency: () => 2 }));
  const endpoints = new EndpointsTransport([a, b]);
  const client = world.client({ transport: endpoints });
  return { world, a, b, endpoints, client };
}

describe('SDK endpoints', () => {
  it.each<Mode>(['refuse', 'unavailable', 'silent'])(
    'instance A %s: acquire, heartbeats and renewals move to B with the same session',
    async (mode) => {
      const { world, a, b, endpoints, client } = twoInstances();
      const session = await world.run(client.openSession({ ttlMillis: 3_000 }));
      expect(a.sent).toBe(1);
      const sessionToken = world.server.calls[0]!.authorization;
      expect(sessionToken).toBeUndefined(); // L1 carries no session token; later calls carry the one L1 handed out
      a.mode = mode;

      // 10 s: a silent A costs one request timeout (2 s) before the grant through B, which the
      // SDK vets against the earliest unanswered send.
      const handle = await world.run(session.acquire('moved', { ttlMillis: 10_000 }));
      expect(handle).not.toBeNull();
      expect(world.server.holder('moved')).toEqual({ sessionId: session.sessionId, token: handle!.fencingToken });
      expect(endpoints.current).toBe(1);
      await world.run(session.release(handle!));

      // withLock renews in the background; heartbeats keep the session: run for 5 session TTLs.
      const work = session.withLock('renewed', async (held) => {
        await world.clock.sleep(15_000);
        return held.lost;
      }, { ttlMillis: 2_000 });
      expect(await world.run(work)).toBe(false);
      expect(session.lost).toBe(false);

      const viaB = world.server.calls.slice(1);
      const heartbeats = viaB.filter((c) => c.route === 'L2');
      const renewals = viaB.filter((c) => c.route === 'L5');
      console.log(`A ${mode}: ${a.sent} requests to A, ${b.sent} to B (${heartbeats.length} heartbeats, ${renewals.length} renewals), ${endpoints.moves} moves`);
      expect(heartbeats.length).toBeGreaterThanOrEqual(5);
      expect(renewals.length).toBeGreaterThanOrEqual(5);
      // Every call B served named the session opened through A, with its token.
      for (const call of viaB) {
        if (call.route === 'L4' || call.route === 'L5' || call.route === 'L2') {
          expect(call.path.includes(session.sessionId) || call.body.sessionId === session.sessionId).toBe(true);
          expect(call.authorization).toMatch(/^Bearer secret-token-of-/);
        }
      }
      // The client stuck with B rather than trying A on every request.
      expect(a.sent).toBeLessThanOrEqual(3);
      await world.run(session.close());
    },
  );

  it('both down, then B returns: the acquire succeeds within its budget', async () => {
    const { world, a, b, client } = twoInstances(2);
    const session = await world.run(client.openSession({ ttlMillis: 15_000 }));
    a.mode = 'refuse';
    b.mode = 'unavailable';
    const started = world.clock.now();
    const pending = session.acquire('later', { policy: { totalBudgetMillis: 10_000, maxAttempts: 100 } });
    await world.clock.advance(3_000);
    b.mode = 'up';
    const handle = await world.run(pending);
    expect(handle).not.toBeNull();
    expect(world.clock.now() - started).toBeLessThan(10_000);
    await world.run(session.close());
  });

  it('all endpoints answering 503: the caller sees the 503 (NOT_LEADER) after its budget, not a hang', async () => {
    const { world, a, b, client } = twoInstances(3);
    const session = await world.run(client.openSession({ ttlMillis: 15_000 }));
    a.mode = 'unavailable';
    b.mode = 'unavailable';
    await expect(world.run(session.acquire('never', { policy: { totalBudgetMillis: 2_000 } }))).rejects.toThrow(/draining/);
    expect(a.sent + b.sent).toBeGreaterThan(2);
  });

  it('A acts on an acquire but its answer is lost while B answers 503: the grant is measured from that send, not a later one', async () => {
    const { world, a, b, client } = twoInstances(4);
    const session = await world.run(client.openSession({ ttlMillis: 60_000 }));
    // A grants the first L4, then the connection drops before its answer; A and B then answer 503 for a while.
    const inner = a.send.bind(a);
    let lostOne = false;
    a.send = async (request) => {
      if (lostOne || !request.path.endsWith('/acquire')) return inner(request);
      lostOne = true;
      await inner(request);
      a.mode = 'unavailable';
      throw new TypeError('fetch failed (connection reset)');
    };
    b.mode = 'unavailable';
    const pending = session.acquire('k', { ttlMillis: 4_000, policy: { totalBudgetMillis: 10_000, maxAttempts: 100 } });
    await world.clock.advance(2_500);
    const firstSend = world.server.calls.find((c) => c.route === 'L4')!.at;
    const granted = world.server.holder('k')!;
    a.mode = 'up';
    b.mode = 'up';
    const handle = (await world.run(pending))!;
    // The server answered the grant A made (no TTL change): vouched for from A's send only.
    expect(handle.fencingToken).toBe(granted.token);
    expect(handle.expiresAt).toBeLessThanOrEqual(firstSend + 4_000 - 500);
    await world.run(session.close());
  });

  it('one endpoint silent and the other answering 503 for the whole budget: NotLeaderError, what the server said', async () => {
    const { world, a, b, client } = twoInstances(5);
    const session = await world.run(client.openSession({ ttlMillis: 15_000 }));
    a.mode = 'refuse';
    b.mode = 'unavailable';
    await expect(world.run(session.acquire('never', { policy: { totalBudgetMillis: 2_000 } }))).rejects.toThrow(/draining/);
  });

  it('a single string baseUrl still works; an empty list is refused', () => {
    expect(() => new LockClient({ baseUrl: 'http://127.0.0.1:1' })).not.toThrow();
    expect(() => new LockClient({ baseUrl: ['http://127.0.0.1:1', 'http://127.0.0.1:2'] })).not.toThrow();
    expect(() => new LockClient({ baseUrl: [] })).toThrow(ValidationError);
    expect(() => new LockClient({ baseUrl: ['http://127.0.0.1:1', ''] })).toThrow(ValidationError);
  });
});
