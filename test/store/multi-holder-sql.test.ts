/**
 * Multi-holder keys on the SQL stores (migration 13), beyond the conformance suite (holders-suite.ts):
 * a key moves between a mutex row and an anchor with holds as its grants come and go; a mutex
 * attempt on a key with live holds is held (or limit_mismatch) and records its wait in the try;
 * every end of a hold (release, session end, sweep) is announced on the release feed for a key
 * some wait is recorded on, answers the ended hold with the key's mode and limit, and leaves no
 * anchor behind once the key's last hold is gone.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetWaitState, TryAcquireResult } from '../../lock/store/spi.js';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import type { SqlDatabase } from '../../lock/store/sql/queryable.js';
import { freshSqlDatabase } from '../support/sql-stores.js';
import { openTestSession } from '../support/store-sessions.js';

const LONG = 120_000;

describe.each(['embedded', 'postgres'] as const)('multi-holder keys in SQL on %s', (backend) => {
  let store: SqlLockStore;
  let db: SqlDatabase;
  let fleet: FleetWaitState;
  const announced: string[] = [];
  let unsubscribe: () => void;
  const instanceId = `i_holders_${backend}`;
  const key = (label: string) => `sql-holders/${label}/${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    db = await freshSqlDatabase(backend);
    store = new SqlLockStore(db, backend);
    fleet = store.fleet;
    await store.init();
    unsubscribe = await store.releaseFeed.subscribeReleases({ released: (keys) => announced.push(...keys), handedOff: () => {}, health: () => {} });
    await fleet.heartbeatInstance({ instanceId, ttlMillis: 600_000 });
  });
  afterAll(async () => {
    unsubscribe();
    await store.close();
  });

  const granted = (result: TryAcquireResult) => {
    if (result.kind !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(result)}`);
    return result.grant;
  };
  const rowsOf = async (k: string) => ({
    locks: (await db.query('SELECT mode FROM holdfast_locks WHERE key = $1', [k])).length,
    holds: (await db.query('SELECT 1 FROM holdfast_holds WHERE key = $1', [k])).length,
  });
  async function announcedSoon(k: string): Promise<void> {
    for (let i = 0; i < 500 && !announced.includes(k); i++) await new Promise((r) => setTimeout(r, 20));
    expect(announced).toContain(k);
  }

  it('a mutex attempt on shared holds is held naming the lowest, records its wait, and takes the key once they end', async () => {
    const [r1, r2, w] = await Promise.all([openTestSession(store), openTestSession(store), openTestSession(store)]);
    const k = key('mutex-on-shared');
    const g1 = granted(await store.tryAcquire({ key: k, session: r1.credential, ttlMillis: LONG, mode: 'shared' }));
    const g2 = granted(await store.tryAcquire({ key: k, session: r2.credential, ttlMillis: LONG, mode: 'shared' }));
    expect([g1.mode, g1.limit, g2.mode]).toEqual(['shared', 1, 'shared']);
    const waitId = `w_${randomBytes(6).toString('hex')}`;
    const held = await store.tryAcquire({ key: k, session: w.credential, ttlMillis: LONG, recordWait: { waitId, instanceId, ttlMillis: LONG, deadlineMillis: LONG } });
    expect(held).toMatchObject({ kind: 'held', waitRecorded: true, holder: { fencingToken: g1.fencingToken, mode: 'shared' } });
    expect((await fleet.waiterCounts([k])).get(k)).toBe(1);

    const first = await store.release({ key: k, session: r1.credential, fencingToken: g1.fencingToken });
    expect(first).toMatchObject({ kind: 'released', lock: { fencingToken: g1.fencingToken, mode: 'shared', limit: 1 } });
    await announcedSoon(k);
    expect(await store.tryAcquire({ key: k, session: w.credential, ttlMillis: LONG })).toMatchObject({ kind: 'held', holder: { fencingToken: g2.fencingToken } });
    await store.release({ key: k, session: r2.credential, fencingToken: g2.fencingToken });
    // The last hold gone, its anchor goes in the same write: the key is free, as it was.
    expect(await rowsOf(k)).toEqual({ locks: 0, holds: 0 });

    const mutex = granted(await store.tryAcquire({ key: k, session: w.credential, ttlMillis: LONG }));
    expect(BigInt(mutex.fencingToken)).toBeGreaterThan(BigInt(g2.fencingToken));
    expect((await fleet.waiterCounts([k])).get(k) ?? 0).toBe(0);
    const read = await store.readLock(k);
    expect(read).toMatchObject({ fencingToken: mutex.fencingToken, mode: 'exclusive', limit: 1 });
    expect(read?.holders).toBeUndefined();
    // A mutex row: a shared attempt is held by it, a semaphore attempt is limit_mismatch (the key's limit is 1).
    expect(await store.tryAcquire({ key: k, session: r1.credential, ttlMillis: LONG, mode: 'shared' })).toMatchObject({ kind: 'held' });
    expect(await store.tryAcquire({ key: k, session: r1.credential, ttlMillis: LONG, limit: 2 })).toMatchObject({ kind: 'limit_mismatch', limit: 1 });
  });

  it('a mutex attempt on a semaphore key is limit_mismatch, and records no wait', async () => {
    const [a, m] = await Promise.all([openTestSession(store), openTestSession(store)]);
    const k = key('mutex-on-semaphore');
    const ga = granted(await store.tryAcquire({ key: k, session: a.credential, ttlMillis: LONG, limit: 3, value: 'permit-a' }));
    expect([ga.mode, ga.limit, ga.value]).toEqual(['exclusive', 3, 'permit-a']);
    const waitId = `w_${randomBytes(6).toString('hex')}`;
    const answer = await store.tryAcquire({ key: k, session: m.credential, ttlMillis: LONG, recordWait: { waitId, instanceId, ttlMillis: LONG, deadlineMillis: LONG } });
    expect(answer).toMatchObject({ kind: 'limit_mismatch', limit: 3, holder: { fencingToken: ga.fencingToken, value: 'permit-a' } });
    expect((await fleet.waiterCounts([k])).get(k) ?? 0).toBe(0);
  });

  it("a session's end answers its holds with the key's mode and limit and announces them; the sweep ends lapsed holds", async () => {
    const [a, b, w] = await Promise.all([openTestSession(store), openTestSession(store), openTestSession(store)]);
    const k = key('session-end');
    granted(await store.tryAcquire({ key: k, session: a.credential, ttlMillis: LONG, limit: 2 }));
    const gb = granted(await store.tryAcquire({ key: k, session: b.credential, ttlMillis: 300, limit: 2 }));
    await fleet.beginWait({ waitId: `w_${randomBytes(6).toString('hex')}`, sessionId: w.record.sessionId, key: k, instanceId });
    expect((await store.summary()).heldLocks).toBeGreaterThanOrEqual(2);

    const closed = await store.closeSession(a.credential);
    if (closed.kind !== 'closed') throw new Error('not closed');
    expect(closed.ended.releasedLocks).toEqual([expect.objectContaining({ key: k, sessionId: a.record.sessionId, mode: 'exclusive', limit: 2 })]);
    await announcedSoon(k);
    announced.length = 0;

    // b's hold lapses on its own TTL: the sweep ends it, announces it, and the anchor goes with it.
    let swept: { key: string; fencingToken: string }[] = [];
    for (let i = 0; i < 100 && !swept.some((l) => l.key === k); i++) {
      await new Promise((r) => setTimeout(r, 50));
      swept = await store.expireLocks(1000);
    }
    expect(swept).toContainEqual(expect.objectContaining({ key: k, fencingToken: gb.fencingToken, limit: 2 }));
    await announcedSoon(k);
    expect(await rowsOf(k)).toEqual({ locks: 0, holds: 0 });
  });

  it('listLocks pages by key, describing a multi-holder key by its lowest grant with every holder', async () => {
    const [a, b] = await Promise.all([openTestSession(store), openTestSession(store)]);
    const prefix = key('list');
    const ga = granted(await store.tryAcquire({ key: `${prefix}/1`, session: a.credential, ttlMillis: LONG, mode: 'shared' }));
    const gb = granted(await store.tryAcquire({ key: `${prefix}/1`, session: b.credential, ttlMillis: LONG, mode: 'shared' }));
    const gm = granted(await store.tryAcquire({ key: `${prefix}/2`, session: a.credential, ttlMillis: LONG }));
    const first = await store.listLocks({ prefix, limit: 1 });
    expect(first.items.map((l) => [l.key, l.fencingToken, (l.holders ?? []).map((h) => h.fencingToken)])).toEqual([
      [`${prefix}/1`, ga.fencingToken, [ga.fencingToken, gb.fencingToken]],
    ]);
    const second = await store.listLocks({ prefix, limit: 1, cursor: first.nextCursor! });
    expect(second.items.map((l) => [l.key, l.fencingToken, l.holders])).toEqual([[`${prefix}/2`, gm.fencingToken, undefined]]);
    const sessions = await store.listSessions({ limit: 1000 });
    expect(sessions.items.find((s) => s.sessionId === b.record.sessionId)?.lockCount).toBe(1);
  });

  it("the previous release's acquire functions (mid-roll) find a key with a live hold held, and take it as a mutex once none lives", async () => {
    const [r, old] = await Promise.all([openTestSession(store), openTestSession(store)]);
    const k = key('previous-release');
    // Shared: a mutex attempt is held (and records its wait); on a semaphore it would be limit_mismatch, answered held.
    const g = granted(await store.tryAcquire({ key: k, session: r.credential, ttlMillis: 1_000, mode: 'shared' }));
    const who = [old.record.sessionId, old.credential.tokenHash];
    const single = await db.query('SELECT r_kind AS kind, r_fencing_token AS token FROM holdfast_try_acquire($1, $2, $3, $4)', [k, ...who, LONG]);
    const batch = await db.query(
      'SELECT r_kind AS kind, r_fencing_token AS token FROM holdfast_try_acquire_batch(ARRAY[$1::text], ARRAY[$2::text], ARRAY[$3::text], ARRAY[$4::integer])',
      [k, ...who, LONG],
    );
    const waitId = `w_${randomBytes(6).toString('hex')}`;
    const orWait = await db.query(
      `SELECT r_kind AS kind, r_fencing_token AS token, r_wait_recorded AS recorded FROM holdfast_acquire_or_wait_batch(
         ARRAY[$1::text], ARRAY[$2::text], ARRAY[$3::text], ARRAY[$4::integer], ARRAY[$5::text], ARRAY[$6::text], ARRAY[$4::integer], ARRAY[$4::bigint])`,
      [k, ...who, LONG, waitId, instanceId],
    );
    expect([single[0], batch[0], orWait[0]]).toEqual([
      { kind: 'held', token: g.fencingToken },
      { kind: 'held', token: g.fencingToken },
      { kind: 'held', token: g.fencingToken, recorded: true },
    ]);
    await fleet.endWait(waitId);
    // The hold lapses (no sweep yet): the anchor stays, and the old single function takes the key as a mutex row.
    for (let i = 0; i < 200 && (await store.readLock(k)) !== null; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(await store.readLock(k)).toBeNull();
    expect((await rowsOf(k)).locks).toBe(1);
    const taken = await db.query('SELECT r_kind AS kind, r_fencing_token AS token FROM holdfast_try_acquire($1, $2, $3, $4)', [k, ...who, LONG]);
    expect(taken[0]?.kind).toBe('granted');
    expect(BigInt(String(taken[0]?.token))).toBeGreaterThan(BigInt(g.fencingToken));
    expect(await store.readLock(k)).toMatchObject({ sessionId: old.record.sessionId, fencingToken: taken[0]?.token, mode: 'exclusive', limit: 1 });
  });
});
