/**
 * Fleet-wide deadlock resolution (SPEC "Deadlock (v2)") on two servers sharing one
 * PostgreSQL: a wait-for cycle whose waits sit on different instances is broken by
 * answering its youngest wait 409 DEADLOCK_DETECTED (once, by one instance); the victim
 * keeps what it holds, and the other waits are granted once it lets go.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readC4EventContracts, violationsOf } from '../observability/support/c4-events.js';
import { eventually, httpClient } from '../support/http.js';
import { sharedPostgres, startServer, type TestServer } from '../support/server.js';

describe('fleet-wide deadlock resolution on PostgreSQL', () => {
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

  async function holding(server: TestServer, key: string) {
    const client = httpClient(server.url);
    const sessionId = (await client.openSession({ ttlMillis: 30_000 })).body.sessionId as string;
    const grant = await client.acquire(key, { sessionId });
    expect(grant.status).toBe(200);
    return { client, sessionId, key, token: grant.body.fencingToken as string };
  }

  const deadlockEvents = () => [...a.logs, ...b.logs].filter((l) => l.event === 'deadlock_detected');

  it('a two-key cycle across two instances: the younger wait gets 409 DEADLOCK_DETECTED, the other is granted once the victim releases', async () => {
    const s1 = await holding(a, 'two-a');
    const s2 = await holding(b, 'two-b');
    const older = s1.client.acquire('two-b', { sessionId: s1.sessionId, waitMillis: 20_000 });
    await eventually(async () => (await s1.client.read('two-b')).body.waiterCount === 1);
    const started = performance.now();
    const younger = await s2.client.acquire('two-a', { sessionId: s2.sessionId, waitMillis: 20_000 });
    const brokenAfter = performance.now() - started;
    console.log(`two-key cycle across instances broken ${brokenAfter.toFixed(0)} ms after it closed`);
    expect(younger.status).toBe(409);
    expect(younger.body.error).toMatchObject({ code: 'DEADLOCK_DETECTED', retryable: false });
    // It keeps what it holds: two-b is still S2's with the same token.
    expect((await s2.client.read('two-b')).body).toMatchObject({ held: true, sessionId: s2.sessionId, fencingToken: s2.token });
    const events = deadlockEvents();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ level: 'warn', victimSessionId: s2.sessionId, key: 'two-a' });
    expect(violationsOf(events[0]!, readC4EventContracts())).toEqual([]);
    expect(new Set(events[0]!.sessions as string[])).toEqual(new Set([s1.sessionId, s2.sessionId]));
    expect(new Set(events[0]!.keys as string[])).toEqual(new Set(['two-a', 'two-b']));
    expect(b.logs.some((l) => l.event === 'deadlock_detected')).toBe(true); // answered where the victim waited

    expect((await s2.client.release('two-b', { sessionId: s2.sessionId, fencingToken: s2.token })).status).toBe(200);
    const granted = await older;
    expect(granted.status).toBe(200);
    expect(granted.body.sessionId).toBe(s1.sessionId);
  });

  it('a three-session cycle (two on one instance, one on the other) is broken once, at its youngest wait', async () => {
    const before = deadlockEvents().length;
    const s1 = await holding(a, 'three-a');
    const s2 = await holding(b, 'three-b');
    const s3 = await holding(a, 'three-c');
    const w1 = s1.client.acquire('three-b', { sessionId: s1.sessionId, waitMillis: 20_000 });
    await eventually(async () => (await s1.client.read('three-b')).body.waiterCount === 1);
    const w2 = s2.client.acquire('three-c', { sessionId: s2.sessionId, waitMillis: 20_000 });
    await eventually(async () => (await s1.client.read('three-c')).body.waiterCount === 1);
    const w3 = await s3.client.acquire('three-a', { sessionId: s3.sessionId, waitMillis: 20_000 });
    expect(w3.status).toBe(409);
    expect(w3.body.error.code).toBe('DEADLOCK_DETECTED');
    const mine = new Set([s1.sessionId, s2.sessionId, s3.sessionId]);
    const ofThisCycle = () => deadlockEvents().filter((e) => mine.has(e.victimSessionId as string));
    const events = ofThisCycle();
    expect(deadlockEvents()).toHaveLength(before + 1);
    expect(events).toHaveLength(1);
    expect(new Set(events[0]!.sessions as string[])).toEqual(new Set([s1.sessionId, s2.sessionId, s3.sessionId]));
    expect(events[0]).toMatchObject({ victimSessionId: s3.sessionId });
    // The victim lets go; the chain unwinds: S2 gets three-c, gives back three-b, S1 gets it.
    await s3.client.release('three-c', { sessionId: s3.sessionId, fencingToken: s3.token });
    const g2 = await w2;
    expect(g2.status).toBe(200);
    await s2.client.release('three-b', { sessionId: s2.sessionId, fencingToken: s2.token });
    expect((await w1).status).toBe(200);
    expect(ofThisCycle()).toHaveLength(1);
    // Nothing left waiting, no cycle left: A5 on either instance says so.
    await eventually(async () => {
      const summary = (await httpClient(b.url).admin(b.viewerToken).summary()).body;
      return summary.waiters === 0 && summary.deadlockCycles === 0;
    });
  });

  it('lock_deadlock_cycles on every instance counts a cycle fleet-wide while it is unbroken', async () => {
    // Two waits closing a cycle, recorded for an instance that never answers its victims (a stand-in
    // row): the cycle stays in the graph, so the gauge must show it on both real instances.
    const cluster = await sharedPostgres();
    const s1 = await holding(a, 'gauge-a');
    const s2 = await holding(b, 'gauge-b');
    const sql = (statement: string, params: unknown[] = []) => cluster.sql(a.databaseUrl!, statement, params);
    await sql(`INSERT INTO holdfast_instances VALUES ('i_stand_in', 0, 0, 9e15, NULL)`);
    await sql(
      `INSERT INTO holdfast_waiters (wait_id, session_id, key, instance_id, started_at)
       VALUES ('w_g1', $1, 'gauge-b', 'i_stand_in', 1), ('w_g2', $2, 'gauge-a', 'i_stand_in', 2)`,
      [s1.sessionId, s2.sessionId],
    );
    const cycles = async (server: TestServer) => {
      const line = (await (await fetch(`${server.url}/metrics`)).text()).split('\n').find((l) => l.startsWith('lock_deadlock_cycles{'));
      return Number(line?.split(' ').at(-1));
    };
    expect(await cycles(a)).toBe(1);
    expect(await cycles(b)).toBe(1);
    expect((await httpClient(a.url).admin(a.viewerToken).summary()).body.deadlockCycles).toBe(1);
    // One of the two was marked as the victim, by one instance only.
    await eventually(async () => (await sql(`SELECT 1 FROM holdfast_waiters WHERE victim_cycle IS NOT NULL AND wait_id = 'w_g2'`)).rowCount === 1);
    const marked = await sql(`SELECT wait_id FROM holdfast_waiters WHERE instance_id = 'i_stand_in' AND victim_cycle IS NOT NULL`);
    expect(marked.rows.map((r) => r.wait_id)).toEqual(['w_g2']);
    await sql(`DELETE FROM holdfast_instances WHERE instance_id = 'i_stand_in'`);
    expect(await cycles(a)).toBe(0);
    expect(await cycles(b)).toBe(0);
  });
});
