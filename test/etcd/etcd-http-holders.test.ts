/**
 * Semaphores and shared locks through HTTP on etcd (issue 23, slice 2), two Holdfast instances on
 * one etcd: a waiter parked on one instance is woken by a permit ended on the other (only etcd's
 * watch can tell it), and writer preference holds across instances (the writer's wait is recorded
 * in etcd, where the other instance's shared attempt reads it).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { eventually, httpClient } from '../support/http.js';
import { startServer, type TestServer } from '../support/server.js';
import { startEtcd, type EtcdNode } from '../support/etcd.js';

let keyCounter = 0;
const freshKey = (label: string) => `http-holders/${label}/${++keyCounter}/${Date.now()}`;

describe('multi-holder keys through HTTP on etcd, across two instances', () => {
  let etcd: EtcdNode;
  let servers: TestServer[] = [];
  let a: ReturnType<typeof httpClient>;
  let b: ReturnType<typeof httpClient>;

  beforeAll(async () => {
    etcd = await startEtcd();
    const env = { ETCD_ENDPOINTS: etcd.endpoints.join(',') };
    servers = [await startServer({ store: 'etcd', env }), await startServer({ store: 'etcd', env })];
    a = httpClient(servers[0]!.url);
    b = httpClient(servers[1]!.url);
  }, 120_000);

  afterAll(async () => {
    for (const server of servers) await server.stop();
    await etcd?.stop();
  });

  async function session(api: ReturnType<typeof httpClient>, owner: string): Promise<string> {
    const answer = await api.openSession({ owner, ttlMillis: 60_000 });
    expect(answer.status).toBe(201);
    return answer.body.sessionId as string;
  }

  test('a waiter on a full semaphore is granted when a permit ends on the other instance; reads list every permit', async () => {
    const key = freshKey('semaphore');
    const [p1, p2, waiter] = [await session(b, 'p1'), await session(b, 'p2'), await session(a, 'waiter')];
    const g1 = await b.acquire(key, { sessionId: p1, limit: 2 });
    const g2 = await b.acquire(key, { sessionId: p2, limit: 2 });
    expect([g1.status, g2.status]).toEqual([200, 200]);
    expect(g2.body).toMatchObject({ mode: 'exclusive', limit: 2 });

    const mismatch = await a.acquire(key, { sessionId: waiter, limit: 3 });
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.error.code).toBe('LIMIT_MISMATCH');

    const waiting = a.acquire(key, { sessionId: waiter, limit: 2, waitMillis: 30_000 });
    await eventually(async () => (await a.read(key)).body.waiterCount > 0, 30_000, 10);
    const read = await a.read(key);
    expect(read.body).toMatchObject({ held: true, limit: 2, fencingToken: g1.body.fencingToken });
    expect(read.body.holders.map((h: { fencingToken: string }) => h.fencingToken)).toEqual([g1.body.fencingToken, g2.body.fencingToken]);

    expect((await b.release(key, { sessionId: p2, fencingToken: g2.body.fencingToken })).status).toBe(200);
    const granted = await waiting;
    expect(granted.status).toBe(200);
    expect(granted.body).toMatchObject({ sessionId: waiter, limit: 2 });
    expect(BigInt(granted.body.fencingToken)).toBeGreaterThan(BigInt(g2.body.fencingToken));
  });

  test('a writer waiting on one instance keeps new readers out on the other; it is granted once the readers are gone', async () => {
    const key = freshKey('rw');
    const [r1, r2, writer] = [await session(b, 'r1'), await session(b, 'r2'), await session(a, 'writer')];
    const read1 = await b.acquire(key, { sessionId: r1, mode: 'shared' });
    expect(read1.status).toBe(200);
    expect(read1.body).toMatchObject({ mode: 'shared', limit: 1 });

    const writing = a.acquire(key, { sessionId: writer, waitMillis: 30_000 });
    await eventually(async () => (await b.read(key)).body.waiterCount > 0, 30_000, 10);
    // Writer preference: the recorded exclusive wait (in etcd) keeps a new reader out.
    const read2 = await b.acquire(key, { sessionId: r2, mode: 'shared' });
    expect(read2.status).toBe(409);
    expect(read2.body.error.code).toBe('LOCK_CONTENDED');

    expect((await b.release(key, { sessionId: r1, fencingToken: read1.body.fencingToken })).status).toBe(200);
    const written = await writing;
    expect(written.status).toBe(200);
    expect(written.body).toMatchObject({ sessionId: writer, mode: 'exclusive', limit: 1 });
    expect((await a.read(key)).body.holders).toHaveLength(1);
  });
});
