/**
 * Fault (c): one of two Holdfast instances on one PostgreSQL, and on one etcd, SIGKILLed under
 * load. The SDK, given both endpoints, moves to the survivor and keeps its
 * sessions; 0 fenced writes refused, 0 overlapping grants; grants resume within
 * seconds. A waiter parked on the dead instance is gone within one session TTL:
 * its session (no longer heartbeated) expires and the survivor's L7, which
 * counted that waiter while A lived (fleet-wide wait state, h11-fleet), shows
 * no waiter on the key.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LockClient } from '../../client/client.js';
import { startWorkload } from '../support/fault-workload.js';
import { eventually, httpClient } from '../support/http.js';
import { spawnServer, type ServerProcess } from '../support/server-process.js';
import { startEtcd, type EtcdNode } from '../support/etcd.js';
import { FLEET_STORES } from '../support/fleet-pair.js';
import { sharedPostgres } from '../support/server.js';

// Long enough that a session survives this shared, loaded machine (load average 20–30) between heartbeats.
const SESSION_TTL = 10_000;

describe.each(FLEET_STORES)('two instances on one %s', (store) => {
  let a: ServerProcess;
  let b: ServerProcess;
  let etcd: EtcdNode | undefined;

  beforeAll(async () => {
    let env: Record<string, string>;
    if (store === 'postgres') {
      env = { HOLDFAST_STORE: 'postgres', DATABASE_URL: await (await sharedPostgres()).createDatabase(), HOLDFAST_PG_POOL_SIZE: '8' };
    } else {
      etcd = await startEtcd();
      env = { HOLDFAST_STORE: 'etcd', ETCD_ENDPOINTS: etcd.endpoints.join(',') };
    }
    a = await spawnServer(env);
    b = await spawnServer(env);
  }, 120_000);
  afterAll(async () => {
    for (const server of [a, b]) if (server && server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await Promise.all([a?.exited, b?.exited]);
    await etcd?.stop();
  });

  test('SIGKILL one of two instances under load: the SDK moves to the other, 0 overlaps, the dead waiter is gone within a session TTL', async () => {
    const workload = startWorkload({
      urls: [a.url, b.url],
      workers: 6,
      keys: 3,
      keyPrefix: 'kill',
      sessionTtlMillis: SESSION_TTL,
      lockTtlMillis: 5000,
      workMillis: 15,
    });
    // A waiter parked on A behind a lock held through B.
    const viaA = httpClient(a.url);
    const viaB = httpClient(b.url);
    const blocker = (await viaB.openSession({ ttlMillis: 60_000 })).body.sessionId as string;
    await viaB.acquire('kill/parked', { sessionId: blocker, ttlMillis: 60_000 });
    const waiter = (await viaA.openSession({ ttlMillis: SESSION_TTL })).body.sessionId as string;
    const parked = viaA.acquire('kill/parked', { sessionId: waiter, waitMillis: 30_000 }).catch((error: Error) => error);
    await eventually(async () => (await viaA.read('kill/parked')).body.waiterCount === 1, 10_000, 20);
    // The wait state is fleet-wide (h11-fleet): B counts the waiter parked on A.
    await eventually(async () => (await viaB.read('kill/parked')).body.waiterCount === 1, 10_000, 20);
    // Its session is kept alive through A, as its own SDK would, until A dies.
    const beating = setInterval(() => void viaA.heartbeat(waiter).catch(() => {}), 1000);

    await eventually(async () => workload.grants.length >= 30, 60_000, 20);
    // The waiter's session was live at the kill: its TTL runs from here at the latest.
    clearInterval(beating);
    expect((await viaA.heartbeat(waiter)).status).toBe(200);
    const before = workload.grants.length;
    const killedAt = Date.now();
    a.child.kill('SIGKILL');
    await a.exited;
    const waiterAnswer = await parked;

    // One session TTL (plus a sweep) after the kill, the parked waiter's session is gone from the store:
    // probed once through B with its token (a 404 cannot extend it; a 200 would fail the test).
    await new Promise((r) => setTimeout(r, killedAt + SESSION_TTL + 1000 - Date.now()));
    const probe = await viaB.heartbeat(waiter, { authorization: `Bearer ${viaA.sessionToken(waiter)}` });
    const probedAfter = Date.now() - killedAt;
    const lockView = (await viaB.read('kill/parked')).body;
    // Load runs on a little longer through B alone.
    await new Promise((r) => setTimeout(r, 3000));
    await workload.stop();
    // The public option itself: a client given both URLs, the first one dead, works through the second.
    const listed = new LockClient({ baseUrl: [a.url, b.url] });
    const listedSession = await listed.openSession({ ttlMillis: SESSION_TTL });
    const listedHandle = await listedSession.acquire('kill/listed');
    const listedHolder = (await viaB.read('kill/listed')).body;
    await listedSession.close();

    const after = workload.grants.filter((g) => g.grantedAt > killedAt).length;
    const firstAfter = workload.firstGrantAfter(killedAt);
    console.log(
      `instance kill: ${before} grants before, ${after} after; first grant ${Math.round(firstAfter! - killedAt)} ms after SIGKILL; ` +
        `parked waiter answered ${waiterAnswer instanceof Error ? `with ${waiterAnswer.message}` : waiterAnswer.status}, ` +
        `its session probed ${probedAfter} ms after the kill: ${probe.status} ${probe.body?.error?.code ?? ''}; B's L7 waiterCount ${lockView.waiterCount}; ` +
        workload.summary(),
    );
    expect(workload.recorder.rejected).toEqual([]);
    expect(workload.overlaps()).toEqual([]);
    expect(after).toBeGreaterThan(20);
    expect(firstAfter! - killedAt).toBeLessThan(5000);
    // The SDK sessions survived the move (heartbeats went to B).
    expect(workload.sessionsLost).toBe(0);
    expect(workload.requests.get('B 200') ?? 0).toBeGreaterThan(0);
    // The parked request died with its instance (no answer), and nothing of it is left.
    expect(waiterAnswer).toBeInstanceOf(Error);
    expect(probe.status).toBe(404);
    expect(probe.body.error.code).toBe('SESSION_NOT_FOUND');
    expect(listedHandle).not.toBeNull();
    expect(listedHolder).toMatchObject({ held: true, sessionId: listedSession.sessionId, fencingToken: listedHandle!.fencingToken });
    expect(lockView).toMatchObject({ held: true, sessionId: blocker, waiterCount: 0 });
  }, 120_000);
});
