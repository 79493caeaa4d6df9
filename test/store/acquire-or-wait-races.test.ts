/**
 * Races of the contended-acquire statements (migration 11's acquire-or-wait, and the release and
 * sweep that end handed waits' records) against instance ends, on real PostgreSQL. Each race is
 * forced, not hoped for: one transaction is held open (or paused on an advisory lock by a trigger
 * this test installs in its own database) until the other is seen waiting on its row lock.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HandedGrant, ReleaseResult } from '../../lock/store/spi.js';
import { PgDatabase } from '../../lock/store/sql/pg-database.js';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import { sharedPostgres } from '../support/server.js';
import { openTestSession } from '../support/store-sessions.js';

const PAUSE_LOCK = 7070999;

describe('contended acquire races on postgres', () => {
  let url: string;
  let db: PgDatabase;
  let store: SqlLockStore;
  const clients: pg.Client[] = [];
  let run = 0;

  beforeAll(async () => {
    url = await (await sharedPostgres()).createDatabase();
    db = new PgDatabase(url, 8, { statementTimeoutMillis: 30_000 });
    store = new SqlLockStore(db, 'postgres');
    await store.init();
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end().catch(() => {})));
    await store?.close();
  });

  async function client(): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    clients.push(c);
    return c;
  }

  /** Until a backend running `statement` waits (`waitEventType`: Lock for a row lock, Lock/advisory for the pause). */
  async function seenWaiting(statement: string, waitEvent: 'Lock' | 'advisory', unless?: { done: boolean }): Promise<void> {
    const watcher = await client();
    for (let i = 0; i < 3000 && !unless?.done; i++) {
      const rows = await watcher.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
           AND query LIKE '%' || $1 || '%' AND wait_event_type = 'Lock' AND ($2 = 'Lock' OR wait_event = 'advisory')`,
        [statement, waitEvent],
      );
      if (rows.rowCount) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    if (unless?.done) return;
    throw new Error(`no backend running ${statement} waited on ${waitEvent}`);
  }

  function handedTo(result: ReleaseResult): HandedGrant {
    if (result.kind !== 'released' || !result.handedTo) throw new Error(`expected a handoff, got ${JSON.stringify(result)}`);
    return result.handedTo;
  }

  it("a try that records its wait while its instance's row is being deleted answers held, unrecorded (no foreign-key error)", async () => {
    run += 1;
    const instanceId = `i_leaving_${run}`;
    const key = `leaving-${run}`;
    await store.fleet.heartbeatInstance({ instanceId, ttlMillis: 600_000 });
    const [holder, waiter] = await Promise.all([openTestSession(store), openTestSession(store)]);
    expect((await store.tryAcquire({ key, session: holder.credential, ttlMillis: 60_000 })).kind).toBe('granted');

    // The instance leaves (leaveFleet's statement), not yet committed, while the try decides.
    const leaving = await client();
    await leaving.query('BEGIN');
    await leaving.query('DELETE FROM holdfast_instances WHERE instance_id = $1', [instanceId]);
    const tried = store.tryAcquire({
      key,
      session: waiter.credential,
      ttlMillis: 60_000,
      recordWait: { waitId: `w-leaving-${run}`, instanceId, ttlMillis: 30_000, deadlineMillis: 60_000 },
    });
    const settled = tried.then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
    await seenWaiting('holdfast_acquire_holders', 'Lock');
    await leaving.query('COMMIT');

    const outcome = await settled;
    // As beginWait answers a wait of a gone instance: nothing recorded, and no error for the acquire (500).
    expect('error' in outcome ? String((outcome.error as { code?: string }).code ?? outcome.error) : null).toBeNull();
    expect('result' in outcome && outcome.result).toMatchObject({ kind: 'held' });
    expect('result' in outcome && outcome.result.kind === 'held' && outcome.result.waitRecorded).toBeFalsy();
  });

  it("a release that ends a handed wait's record never waits on that record's row lock (no deadlock with an instance's end)", async () => {
    run += 1;
    const instanceId = `i_ending_${run}`;
    const key = `ending-${run}`;
    await store.fleet.heartbeatInstance({ instanceId, ttlMillis: 600_000 });
    const [first, handedSession, next] = await Promise.all([openTestSession(store), openTestSession(store), openTestSession(store)]);
    const firstGrant = await store.tryAcquire({ key, session: first.credential, ttlMillis: 60_000 });
    if (firstGrant.kind !== 'granted') throw new Error('expected a grant');
    const handedWait = `w-handed-${run}`;
    const nextWait = `w-next-${run}`;
    await store.fleet.beginWait({ waitId: handedWait, sessionId: handedSession.record.sessionId, key, instanceId, ttlMillis: 60_000, deadlineMillis: 60_000 });
    // The handed wait answers with its grant and sends no end (ab40707): its record stays until that grant's release.
    const handed = handedTo(await store.release({ key, session: first.credential, fencingToken: firstGrant.grant.fencingToken }));
    expect(handed.waitId).toBe(handedWait);
    await store.fleet.beginWait({ waitId: nextWait, sessionId: next.record.sessionId, key, instanceId, ttlMillis: 60_000, deadlineMillis: 60_000 });

    // The instance ends (leaveFleet; expireInstances' delete is the same cascade): paused by this
    // test's trigger right after its cascade has locked the handed record, before the next one.
    const control = await client();
    await control.query('SELECT pg_advisory_lock($1)', [PAUSE_LOCK]);
    await control.query(`CREATE OR REPLACE FUNCTION test_pause_wait_end() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_advisory_xact_lock(${PAUSE_LOCK}); RETURN OLD; END $$`);
    await control.query(`CREATE TRIGGER test_pause_wait_end BEFORE DELETE ON holdfast_waiters
      FOR EACH ROW WHEN (OLD.wait_id = '${handedWait}') EXECUTE FUNCTION test_pause_wait_end()`);
    try {
      const ending = new PgDatabase(url, 1, { statementTimeoutMillis: 30_000 });
      const left = ending.query('DELETE FROM holdfast_instances WHERE instance_id = $1', [instanceId]).finally(() => ending.close());
      await seenWaiting('DELETE FROM holdfast_instances', 'advisory');
      // The next record is not locked yet: the cascade took the handed one first (the race is as described).
      const probe = await client();
      await probe.query('BEGIN');
      expect((await probe.query('SELECT 1 FROM holdfast_waiters WHERE wait_id = $1 FOR UPDATE NOWAIT', [nextWait])).rowCount).toBe(1);
      await probe.query('ROLLBACK');

      // The handed session releases its grant: the release hands the key on to the next wait (locking
      // that record) and deletes the handed record, locked by the instance's end.
      const released = store.release({ key, session: handedSession.credential, fencingToken: handed.fencingToken });
      const releaseDone = { done: false };
      const releaseSettled = released.then(
        (result) => ({ result }),
        (error: unknown) => ({ error }),
      ).finally(() => (releaseDone.done = true));
      const leftSettled = left.then(
        () => ({ result: 'left' }),
        (error: unknown) => ({ error }),
      );
      // Either the release finishes at once (it passed the locked record over), or it waits on it.
      await seenWaiting('holdfast_release_batch', 'Lock', releaseDone);
      await control.query('SELECT pg_advisory_unlock($1)', [PAUSE_LOCK]);

      const [release, leave] = await Promise.all([releaseSettled, leftSettled]);
      const failure = (o: object) => ('error' in o ? String((o.error as { code?: string }).code ?? o.error) : null);
      expect({ release: failure(release), leave: failure(leave) }).toEqual({ release: null, leave: null });
      expect('result' in release && release.result).toMatchObject({ kind: 'released' });
    } finally {
      await control.query('DROP TRIGGER IF EXISTS test_pause_wait_end ON holdfast_waiters');
      await control.query('SELECT pg_advisory_unlock_all()');
    }
    // Whatever the instance's end left, the sweep clears: no record of a gone instance counts.
    await store.expireLocks(1_000);
    expect((await store.fleet.waiterCounts([key])).get(key) ?? 0).toBe(0);
  });
});
