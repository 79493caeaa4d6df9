/**
 * Group commit for the fleet wait state on the SQL store: the waits that begin (and
 * end) in one turn go out as one statement each, and every one of them is recorded
 * (and removed); a wait of a session that has already ended is simply not recorded.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SqlLockStore } from '../../lock/store/sql/sql-store.js';
import { openCountingStore } from '../support/counting-database.js';
import { openTestSession } from '../support/store-sessions.js';

describe.each(['postgres', 'embedded'] as const)('wait records on %s', (backend) => {
  let store: SqlLockStore;
  let statements: () => number;
  beforeAll(async () => {
    ({ store, statements } = await openCountingStore(backend));
  });
  afterAll(async () => {
    await store?.close();
  });

  test('12 waits begun in one turn: one statement, 11 recorded (the ended session’s is not); 12 ended in one turn: one statement, none left', async () => {
    const instanceId = `i-${backend}`;
    await store.fleet.heartbeatInstance({ instanceId, ttlMillis: 60_000 });
    const sessions = await Promise.all(Array.from({ length: 12 }, (_, i) => openTestSession(store, { owner: `w${i}` })));
    expect((await store.closeSession(sessions[5]!.credential)).kind).toBe('closed');
    const waits = sessions.map((s, i) => ({ waitId: `wait-${backend}-${i}`, sessionId: s.record.sessionId, key: `hot/${i % 3}`, instanceId }));

    const beforeBegin = statements();
    await Promise.all(waits.map((w) => store.fleet.beginWait(w)));
    expect(statements() - beforeBegin).toBe(1);
    // Keys hot/0, hot/1, hot/2 get 4 waits each; wait 5 (hot/2) belonged to the ended session.
    expect(Object.fromEntries(await store.fleet.waiterCounts(['hot/0', 'hot/1', 'hot/2']))).toEqual({ 'hot/0': 4, 'hot/1': 4, 'hot/2': 3 });

    const beforeEnd = statements();
    await Promise.all(waits.map((w) => store.fleet.endWait(w.waitId)));
    expect(statements() - beforeEnd).toBe(1);
    expect((await store.fleet.waiterCounts(['hot/0', 'hot/1', 'hot/2'])).size).toBe(0);
  });
});
