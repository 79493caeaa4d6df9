/**
 * An acquire its caller aborts while its L4 is in flight (C2 "Abort"): the L4 may still be granted.
 * Until its answer is settled the key stays in flight in the session (a new acquire of it answers
 * null), so the give-back of a late grant can never take a lock from a handle; and the abandoned L4
 * counts as unanswered, so a later grant of the key (the same grant, no TTL change) is measured from
 * its send, not the retry's. Invariant checked throughout: a handle that is not lost names the
 * server's holder of its key.
 */
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../client/clock.js';
import type { LockHandle } from '../../client/index.js';
import type { Transport, TransportRequest, TransportResponse } from '../../client/transport.js';
import type { FakeLockServer } from './support/fake-lock-server.js';
import { FakeTransport, dropFirstAcquireAnswer } from './support/fake-transport.js';
import { fakeWorld } from './support/fake-world.js';

const TTL = 10_000;
const MARGIN = 500; // fakeWorld's safety margin

/** The server acts on the first L4 at once; its answer then takes `delayMillis` to come back. */
class SlowFirstAnswer implements Transport {
  #slowed = false;
  constructor(
    private readonly inner: Transport,
    private readonly clock: Clock,
    private readonly delayMillis: number,
  ) {}

  async send(request: TransportRequest): Promise<TransportResponse> {
    const answer = await this.inner.send(request);
    if (!this.#slowed && request.path.endsWith('/acquire')) {
      this.#slowed = true;
      await this.clock.sleep(this.delayMillis, request.signal);
    }
    return answer;
  }
}

function expectHeldOnServer(server: FakeLockServer, handle: LockHandle): void {
  if (handle.lost) return;
  expect(server.holder(handle.key)?.token).toBe(handle.fencingToken);
}

describe('an acquire aborted while its L4 is in flight', () => {
  it('a late grant is given back before the key can be acquired again, so no handle loses its lock to it', async () => {
    const world = fakeWorld(21);
    const transport = new SlowFirstAnswer(new FakeTransport(world.server, world.clock), world.clock, 500);
    const client = world.client({ transport });
    const session = await world.run(client.openSession({ ttlMillis: 60_000 }));
    const controller = new AbortController();
    const first = session.acquire('k', { ttlMillis: TTL, signal: controller.signal }).catch((e: unknown) => e);
    await world.clock.advance(100);
    controller.abort(new Error('caller gave up'));
    expect(await first).toBeInstanceOf(Error);
    const granted = world.server.holder('k')!; // the server granted the abandoned L4
    expect(granted.sessionId).toBe(session.sessionId);

    // Its answer is still on the way: the key is in flight, so a retry now gets null and sends nothing.
    expect(await session.acquire('k', { ttlMillis: TTL })).toBeNull();
    expect(world.server.count('L4')).toBe(1);

    // The late answer arrives and its grant is given back.
    await world.clock.advance(500);
    await world.run(Promise.resolve());
    expect(world.server.calls.filter((c) => c.route === 'L6').map((c) => c.body.fencingToken)).toEqual([granted.token]);
    expect(world.server.holder('k')).toBeUndefined();

    const handle = (await world.run(session.acquire('k', { ttlMillis: TTL })))!;
    expect(handle.fencingToken).not.toBe(granted.token);
    expect(handle.lost).toBe(false);
    await world.clock.advance(1_000);
    expectHeldOnServer(world.server, handle);
  });

  it('an abandoned L4 never answered counts as unanswered: the grant it left is measured from its send', async () => {
    const world = fakeWorld(22);
    const client = world.client({ network: dropFirstAcquireAnswer() });
    const session = await world.run(client.openSession({ ttlMillis: 60_000 }));
    const controller = new AbortController();
    const first = session.acquire('k', { ttlMillis: TTL, signal: controller.signal }).catch((e: unknown) => e);
    await world.clock.advance(100);
    const firstSend = world.server.calls.find((c) => c.route === 'L4')!.at;
    controller.abort(new Error('caller gave up'));
    expect(await first).toBeInstanceOf(Error);
    const granted = world.server.holder('k')!;

    // In flight until the request's own timeout ends it (it does not hang): then the key is free to acquire.
    expect(await session.acquire('k', { ttlMillis: TTL })).toBeNull();
    await world.clock.advance(2_500);
    const handle = (await world.run(session.acquire('k', { ttlMillis: TTL })))!;
    // The server answered the grant the abandoned L4 made (no TTL change): vouched for from that send only.
    expect(handle.fencingToken).toBe(granted.token);
    expect(handle.expiresAt).toBeLessThanOrEqual(firstSend + TTL - MARGIN);
    expectHeldOnServer(world.server, handle);
  });
});
