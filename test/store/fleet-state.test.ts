/**
 * The stores' fleet capabilities. On both SQL backends (migration 3): the release feed (NOTIFY
 * from the transaction that ends a lock, only for keys with a recorded wait, batched under the
 * 8000-byte payload limit). On every store with FleetWaitState (SQL and etcd): fleet-wide waits
 * that vanish with their session or instance, publications of live instances only, and deadlock
 * verdicts marked once, by one checker.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { EtcdStore } from '../../lock/store/etcd/etcd-store.js';
import type { FleetWaitState, LockStore } from '../../lock/store/spi.js';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import { chooseDeadlockVictims } from '../../lock/core/deadlock.js';
import { startEtcd, type EtcdNode } from '../support/etcd.js';
import { freshSqlDatabase } from '../support/sql-stores.js';
import { openTestSession } from '../support/store-sessions.js';

describe.each(['postgres', 'embedded'] as const)('release feed on %s', (backend) => {
  let store: SqlLockStore;
  let fleet: FleetWaitState;
  const payloads: string[] = [];
  const announced: string[] = [];
  let healthy = false;
  let unsubscribe: () => void;
  const instanceId = `i_test_${backend}`;

  beforeAll(async () => {
    const db = await freshSqlDatabase(backend);
    // Payload sizes: wrap the listen seam to see each NOTIFY payload as sent.
    const listen = db.listen!.bind(db);
    db.listen = (channel, handlers) => listen(channel, { ...handlers, notify: (p) => (payloads.push(p), handlers.notify(p)) });
    store = new SqlLockStore(db, backend);
    fleet = store.fleet;
    await store.init();
    unsubscribe = await store.releaseFeed.subscribeReleases({
      released: (keys) => announced.push(...keys),
      handedOff: () => {},
      health: (up) => (healthy = up),
    });
    await fleet.heartbeatInstance({ instanceId, ttlMillis: 60_000 });
  });
  afterAll(async () => {
    unsubscribe();
    await store.close();
  });

  /** Resolves once `key` has been announced (notifications arrive in commit order; milliseconds here, 10 s allowed). */
  async function announcedSoon(key: string): Promise<void> {
    for (let i = 0; i < 500 && !announced.includes(key); i++) await new Promise((r) => setImmediate(r));
    for (let i = 0; i < 500 && !announced.includes(key); i++) await new Promise((r) => setTimeout(r, 20));
    expect(announced).toContain(key);
  }

  it('announces a release of a key with a recorded wait, and nothing for a key nobody waits on', async () => {
    expect(healthy).toBe(true);
    const holder = await openTestSession(store);
    const waiter = await openTestSession(store);
    const quiet = await store.tryAcquire({ key: 'quiet', session: holder.credential, ttlMillis: 60_000 });
    const busy = await store.tryAcquire({ key: 'busy', session: holder.credential, ttlMillis: 60_000 });
    if (quiet.kind !== 'granted' || busy.kind !== 'granted') throw new Error('not granted');
    await fleet.beginWait({ waitId: `w-busy-${backend}`, sessionId: waiter.record.sessionId, key: 'busy', instanceId });
    expect((await fleet.waiterCounts(['busy', 'quiet'])).get('busy')).toBe(1);
    await store.release({ key: 'quiet', session: holder.credential, fencingToken: quiet.grant.fencingToken });
    await store.release({ key: 'busy', session: holder.credential, fencingToken: busy.grant.fencingToken });
    await announcedSoon('busy');
    expect(announced).not.toContain('quiet');
    await fleet.endWait(`w-busy-${backend}`);
    expect(await fleet.totalWaiters()).toBe(0);
  });

  it('announces locks ended by session close, kill, lock expiry and revoke', async () => {
    const waiter = await openTestSession(store);
    const keys = ['by-close', 'by-kill', 'by-expiry', 'by-revoke'];
    for (const key of keys) await fleet.beginWait({ waitId: `w-${key}-${backend}`, sessionId: waiter.record.sessionId, key, instanceId });
    const a = await openTestSession(store);
    const b = await openTestSession(store);
    const c = await openTestSession(store);
    await store.tryAcquire({ key: 'by-close', session: a.credential, ttlMillis: 60_000 });
    await store.tryAcquire({ key: 'by-kill', session: b.credential, ttlMillis: 60_000 });
    await store.tryAcquire({ key: 'by-expiry', session: c.credential, ttlMillis: 1 });
    await store.tryAcquire({ key: 'by-revoke', session: c.credential, ttlMillis: 60_000 });
    await store.closeSession(a.credential);
    await store.killSession(b.record.sessionId, { actor: 't', reason: 'test', requestId: 'r' });
    await new Promise((r) => setTimeout(r, 5));
    await store.expireLocks(100);
    await store.forceRevoke({ key: 'by-revoke', audit: { actor: 't', reason: 'test', requestId: 'r' } });
    for (const key of keys) await announcedSoon(key);
  });

  it('batches many keys ended in one transaction into payloads under 8000 bytes, losing none', async () => {
    const holder = await openTestSession(store);
    const waiter = await openTestSession(store);
    const keys = Array.from({ length: 60 }, (_, i) => `big-${String(i).padStart(3, '0')}-${'x'.repeat(480)}`);
    for (const key of keys) {
      await store.tryAcquire({ key, session: holder.credential, ttlMillis: 60_000 });
      await fleet.beginWait({ waitId: `w-${key.slice(0, 8)}-${backend}`, sessionId: waiter.record.sessionId, key, instanceId });
    }
    const before = payloads.length;
    await store.closeSession(holder.credential);
    for (const key of keys) await announcedSoon(key);
    const sent = payloads.slice(before).filter((p) => p.startsWith('big-'));
    expect(sent.length).toBeGreaterThan(1);
    for (const p of sent) expect(Buffer.byteLength(p)).toBeLessThanOrEqual(8000);
    expect(sent.flatMap((p) => p.split('\n')).sort()).toEqual([...keys].sort());
  });

});

