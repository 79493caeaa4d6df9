/**
 * FIFO handoff through the HTTP surface (issue 22): on PostgreSQL (two instances, one store) and
 * on the embedded store, waits on a hot key are granted in the order they began, fleet-wide, each
 * with a higher token, and a holder that releases and asks again goes to the back of the line —
 * however the waits are spread over the instances.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, httpClient } from '../support/http.js';
import { startPair } from '../support/fleet-pair.js';
import { startServer, type TestServer } from '../support/server.js';

const WAITERS = 6;

describe.each(['postgres', 'embedded'] as const)('FIFO handoff on %s', (store) => {
  let servers: TestServer[];
  beforeAll(async () => {
    servers = store === 'postgres' ? await startPair('postgres') : [await startServer({ store: 'embedded' })];
  });
  afterAll(async () => {
    for (const server of [...(servers ?? [])].reverse()) await server.stop();
  });

  it(`${WAITERS} waits are granted in the order they began; the releaser asking again is served last`, async () => {
    const key = `fifo-${store}`;
    const clients = servers.map((server) => httpClient(server.url));
    const open = async (index: number) => {
      const client = clients[index % clients.length]!;
      const opened = await client.openSession({ ttlMillis: 60_000, owner: `worker-${index}` });
      expect(opened.status).toBe(201);
      return { client, sessionId: opened.body.sessionId as string };
    };
    const holder = await open(0);
    const first = await holder.client.acquire(key, { sessionId: holder.sessionId, ttlMillis: 60_000 });
    expect(first.status).toBe(200);

    // Each wait begins once the previous one is recorded (L7 counts it fleet-wide), so their order is known.
    const order: string[] = [];
    const answers: Promise<{ index: number; status: number; token: string; sessionId: string; client: ReturnType<typeof httpClient> }>[] = [];
    const sessions = [];
    for (let index = 1; index <= WAITERS; index += 1) sessions.push(await open(index));
    for (const [position, waiter] of sessions.entries()) {
      order.push(waiter.sessionId);
      answers.push(
        waiter.client
          .acquire(key, { sessionId: waiter.sessionId, ttlMillis: 60_000, waitMillis: 25_000 })
          .then((answer) => ({ index: position, status: answer.status, token: String(answer.body.fencingToken), sessionId: waiter.sessionId, client: waiter.client })),
      );
      await eventually(async () => (await holder.client.read(key)).body.waiterCount === position + 1);
    }

    // The holder releases and at once asks again, waiting: it is behind every earlier wait.
    const released = await holder.client.release(key, { sessionId: holder.sessionId, fencingToken: first.body.fencingToken });
    expect(released.status).toBe(200);
    const again = holder.client.acquire(key, { sessionId: holder.sessionId, ttlMillis: 60_000, waitMillis: 25_000 });

    const grantedOrder: string[] = [];
    const tokens: bigint[] = [BigInt(first.body.fencingToken)];
    const pending = new Map(answers.map((answer, index) => [index, answer]));
    for (let turn = 0; turn < WAITERS; turn += 1) {
      const next = await Promise.race(pending.values());
      pending.delete(next.index);
      expect(next.status).toBe(200);
      grantedOrder.push(next.sessionId);
      tokens.push(BigInt(next.token));
      // Only the holder of the moment may be granted: its release hands the key to the next in line.
      expect((await next.client.read(key)).body.sessionId).toBe(next.sessionId);
      expect((await next.client.release(key, { sessionId: next.sessionId, fencingToken: next.token })).status).toBe(200);
    }
    expect(grantedOrder).toEqual(order);
    const last = await again;
    expect(last.status).toBe(200);
    tokens.push(BigInt(last.body.fencingToken));
    for (let i = 1; i < tokens.length; i += 1) expect(tokens[i]!).toBeGreaterThan(tokens[i - 1]!);
    await eventually(async () => (await holder.client.read(key)).body.waiterCount === 0);
  });
});
