/**
 * FIFO handoff on the SQL stores (issue 22, migration 6): a release hands the key to the oldest
 * recorded wait that can take it, in the releasing statement, with a token drawn like any other;
 * the handed wait is a waiter no more, its end answers the grant, and its instance hears of it on
 * the release feed. Waits that cannot take the key are passed over: past their budget, a deadlock
 * victim, recorded without a TTL (a release before handoff), whose session or instance is gone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareTokens } from '../../contract/records.js';
import type { FleetWaitState, HandedGrant, ReleaseResult } from '../../lock/store/spi.js';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import type { SqlDatabase } from '../../lock/store/sql/queryable.js';
import { freshSqlDatabase } from '../support/sql-stores.js';
import { openTestSession, type TestSession } from '../support/store-sessions.js';

describe.each(['postgres', 'embedded'] as const)('release handoff on %s', (backend) => {
  let store: SqlLockStore;
  let db: SqlDatabase;
  let fleet: FleetWaitState;
  const heard: HandedGrant[] = [];
  const announced: string[] = [];
  let unsubscribe: () => void;
  const instanceId = `i_handoff_${backend}`;
  let run = 0;

  beforeAll(async () => {
    db = await freshSqlDatabase(backend);
    store = new SqlLockStore(db, backend);
    fleet = store.fleet;
    await store.init();
    unsubscribe = await store.releaseFeed.subscribeReleases({
      released: (keys) => announced.push(...keys),
      handedOff: (grants) => heard.push(...grants),
      health: () => {},
    });
    await fleet.heartbeatInstance({ instanceId, ttlMillis: 600_000 });
  });
  afterAll(async () => {
    unsubscribe();
    await store.close();
  });

  async function held(key: string, holder: TestSession) {
    const result = await store.tryAcquire({ key, session: holder.credential, ttlMillis: 60_000 });
    if (result.kind !== 'granted') throw new Error(`expected a grant of ${key}, got ${result.kind}`);
    return result.grant;
  }

  async function waitOn(key: string, waiter: TestSession, label: string, extra: { ttlMillis?: number; deadlineMillis?: number } = { ttlMillis: 30_000, deadlineMillis: 60_000 }) {
    const waitId = `w-${label}-${backend}-${run}`;
    await fleet.beginWait({ waitId, sessionId: waiter.record.sessionId, key, instanceId, ...extra });
    return waitId;
  }

  async function heardSoon(waitId: string): Promise<HandedGrant> {
    for (let i = 0; i < 500 && !heard.some((g) => g.waitId === waitId); i++) await new Promise((r) => setTimeout(r, 10));
    const grant = heard.find((g) => g.waitId === waitId);
    expect(grant).toBeDefined();
    return grant!;
  }

  function handedTo(result: ReleaseResult): HandedGrant {
    if (result.kind !== 'released' || !result.handedTo) throw new Error(`expected a handoff, got ${JSON.stringify(result)}`);
    return result.handedTo;
  }

  it('hands the key to the oldest wait, with a higher token, and the wait counts no more', async () => {
    run += 1;
    const key = `fifo-${run}`;
    const [holder, first, second] = await Promise.all([openTestSession(store), openTestSession(store, { owner: 'first' }), openTestSession(store)]);
    const grant = await held(key, holder);
    const firstWait = await waitOn(key, first, 'first');
    const secondWait = await waitOn(key, second, 'second');
    expect((await fleet.waiterCounts([key])).get(key)).toBe(2);

    const result = await store.release({ key, session: holder.credential, fencingToken: grant.fencingToken });
    const handed = handedTo(result);
    expect(handed).toMatchObject({ waitId: firstWait, key, sessionId: first.record.sessionId, owner: 'first', ttlMillis: 30_000 });
    expect(compareTokens(handed.fencingToken, grant.fencingToken)).toBeGreaterThan(0);
    expect(result.kind === 'released' && result.lock).toMatchObject({ key, sessionId: holder.record.sessionId, fencingToken: grant.fencingToken });
    expect(await store.readLock(key)).toMatchObject({ sessionId: first.record.sessionId, fencingToken: handed.fencingToken });
    expect((await fleet.waiterCounts([key])).get(key)).toBe(1);
    // Its instance hears of it on the feed; the key's release is not announced (nobody else should wake).
    expect(await heardSoon(firstWait)).toEqual(handed);
    expect(announced).not.toContain(key);

    // The handed wait's end answers the grant; the other wait's end answers nothing.
    expect(await fleet.endWait(firstWait)).toMatchObject({ key, sessionId: first.record.sessionId, fencingToken: handed.fencingToken });
    // The new holder releases: the second wait is next, and its token is higher again.
    const next = handedTo(await store.release({ key, session: first.credential, fencingToken: handed.fencingToken }));
    expect(next.waitId).toBe(secondWait);
    expect(compareTokens(next.fencingToken, handed.fencingToken)).toBeGreaterThan(0);
    expect(await fleet.endWait(secondWait)).toMatchObject({ fencingToken: next.fencingToken });
    expect(await fleet.totalWaiters()).toBe(0);
  });

  it('passes over waits that cannot take the key, and releases plainly when none can', async () => {
    run += 1;
    const key = `skip-${run}`;
    const sessions = await Promise.all(Array.from({ length: 5 }, () => openTestSession(store)));
    const [holder, spent, legacy, gone, victim] = sessions as [TestSession, TestSession, TestSession, TestSession, TestSession];
    const grant = await held(key, holder);
    await waitOn(key, spent, 'spent', { ttlMillis: 30_000, deadlineMillis: 0 });
    await waitOn(key, legacy, 'legacy', {});
    await waitOn(key, gone, 'gone');
    await waitOn(key, victim, 'victim');
    expect((await store.closeSession(gone.credential)).kind).toBe('closed');
    await db.query(`UPDATE holdfast_waiters SET victim_cycle = '{"sessions":[],"keys":[]}'::jsonb WHERE wait_id = $1`, [`w-victim-${backend}-${run}`]);

    const result = await store.release({ key, session: holder.credential, fencingToken: grant.fencingToken });
    expect(result.kind === 'released' && result.handedTo).toBeFalsy();
    expect(await store.readLock(key)).toBeNull();
    // Plain release: the waits still recorded are told as before.
    for (let i = 0; i < 500 && !announced.includes(key); i++) await new Promise((r) => setTimeout(r, 10));
    expect(announced).toContain(key);
    for (const label of ['spent', 'legacy', 'victim']) expect(await fleet.endWait(`w-${label}-${backend}-${run}`)).toBeNull();
  });

  it('a wait whose instance lapsed is passed over for the next one', async () => {
    run += 1;
    const key = `instance-${run}`;
    const lapsing = `i_lapsing_${backend}_${run}`;
    await fleet.heartbeatInstance({ instanceId: lapsing, ttlMillis: 1 });
    const [holder, orphan, next] = await Promise.all([openTestSession(store), openTestSession(store), openTestSession(store)]);
    const grant = await held(key, holder);
    await fleet.beginWait({ waitId: `w-orphan-${backend}-${run}`, sessionId: orphan.record.sessionId, key, instanceId: lapsing, ttlMillis: 30_000, deadlineMillis: 60_000 });
    const nextWait = await waitOn(key, next, 'next');
    const handed = handedTo(await store.release({ key, session: holder.credential, fencingToken: grant.fencingToken }));
    expect(handed.waitId).toBe(nextWait);
  });

  it('a batch of releases hands each key on, tokens increasing in answer order', async () => {
    run += 1;
    const keys = Array.from({ length: 8 }, (_, i) => `batch-${run}-${i}`);
    const holder = await openTestSession(store);
    const waiters = await Promise.all(keys.map(() => openTestSession(store)));
    const grants = await Promise.all(keys.map((key) => held(key, holder)));
    await Promise.all(keys.map((key, i) => waitOn(key, waiters[i]!, `batch-${i}`)));
    const results = await Promise.all(keys.map((key, i) => store.release({ key, session: holder.credential, fencingToken: grants[i]!.fencingToken })));
    const handed = results.map(handedTo);
    handed.forEach((grant, i) => expect(grant.sessionId).toBe(waiters[i]!.record.sessionId));
    const highestBefore = grants.map((g) => g.fencingToken).sort(compareTokens).at(-1)!;
    for (const grant of handed) expect(compareTokens(grant.fencingToken, highestBefore)).toBeGreaterThan(0);
    expect(new Set(handed.map((g) => g.fencingToken)).size).toBe(keys.length);
  });

  it("a wait ends in its grant's write: a wait granted by a try is never handed the key again later", async () => {
    run += 1;
    const key = `answered-${run}`;
    const [holder, waiter, next] = await Promise.all([openTestSession(store), openTestSession(store), openTestSession(store)]);
    const grant = await held(key, holder);
    await waitOn(key, waiter, 'answered');
    // The holder's grant ends without a handoff (its session closes), and the waiter's try wins the free key:
    // its wait's record must end in that same write, before its own end is ever sent.
    expect((await store.closeSession(holder.credential)).kind).toBe('closed');
    const won = await held(key, waiter);
    expect(compareTokens(won.fencingToken, grant.fencingToken)).toBeGreaterThan(0);
    expect((await fleet.waiterCounts([key])).get(key) ?? 0).toBe(0);
    expect((await store.release({ key, session: waiter.credential, fencingToken: won.fencingToken })).kind).toBe('released');
    // A later holder's release finds no stale wait of the first waiter to hand the key to.
    const later = await held(key, next);
    const result = await store.release({ key, session: next.credential, fencingToken: later.fencingToken });
    expect(result.kind === 'released' && result.handedTo).toBeFalsy();
    expect(await store.readLock(key)).toBeNull();
  });

  it("a handed wait that answered sends no end: its record goes with its grant's release, or with the sweep once the grant is gone", async () => {
    run += 1;
    const key = `handed-gone-${run}`;
    const [holder, used, lapsing] = await Promise.all([openTestSession(store), openTestSession(store), openTestSession(store)]);
    const recorded = async (waitId: string) =>
      (await db.query('SELECT count(*)::int AS n FROM holdfast_waiters WHERE wait_id = $1', [waitId]))[0]!.n as number;
    const grant = await held(key, holder);
    // Labels in begin order: two waits begun in one millisecond are ordered by wait id.
    const usedWait = await waitOn(key, used, 'a-used');
    const lapsingWait = await waitOn(key, lapsing, 'b-lapsing', { ttlMillis: 1, deadlineMillis: 60_000 });
    const handed = handedTo(await store.release({ key, session: holder.credential, fencingToken: grant.fencingToken }));
    expect(handed.waitId).toBe(usedWait);
    expect(await recorded(usedWait)).toBe(1); // kept, so a wait leaving without the key could give the grant back

    // The heir used its grant and releases it: that release takes the record along, and hands on to the next wait.
    const next = handedTo(await store.release({ key, session: used.credential, fencingToken: handed.fencingToken }));
    expect(next.waitId).toBe(lapsingWait);
    expect(await recorded(usedWait)).toBe(0);

    // The next heir's grant (TTL 1 ms) lapses unreleased: the sweep that expires it, or the one after, drops its record.
    expect(await recorded(lapsingWait)).toBe(1);
    for (let sweep = 0; sweep < 100 && (await recorded(lapsingWait)) > 0; sweep++) await store.expireLocks(1_000);
    expect(await recorded(lapsingWait)).toBe(0);
    expect(await store.readLock(key)).toBeNull();
    expect(await fleet.endWait(lapsingWait)).toBeNull();
  });

  it('a try that finds the key held records the wait it carries, in its own write; a try that is granted, or refused, records nothing', async () => {
    run += 1;
    const key = `on-try-${run}`;
    const [holder, waiter, refused] = await Promise.all([openTestSession(store), openTestSession(store), openTestSession(store)]);
    const recorded = async (waitId: string) =>
      (await db.query('SELECT count(*)::int AS n FROM holdfast_waiters WHERE wait_id = $1', [waitId]))[0]!.n as number;
    const record = (label: string, instance = instanceId) => ({ waitId: `w-${label}-${backend}-${run}`, instanceId: instance, ttlMillis: 30_000, deadlineMillis: 60_000 });

    const free = await store.tryAcquire({ key, session: holder.credential, ttlMillis: 60_000, recordWait: record('free') });
    expect(free.kind).toBe('granted');
    expect(await recorded(record('free').waitId)).toBe(0);
    expect(await store.tryAcquire({ key, session: refused.impostor, ttlMillis: 60_000, recordWait: record('impostor') })).toEqual({ kind: 'unauthenticated' });
    expect(await recorded(record('impostor').waitId)).toBe(0);
    const unknownInstance = await store.tryAcquire({ key, session: waiter.credential, ttlMillis: 60_000, recordWait: record('orphan', 'i_never_registered') });
    expect(unknownInstance).toMatchObject({ kind: 'held' });
    expect(unknownInstance.kind === 'held' && unknownInstance.waitRecorded).toBeFalsy();
    expect(await recorded(record('orphan').waitId)).toBe(0);

    const held = await store.tryAcquire({ key, session: waiter.credential, ttlMillis: 60_000, recordWait: record('held') });
    expect(held).toMatchObject({ kind: 'held', waitRecorded: true });
    expect((await fleet.waiterCounts([key])).get(key)).toBe(1);
    // The recorded wait is the one the holder's release hands the key to.
    if (free.kind !== 'granted') throw new Error('unreachable');
    const handed = handedTo(await store.release({ key, session: holder.credential, fencingToken: free.grant.fencingToken }));
    expect(handed).toMatchObject({ waitId: record('held').waitId, sessionId: waiter.record.sessionId });
    expect(compareTokens(handed.fencingToken, free.grant.fencingToken)).toBeGreaterThan(0);
  });

  it('a refused release changes nothing and hands nothing', async () => {
    run += 1;
    const key = `refused-${run}`;
    const [holder, waiter] = await Promise.all([openTestSession(store), openTestSession(store)]);
    const grant = await held(key, holder);
    await waitOn(key, waiter, 'refused');
    expect(await store.release({ key, session: holder.impostor, fencingToken: grant.fencingToken })).toEqual({ kind: 'unauthenticated' });
    expect(await store.release({ key, session: waiter.credential, fencingToken: grant.fencingToken })).toEqual({ kind: 'lost' });
    expect(await store.readLock(key)).toMatchObject({ sessionId: holder.record.sessionId, fencingToken: grant.fencingToken });
    expect((await fleet.waiterCounts([key])).get(key)).toBe(1);
  });
});