describe.each(['postgres', 'embedded', 'etcd'] as const)('fleet wait state on %s', (backend) => {
  let store: LockStore;
  let fleet: FleetWaitState;
  let etcd: EtcdNode | undefined;
  const run = randomBytes(4).toString('hex');
  const instanceId = `i_test_${backend}_${run}`;

  beforeAll(async () => {
    if (backend === 'etcd') {
      etcd = await startEtcd();
      store = new EtcdStore({ endpoints: etcd.endpoints, namespace: `fleet-${run}` });
    } else {
      const db = await freshSqlDatabase(backend);
      store = new SqlLockStore(db, backend);
    }
    fleet = store.fleet!;
    await store.init();
    await fleet.heartbeatInstance({ instanceId, ttlMillis: 60_000 });
  });
  afterAll(async () => {
    await store?.close();
    await etcd?.stop();
  });

  /**
   * Resolves once `check` holds, polling (an instance lapses on the store's clock: etcd leases last >= 2 s, so 1–3 s
   * here); the deadline is ≥ 10× that and only bounds a failure.
   */
  async function eventually(check: () => Promise<boolean>, withinMillis = 30_000): Promise<void> {
    const deadline = Date.now() + withinMillis;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`not within ${withinMillis} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('counts a wait while its session and instance live; it vanishes with its session, and with its lapsed instance', async () => {
    const gone = await openTestSession(store);
    const other = await openTestSession(store);
    const shortLived = `i_short_${backend}_${run}`;
    expect((await fleet.heartbeatInstance({ instanceId: shortLived, ttlMillis: 1_000 })).joined).toBe(true);
    await fleet.beginWait({ waitId: `w-session-${run}`, sessionId: gone.record.sessionId, key: 'vanish', instanceId });
    await fleet.beginWait({ waitId: `w-instance-${run}`, sessionId: other.record.sessionId, key: 'vanish', instanceId: shortLived });
    expect((await fleet.waiterCounts(['vanish'])).get('vanish')).toBe(2);
    expect(await fleet.totalWaiters()).toBe(2);
    await store.closeSession(gone.credential);
    expect((await fleet.waiterCounts(['vanish'])).get('vanish')).toBe(1);
    // No more heartbeats: the instance lapses on the store's clock and its wait stops counting.
    await eventually(async () => (await fleet.waiterCounts(['vanish'])).get('vanish') === undefined);
    expect(await fleet.totalWaiters()).toBe(0);
    expect(await fleet.expireInstances(100)).toBeGreaterThanOrEqual(1);
    expect(await fleet.expireInstances(100)).toBe(0); // swept once
    // A rejoining instance learns it was swept (its waits must be recorded again).
    expect((await fleet.heartbeatInstance({ instanceId: shortLived, ttlMillis: 60_000 })).joined).toBe(true);
    expect((await fleet.heartbeatInstance({ instanceId: shortLived, ttlMillis: 60_000 })).joined).toBe(false);
    expect((await fleet.waiterCounts(['vanish'])).get('vanish')).toBeUndefined();
    await fleet.leaveFleet(shortLived);
  });

  it('a wait of a session that lapses (no heartbeat) vanishes within its TTL; a wait of an unknown session is not recorded', async () => {
    // 6 s, not 1 s: the first count below must see the wait while the session lives, on however busy a machine
    // (a loaded CI worker can stall for seconds between two store calls); etcd rounds leases up to whole seconds.
    const lapsing = await openTestSession(store, { ttlMillis: 6_000 });
    await fleet.beginWait({ waitId: `w-lapse-${run}`, sessionId: lapsing.record.sessionId, key: 'lapse', instanceId });
    await fleet.beginWait({ waitId: `w-ghost-${run}`, sessionId: `s_ghost_${run}`, key: 'lapse', instanceId });
    expect((await fleet.waiterCounts(['lapse'])).get('lapse')).toBe(1);
    const started = Date.now();
    // No sweep needed: a lapsed session's wait stops counting on the store's clock.
    await eventually(async () => (await fleet.waiterCounts(['lapse'])).get('lapse') === undefined);
    console.log(`${backend}: a lapsed session's wait stopped counting ${Date.now() - started} ms after the count (a 6000 ms session)`);
  });

  it('waits begun and ended together (one event-loop turn, as on a hot key) are each recorded and removed; an ended session\'s is not', async () => {
    const sessions = await Promise.all(Array.from({ length: 20 }, () => openTestSession(store)));
    const ended = await openTestSession(store);
    await store.closeSession(ended.credential);
    const begins = [...sessions, ended].map((s, i) => fleet.beginWait({ waitId: `w-burst-${i}-${run}`, sessionId: s.record.sessionId, key: 'burst', instanceId }));
    await Promise.all(begins);
    expect((await fleet.waiterCounts(['burst'])).get('burst')).toBe(20);
    await Promise.all(sessions.map((_, i) => fleet.endWait(`w-burst-${i}-${run}`)));
    expect((await fleet.waiterCounts(['burst'])).get('burst')).toBeUndefined();
    expect(await fleet.totalWaiters()).toBe(0);
  });

  it('a try carrying its wait records it only when another live session holds the key, in the same write; a later grant with its id ends it', async () => {
    expect(fleet.recordsOnTry).toBe(true);
    const key = `record-on-try-${run}`;
    const holder = await openTestSession(store);
    const waiters = await Promise.all(Array.from({ length: 4 }, () => openTestSession(store)));
    const attempt = (s: (typeof waiters)[number], waitId: string, onInstance = instanceId) =>
      // No ttlMillis: a wait recorded without it is never handed the key (spi.ts beginWait), so the grant below is a try's.
      store.tryAcquire({ key, session: s.credential, ttlMillis: 60_000, recordWait: { waitId, instanceId: onInstance } });

    // A free key: granted, nothing recorded.
    const free = await attempt(holder, `w-free-${run}`);
    expect(free.kind).toBe('granted');
    expect(await fleet.totalWaiters()).toBe(0);
    // The holder's own key: answered as its grant, nothing recorded.
    expect((await attempt(holder, `w-own-${run}`)).kind).toBe('granted');
    expect(await fleet.totalWaiters()).toBe(0);

    // Held by another: each try of one turn (batched) records its own wait and says so.
    const held = await Promise.all(waiters.map((s, i) => attempt(s, `w-try-${i}-${run}`)));
    for (const result of held) expect(result).toMatchObject({ kind: 'held', waitRecorded: true });
    expect((await fleet.waiterCounts([key])).get(key)).toBe(waiters.length);
    // A try sent again with the same record (its first answer lost) keeps one wait, not two (whether it
    // says it recorded it is the store's: SQL answers "recorded already" as not recorded by this try).
    expect((await attempt(waiters[0]!, `w-try-0-${run}`)).kind).toBe('held');
    expect((await fleet.waiterCounts([key])).get(key)).toBe(waiters.length);
    // From an instance that is not in the fleet: held, not recorded.
    const stranger = await openTestSession(store);
    const unrecorded = await attempt(stranger, `w-stranger-${run}`, `i_absent_${run}`);
    expect(unrecorded.kind).toBe('held');
    expect(unrecorded.kind === 'held' && unrecorded.waitRecorded).toBeFalsy();
    expect((await fleet.waiterCounts([key])).get(key)).toBe(waiters.length);

    // Released: the first waiter's grant, sent with its wait's id, ends that wait in the grant's own write.
    if (free.kind !== 'granted') throw new Error('unreachable');
    expect((await store.release({ key, session: holder.credential, fencingToken: free.grant.fencingToken })).kind).toBe('released');
    const granted = await store.tryAcquire({ key, session: waiters[0]!.credential, ttlMillis: 60_000, waitId: `w-try-0-${run}` });
    expect(granted.kind).toBe('granted');
    expect((await fleet.waiterCounts([key])).get(key)).toBe(waiters.length - 1);
    await Promise.all(waiters.slice(1).map((_, i) => fleet.endWait(`w-try-${i + 1}-${run}`)));
    expect(await fleet.totalWaiters()).toBe(0);
  });

  it("publications: each live instance's last published JSON, none from an instance that left", async () => {
    const live = `i_pub_live_${backend}_${run}`;
    const left = `i_pub_gone_${backend}_${run}`;
    await fleet.heartbeatInstance({ instanceId: live, ttlMillis: 60_000, published: { top: [{ key: 'k', count: 3 }] } });
    expect((await fleet.heartbeatInstance({ instanceId: live, ttlMillis: 60_000, published: { top: [{ key: 'k', count: 4 }] } })).liveInstances).toBe(2);
    await fleet.heartbeatInstance({ instanceId: left, ttlMillis: 60_000, published: { top: [] } });
    await fleet.leaveFleet(left);
    const published = (await fleet.instancePublications()).filter((p) => p.instanceId.startsWith('i_pub_'));
    expect(published).toEqual([{ instanceId: live, published: { top: [{ key: 'k', count: 4 }] } }]);
    await fleet.leaveFleet(live);
  });

  it('marks the youngest wait of a cycle once; a second check finds nothing left to break', async () => {
    const s1 = await openTestSession(store);
    const s2 = await openTestSession(store);
    await store.tryAcquire({ key: 'cyc-a', session: s1.credential, ttlMillis: 60_000 });
    await store.tryAcquire({ key: 'cyc-b', session: s2.credential, ttlMillis: 60_000 });
    await fleet.beginWait({ waitId: `w-older-${run}`, sessionId: s1.record.sessionId, key: 'cyc-b', instanceId });
    await new Promise((r) => setTimeout(r, 5));
    await fleet.beginWait({ waitId: `w-younger-${run}`, sessionId: s2.record.sessionId, key: 'cyc-a', instanceId });
    expect((await fleet.waitForEdges(100)).filter((e) => e.key.startsWith('cyc-'))).toHaveLength(2);
    const verdicts = await fleet.resolveDeadlocks(100, (edges) => chooseDeadlockVictims(edges));
    expect(verdicts?.map((v) => v.waitId)).toEqual([`w-younger-${run}`]);
    expect(await fleet.resolveDeadlocks(100, (edges) => chooseDeadlockVictims(edges))).toEqual([]);
    const victims = await fleet.deadlockVictims(instanceId);
    expect(victims).toEqual([
      { waitId: `w-younger-${run}`, sessions: expect.arrayContaining([s1.record.sessionId, s2.record.sessionId]), keys: expect.arrayContaining(['cyc-a', 'cyc-b']) },
    ]);
    // The edges still show the cycle, its victim marked, until the victim's wait ends.
    expect((await fleet.waitForEdges(100)).find((e) => e.waitId === `w-younger-${run}`)?.victim).toBe(true);
    await fleet.endWait(`w-younger-${run}`);
    expect(await fleet.deadlockVictims(instanceId)).toEqual([]);
    await fleet.endWait(`w-older-${run}`);
    expect(await fleet.totalWaiters()).toBe(0);
  });

  it('a wait on a key whose holder lapsed is no edge: no cycle through a dead holder', async () => {
    const s1 = await openTestSession(store);
    const s2 = await openTestSession(store, { ttlMillis: 6_000 }); // lives through the first read of the edges, however busy the machine
    await store.tryAcquire({ key: 'dead-a', session: s1.credential, ttlMillis: 60_000 });
    await store.tryAcquire({ key: 'dead-b', session: s2.credential, ttlMillis: 60_000 });
    await fleet.beginWait({ waitId: `w-dead-1-${run}`, sessionId: s1.record.sessionId, key: 'dead-b', instanceId });
    await fleet.beginWait({ waitId: `w-dead-2-${run}`, sessionId: s2.record.sessionId, key: 'dead-a', instanceId });
    expect((await fleet.waitForEdges(100)).filter((e) => e.key.startsWith('dead-'))).toHaveLength(2);
    await eventually(async () => (await fleet.waitForEdges(100)).filter((e) => e.key.startsWith('dead-')).length === 0);
    expect(await fleet.resolveDeadlocks(100, (edges) => chooseDeadlockVictims(edges))).toEqual([]);
    await fleet.endWait(`w-dead-1-${run}`);
  });
});
