/**
 * Fleet-wide deadlock resolution (SPEC "Deadlock (v2)") on two servers sharing one store,
 * PostgreSQL or etcd: a wait-for cycle whose waits sit on different instances is broken by
 * answering its youngest wait 409 DEADLOCK_DETECTED (once, by one instance); the victim
 * keeps what it holds, and the other waits are granted once it lets go.
 */
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readC4EventContracts, violationsOf } from '../observability/support/c4-events.js';
import { FLEET_STORES, startPair, type FleetStore } from '../support/fleet-pair.js';
import { eventually, httpClient } from '../support/http.js';
import { sharedPostgres, type TestServer } from '../support/server.js';

/**
 * Two waits closing a cycle, recorded straight in the store for a stand-in instance that never
 * answers its victims: the cycle stays in the graph.
 */
interface StandIn {
  record(waits: Array<{ waitId: string; sessionId: string; key: string }>): Promise<void>;
  /** Waits of the stand-in instance marked as victims. */
  marked(): Promise<string[]>;
  /** The stand-in instance leaves: its waits stop counting. */
  remove(): Promise<void>;
  close(): void;
}

async function standIn(store: FleetStore, a: TestServer): Promise<StandIn> {
  if (store === 'postgres') {
    const cluster = await sharedPostgres();
    const sql = (statement: string, params: unknown[] = []) => cluster.sql(a.databaseUrl!, statement, params);
    await sql(`INSERT INTO holdfast_instances VALUES ('i_stand_in', 0, 0, 9e15, NULL)`);
    return {
      record: async (waits) => {
        for (const [i, w] of waits.entries()) {
          await sql(`INSERT INTO holdfast_waiters (wait_id, session_id, key, instance_id, started_at) VALUES ($1, $2, $3, 'i_stand_in', $4)`, [
            w.waitId,
            w.sessionId,
            w.key,
            i + 1,
          ]);
        }
      },
      marked: async () =>
        (await sql(`SELECT wait_id FROM holdfast_waiters WHERE instance_id = 'i_stand_in' AND victim_cycle IS NOT NULL`)).rows.map((r) => String(r.wait_id)),
      remove: async () => void (await sql(`DELETE FROM holdfast_instances WHERE instance_id = 'i_stand_in'`)),
      close: () => {},
    };
  }
  // etcd: the key layout of lock/store/etcd/keys.ts under the default root; the stand-in's registry key has no lease.
  const etcd = new Etcd3({ hosts: a.etcdEndpoints! });
  await etcd.put('/holdfast/i/i_stand_in').value('{}');
  return {
    record: async (waits) => {
      for (const w of waits) {
        const session = await etcd.get(`/holdfast/s/${w.sessionId}`).exec();
        const kv = session.kvs[0]!;
        const value = { ...w, sessionRevision: String(kv.create_revision), instanceId: 'i_stand_in', leaseId: String(kv.lease), recordedAt: 0 };
        // In order: the later put has the larger create revision, the younger wait.
        await etcd.put(`/holdfast/w/${encodeURIComponent(w.key)}/${w.waitId}`).value(JSON.stringify(value)).lease(String(kv.lease)).exec();
      }
    },
    marked: async () => (await etcd.getAll().prefix('/holdfast/wv/i_stand_in/').keys()).map((k) => k.slice('/holdfast/wv/i_stand_in/'.length)),
    remove: async () => void (await etcd.delete().key('/holdfast/i/i_stand_in').exec()),
    close: () => etcd.close(),
  };
}

describe.each(FLEET_STORES)('fleet-wide deadlock resolution on %s', (store) => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    [a, b] = await startPair(store);
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
    const s1 = await holding(a, 'gauge-a');
    const s2 = await holding(b, 'gauge-b');
    const stand = await standIn(store, a);
    try {
      await stand.record([
        { waitId: 'w_g1', sessionId: s1.sessionId, key: 'gauge-b' },
        { waitId: 'w_g2', sessionId: s2.sessionId, key: 'gauge-a' },
      ]);
      const cycles = async (server: TestServer) => {
        const line = (await (await fetch(`${server.url}/metrics`)).text()).split('\n').find((l) => l.startsWith('lock_deadlock_cycles{'));
        return Number(line?.split(' ').at(-1));
      };
      expect(await cycles(a)).toBe(1);
      expect(await cycles(b)).toBe(1);
      expect((await httpClient(a.url).admin(a.viewerToken).summary()).body.deadlockCycles).toBe(1);
      // The younger of the two was marked as the victim, by one instance only.
      await eventually(async () => (await stand.marked()).includes('w_g2'));
      expect(await stand.marked()).toEqual(['w_g2']);
      await stand.remove();
      expect(await cycles(a)).toBe(0);
      expect(await cycles(b)).toBe(0);
    } finally {
      stand.close();
    }
  });
});
