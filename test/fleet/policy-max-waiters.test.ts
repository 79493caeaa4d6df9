/**
 * A policy's maxWaiters counts waits fleet-wide (issue 26): with two instances on one store, waits
 * on a capped key parked on either instance count toward one cap, and the next wait on either is
 * answered 429 CONTENTION_EXCEEDED (nothing recorded for it); a key under no cap takes any number.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLEET_STORES, startPair } from '../support/fleet-pair.js';
import { eventually, httpClient } from '../support/http.js';
import type { TestServer } from '../support/server.js';

describe.each(FLEET_STORES)('maxWaiters fleet-wide on %s', (store) => {
  let servers: TestServer[];
  const dir = mkdtempSync(path.join(tmpdir(), 'holdfast-max-waiters-'));
  beforeAll(async () => {
    const file = path.join(dir, 'policies.json');
    writeFileSync(file, JSON.stringify([{ name: 'capped', prefix: 'capped/', maxWaiters: 2 }]));
    servers = await startPair(store, { env: { HOLDFAST_POLICIES_FILE: file } });
  });
  afterAll(async () => {
    for (const server of [...(servers ?? [])].reverse()) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits on both instances count toward one cap; the next on either is 429 and nothing is recorded for it', async () => {
    const [a, b] = servers.map((server) => httpClient(server.url)) as [ReturnType<typeof httpClient>, ReturnType<typeof httpClient>];
    const open = async (client: typeof a, owner: string) => (await client.openSession({ ttlMillis: 120_000, owner })).body.sessionId as string;
    for (const key of ['capped/hot', 'free/hot']) {
      const holder = await open(a, 'holder');
      const held = await a.acquire(key, { sessionId: holder, ttlMillis: 120_000 });
      expect(held.status).toBe(200);
      const parked = [
        a.acquire(key, { sessionId: await open(a, 'w1'), waitMillis: 30_000 }),
        b.acquire(key, { sessionId: await open(b, 'w2'), waitMillis: 30_000 }),
      ];
      await eventually(async () => (await a.read(key)).body.waiterCount === 2 && (await b.read(key)).body.waiterCount === 2);
      const more = [
        a.acquire(key, { sessionId: await open(a, 'w3'), waitMillis: 30_000 }),
        b.acquire(key, { sessionId: await open(b, 'w4'), waitMillis: 30_000 }),
      ];
      if (key === 'capped/hot') {
        for (const answer of more) expect(await answer).toMatchObject({ status: 429, body: { error: { code: 'CONTENTION_EXCEEDED' } } });
        expect((await a.read(key)).body.waiterCount).toBe(2);
        expect((await b.read(key)).body.waiterCount).toBe(2);
      } else {
        await eventually(async () => (await a.read(key)).body.waiterCount === 4);
      }
      // The holder lets go: each wait still parked is granted in turn and lets go at once; the key ends free.
      expect((await a.release(key, { sessionId: holder, fencingToken: held.body.fencingToken })).status).toBe(200);
      const pending = new Map((key === 'capped/hot' ? parked : [...parked, ...more]).map((answer, index) => [index, answer.then((granted) => ({ index, granted }))]));
      while (pending.size > 0) {
        const { index, granted } = await Promise.race(pending.values());
        pending.delete(index);
        expect(granted.status).toBe(200);
        const client = a.sessionToken(granted.body.sessionId) ? a : b;
        expect((await client.release(key, { sessionId: granted.body.sessionId, fencingToken: granted.body.fencingToken })).status).toBe(200);
      }
      expect((await a.read(key)).body.waiterCount).toBe(0);
    }
  }, 300_000);
});
