/**
 * Two Holdfast servers on one store acting as one service, on PostgreSQL and on etcd: a release
 * answered by one wakes a waiter parked on the other (PostgreSQL: LISTEN/NOTIFY; etcd: the
 * shared watch); L7, A1 and A5 on either count waiters on both (fleet-wide wait state); A7
 * ranks contention seen on both. On PostgreSQL, losing the listening connection makes waits
 * poll (wait_fallback and lock_wait_seconds{outcome="fallback"}) until it re-listens.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readC4EventContracts, violationsOf } from '../observability/support/c4-events.js';
import { eventually, httpClient } from '../support/http.js';
import { waitOutcomeCount } from '../support/metrics.js';
import { FLEET_STORES, startPair } from '../support/fleet-pair.js';
import { sharedPostgres, type TestServer } from '../support/server.js';

async function session(server: TestServer, owner = 'fleet-test') {
  const client = httpClient(server.url);
  const opened = await client.openSession({ ttlMillis: 30_000, owner });
  expect(opened.status).toBe(201);
  return { client, sessionId: opened.body.sessionId as string };
}

describe.each(FLEET_STORES)('two instances on one %s', (store) => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    [a, b] = await startPair(store);
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
  });

  it('a waiter parked on B is woken by a release answered by A; both count it while it waits', async () => {
    const holder = await session(a, 'fleet-holder');
    const waiter = await session(b, 'fleet-waiter');
    const granted = await holder.client.acquire('handoff', { sessionId: holder.sessionId });
    expect(granted.status).toBe(200);
    const registry = b.running.service.waiters;
    // On PostgreSQL the release hands the key to B's recorded wait in the same statement (FIFO handoff).
    const handedOnB: string[] = [];
    const handedOff = registry.handedOff.bind(registry);
    registry.handedOff = (grant) => {
      handedOnB.push(grant.key);
      handedOff(grant);
    };
    const releasedWaitsBefore = await waitCount(b, 'released');
    const waiting = waiter.client.acquire('handoff', { sessionId: waiter.sessionId, waitMillis: 20_000 });
    // Fleet-wide: A has no local waiter, yet its L7, A1 (by key and by age) and A5 count the one parked on B.
    await eventually(async () => (await holder.client.read('handoff')).body.waiterCount === 1);
    const listed = await holder.client.admin(a.viewerToken).listLocks('?prefix=handoff');
    expect(listed.body.items[0].waiterCount).toBe(1);
    // …and so does A1 by age, which reads the held locks another way.
    const byAge = await holder.client.admin(a.viewerToken).listLocks('?prefix=handoff&sort=age');
    expect(byAge.body.items[0].waiterCount).toBe(1);
    expect((await holder.client.admin(a.viewerToken).summary()).body.waiters).toBe(1);
    expect(a.running.service.waiters.total()).toBe(0);
    // …and so does A7w, the wait-for graph, with both owners (issue 23: the console's /waits page).
    const graph = await holder.client.call('GET', '/v1/admin/waits', undefined, { authorization: `Bearer ${a.viewerToken}` });
    expect(graph.body).toMatchObject({
      scope: 'fleet',
      items: [{ waiterSessionId: waiter.sessionId, key: 'handoff', holderSessionId: holder.sessionId, waiterOwner: 'fleet-waiter', holderOwner: 'fleet-holder' }],
    });

    const released = await holder.client.release('handoff', { sessionId: holder.sessionId, fencingToken: granted.body.fencingToken });
    expect(released.status).toBe(200);
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(BigInt(answer.body.fencingToken)).toBeGreaterThan(BigInt(granted.body.fencingToken));
    // Answered by the release, not by a poll: on PostgreSQL the release handed B's wait the key and the
    // feed told B's registry (no try needed); on etcd B's watch woke it to try.
    if (store === 'postgres') expect(handedOnB).toContain('handoff');
    expect(await waitCount(b, 'released')).toBe(releasedWaitsBefore + 1);
    await eventually(async () => (await holder.client.read('handoff')).body.waiterCount === 0);
    expect(b.logs.some((l) => l.event === 'wait_fallback')).toBe(false);
  });

  it('A7 on either instance ranks contention seen on both (each publishes its window with its instance heartbeat)', async () => {
    const holder = await session(a);
    const onA = await session(a);
    const onB = await session(b);
    for (const key of ['fleet-hot', 'fleet-warm']) {
      expect((await holder.client.acquire(key, { sessionId: holder.sessionId })).status).toBe(200);
    }
    // 6 contended attempts on fleet-hot through A and 6 through B; 2 on fleet-warm through B only.
    for (let i = 0; i < 6; i++) {
      expect((await onA.client.acquire('fleet-hot', { sessionId: onA.sessionId })).status).toBe(409);
      expect((await onB.client.acquire('fleet-hot', { sessionId: onB.sessionId })).status).toBe(409);
    }
    for (let i = 0; i < 2; i++) expect((await onB.client.acquire('fleet-warm', { sessionId: onB.sessionId })).status).toBe(409);
    const contention = async (server: TestServer) => {
      const answer = await fetch(`${server.url}/v1/admin/contention?limit=5`, { headers: { authorization: `Bearer ${server.viewerToken}` } });
      expect(answer.status).toBe(200);
      return ((await answer.json()) as { items: { key: string; contended: number; holderSessionId?: string }[] }).items;
    };
    // A sees B's attempts once B's next instance heartbeat has published them (about a second), and vice versa.
    for (const server of [a, b]) {
      // Both keys: B's heartbeat may have published fleet-hot's attempts before fleet-warm's.
      await eventually(async () => {
        const items = await contention(server);
        return items.find((i) => i.key === 'fleet-hot')?.contended === 12 && items.find((i) => i.key === 'fleet-warm')?.contended === 2;
      });
      const items = await contention(server);
      expect(items.map((i) => i.key).slice(0, 2)).toEqual(['fleet-hot', 'fleet-warm']);
      expect(items[1]!.contended).toBe(2);
      expect(items[0]!.holderSessionId).toBe(holder.sessionId);
    }
  });

});

describe('two instances on one PostgreSQL: the release feed', () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    [a, b] = await startPair('postgres');
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
  });

  it("while B's listening connection is lost, its waits poll (wait_fallback, outcome fallback); then it listens again", async () => {
    const cluster = await sharedPostgres();
    const terminateListeners = () =>
      cluster.sql(
        a.databaseUrl!,
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE application_name = 'holdfast-listener' AND datname = current_database()`,
      );
    expect((await terminateListeners()).rowCount).toBe(2); // one listener per instance, outside the pools
    // Keep killing every reconnect, so the feed is down nearly all the time while the waits run.
    let killing = true;
    const killer = (async () => {
      while (killing) {
        await terminateListeners();
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const fallbacksBefore = await waitCount(b, 'fallback');
    const holder = await session(a);
    const waiter = await session(b);
    try {
      // A wait decides per step whether it can trust the feed; retry until one started while it was down.
      for (let round = 0; round < 10 && !b.logs.some((l) => l.event === 'wait_fallback'); round++) {
        const key = `fallback-${round}`;
        const granted = await holder.client.acquire(key, { sessionId: holder.sessionId });
        const waiting = waiter.client.acquire(key, { sessionId: waiter.sessionId, waitMillis: 20_000 });
        await eventually(async () => (await holder.client.read(key)).body.waiterCount === 1);
        await holder.client.release(key, { sessionId: holder.sessionId, fencingToken: granted.body.fencingToken });
        expect((await waiting).status).toBe(200);
      }
    } finally {
      killing = false;
      await killer;
    }
    const fallback = b.logs.find((l) => l.event === 'wait_fallback')!;
    expect(fallback).toMatchObject({ level: 'warn', key: expect.stringMatching(/^fallback-/) });
    expect(violationsOf(fallback, readC4EventContracts())).toEqual([]);
    expect(await waitCount(b, 'fallback')).toBeGreaterThan(fallbacksBefore);
    // Re-listens with backoff, without restarting anything; the next handoff needs no fallback.
    await eventually(async () => b.running.service.releaseFeedUp && a.running.service.releaseFeedUp);
    const fallbacksAfter = await waitCount(b, 'fallback');
    const granted = await holder.client.acquire('after', { sessionId: holder.sessionId });
    const waiting = waiter.client.acquire('after', { sessionId: waiter.sessionId, waitMillis: 20_000 });
    await eventually(async () => (await holder.client.read('after')).body.waiterCount === 1);
    await holder.client.release('after', { sessionId: holder.sessionId, fencingToken: granted.body.fencingToken });
    expect((await waiting).status).toBe(200);
    expect(await waitCount(b, 'fallback')).toBe(fallbacksAfter);
    expect((await terminateListeners()).rowCount).toBe(2);
  });
});

/** Observations of lock_wait_seconds with this outcome, from the server's /metrics. */
function waitCount(server: TestServer, outcome: string): Promise<number> {
  return waitOutcomeCount(server.url, outcome);
}
