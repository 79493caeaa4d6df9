/**
 * Two Holdfast servers on one PostgreSQL acting as one service: a release answered by one
 * wakes a waiter parked on the other through LISTEN/NOTIFY; L7, A1 and A5 on either count
 * waiters on both; losing the listening connection makes waits poll (wait_fallback and
 * lock_wait_seconds{outcome="fallback"}) until it re-listens.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readC4EventContracts, violationsOf } from '../observability/support/c4-events.js';
import { eventually, httpClient } from '../support/http.js';
import { sharedPostgres, startServer, type TestServer } from '../support/server.js';

describe('two instances on one PostgreSQL', () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    a = await startServer({ store: 'postgres' });
    b = await startServer({ store: 'postgres', env: { DATABASE_URL: a.databaseUrl! } });
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
  });

  async function session(server: TestServer) {
    const client = httpClient(server.url);
    const opened = await client.openSession({ ttlMillis: 30_000 });
    expect(opened.status).toBe(201);
    return { client, sessionId: opened.body.sessionId as string };
  }

  it('a waiter parked on B is woken by a release answered by A; both count it while it waits', async () => {
    const holder = await session(a);
    const waiter = await session(b);
    const granted = await holder.client.acquire('handoff', { sessionId: holder.sessionId });
    expect(granted.status).toBe(200);
    // Which keys reached B's local waiters from the store's feed.
    const wokenOnB: string[] = [];
    const registry = b.running.service.waiters;
    const keyReleased = registry.keyReleased.bind(registry);
    registry.keyReleased = (key: string) => {
      wokenOnB.push(key);
      keyReleased(key);
    };
    const waiting = waiter.client.acquire('handoff', { sessionId: waiter.sessionId, waitMillis: 20_000 });
    // Fleet-wide: A has no local waiter, yet its L7, A1 and A5 count the one parked on B.
    await eventually(async () => (await holder.client.read('handoff')).body.waiterCount === 1);
    const listed = await holder.client.admin(a.viewerToken).listLocks('?prefix=handoff');
    expect(listed.body.items[0].waiterCount).toBe(1);
    expect((await holder.client.admin(a.viewerToken).summary()).body.waiters).toBe(1);
    expect(a.running.service.waiters.total()).toBe(0);

    const released = await holder.client.release('handoff', { sessionId: holder.sessionId, fencingToken: granted.body.fencingToken });
    expect(released.status).toBe(200);
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(BigInt(answer.body.fencingToken)).toBeGreaterThan(BigInt(granted.body.fencingToken));
    expect(wokenOnB).toContain('handoff');
    await eventually(async () => (await holder.client.read('handoff')).body.waiterCount === 0);
    expect(b.logs.some((l) => l.event === 'wait_fallback')).toBe(false);
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
async function waitCount(server: TestServer, outcome: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('lock_wait_seconds_count') && l.includes(`outcome="${outcome}"`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}
