import { describe, expect, it } from 'vitest';
import { SessionLostError } from '../../client/errors.js';
import type { LockHandle } from '../../client/handle.js';
import { error } from './support/fake-lock-server.js';
import { fakeWorld } from './support/fake-world.js';

async function lostCount(world: ReturnType<typeof fakeWorld>): Promise<number> {
  const metric = await world.registry.getSingleMetric('lock_session_lost_total')?.get();
  return (metric?.values ?? []).reduce((sum, v) => sum + v.value, 0);
}

function watchAborts(handles: LockHandle[], clock: { now(): number }): Map<LockHandle, number> {
  const abortedAt = new Map<LockHandle, number>();
  for (const h of handles) h.signal.addEventListener('abort', () => abortedAt.set(h, clock.now()));
  return abortedAt;
}

describe('session loss (criterion 5, clock-driven part)', () => {
  it('a server that stops answering heartbeats: every handle lost, signal aborted, before the conservative deadline; counter +1 once', async () => {
    const world = fakeWorld();
    let silent = false;
    const client = world.client({
      network: { latency: () => 5, fault: (r) => (silent && r.path.endsWith('/heartbeat') ? 'drop_request' : 'none') },
    });
    const ttl = 6_000;
    const session = await world.run(client.openSession({ ttlMillis: ttl }));
    const handles = (await world.run(session.acquireAll(['a', 'b', 'c'], { ttlMillis: 60_000 })))!;
    await world.clock.advance(5_000); // a heartbeat succeeds at ~2,000 and ~4,000
    const lastOk = world.server.calls.filter((c) => c.route === 'L2').at(-1)!;
    silent = true;
    const abortedAt = watchAborts(handles, world.clock);

    await world.clock.advance(20_000);

    // The last successful heartbeat was sent ≤ 5 ms before the server saw it.
    const conservativeDeadline = lastOk.at - 5 + ttl - 500;
    expect(session.lost).toBe(true);
    for (const h of handles) {
      expect(h.lost).toBe(true);
      expect(h.signal.aborted).toBe(true);
      expect(h.signal.reason).toBeInstanceOf(SessionLostError);
      expect(abortedAt.get(h)).toBeLessThanOrEqual(conservativeDeadline);
      // ...and strictly before the server could expire the session and regrant the locks.
      expect(abortedAt.get(h)).toBeLessThan(lastOk.at + ttl);
    }
    expect(session.signal.aborted).toBe(true);
    expect(await lostCount(world)).toBe(1);
    const metric = await world.registry.getSingleMetric('lock_session_lost_total')!.get();
    expect(metric.values[0]!.labels).toEqual({ backend: 'embedded' });
    await expect(session.acquire('d')).rejects.toBeInstanceOf(SessionLostError);
  });

  it('heartbeats answered 503 keep being retried; the deadline still rules', async () => {
    const world = fakeWorld();
    world.server.backendHeader = 'etcd';
    const session = await world.run(world.client().openSession({ ttlMillis: 3_000 }));
    const handle = (await world.run(session.acquire('k')))!;
    world.server.intercept = (c) => (c.route === 'L2' ? error(503, 'NOT_LEADER', 'no leader', true) : undefined);
    await world.clock.advance(10_000);
    expect(handle.lost).toBe(true);
    expect(world.server.count('L2')).toBeGreaterThan(3);
    const metric = await world.registry.getSingleMetric('lock_session_lost_total')!.get();
    expect(metric.values).toEqual([expect.objectContaining({ labels: { backend: 'etcd' }, value: 1 })]);
  });

  it('a killed session (heartbeat answered SESSION_NOT_FOUND) is lost at the next heartbeat, counted once', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 9_000 }));
    const handle = (await world.run(session.acquire('k')))!;
    const killedAt = world.clock.now();
    world.server.kill(session.sessionId);
    await world.clock.advance(3_000);
    expect(handle.lost).toBe(true);
    expect(session.lost).toBe(true);
    expect((handle.signal.reason as SessionLostError).lossCause).toBe('not_found');
    expect(world.clock.now() - killedAt).toBeLessThanOrEqual(session.heartbeatIntervalMillis);
    await world.clock.advance(60_000);
    expect(await lostCount(world)).toBe(1);
  });

  it('a missing or unknown holdfast-backend header never becomes a label value', async () => {
    for (const header of [null, 'cassandra']) {
      const world = fakeWorld();
      world.server.backendHeader = header;
      const session = await world.run(world.client().openSession({ ttlMillis: 3_000 }));
      world.server.kill(session.sessionId);
      await world.clock.advance(2_000);
      const metric = await world.registry.getSingleMetric('lock_session_lost_total')!.get();
      expect(metric.values).toEqual([expect.objectContaining({ labels: { backend: 'embedded' }, value: 1 })]);
    }
  });

  it('close() ends heartbeats, aborts handles and sends L3; no loss is counted', async () => {
    const world = fakeWorld();
    const session = await world.run(world.client().openSession({ ttlMillis: 3_000 }));
    const handle = (await world.run(session.acquire('k')))!;
    await world.run(session.close());
    expect(world.server.count('L3')).toBe(1);
    expect(handle.signal.aborted).toBe(true);
    const beats = world.server.count('L2');
    await world.clock.advance(30_000);
    expect(world.server.count('L2')).toBe(beats);
    expect(await lostCount(world)).toBe(0);
    expect(world.server.holder('k')).toBeUndefined();
  });
});
