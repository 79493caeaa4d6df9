/**
 * On etcd a grant sent with the wait's id deletes the wait's key in the grant's own txn, and core
 * then sends no endWait for it (ab40707: AcquireWait.recordEndedByGrant). Nothing the fleet keeps
 * for that wait may outlive it: else every contended acquire leaves an entry behind in the
 * instance's memory for as long as the process runs.
 */
import { describe, expect, it } from 'vitest';
import type { RecordedWaits } from '../../lock/store/etcd/wait-record.js';
import { etcdStores, openSession } from './helpers.js';

describe('a wait ended by its grant on etcd', () => {
  const fixture = etcdStores();

  it('leaves nothing in the fleet for that wait once the grant has ended its key', async () => {
    const store = await fixture.store();
    const instanceId = 'i_grant_ends_wait';
    await store.fleet.heartbeatInstance({ instanceId, ttlMillis: 60_000 });
    const [holder, waiter] = await Promise.all([openSession(store), openSession(store)]);
    const key = 'grant-ends-wait';
    const held = await store.tryAcquire({ key, session: holder.credential, ttlMillis: 60_000 });
    if (held.kind !== 'granted') throw new Error('expected a grant');

    const waitIds = Array.from({ length: 5 }, (_, i) => `w-grant-ends-${i}`);
    let token = held.grant.fencingToken;
    let holding = holder;
    for (const waitId of waitIds) {
      const next = holding === holder ? waiter : holder;
      await store.fleet.beginWait({ waitId, sessionId: next.credential.sessionId, key, instanceId, ttlMillis: 60_000, deadlineMillis: 60_000 });
      expect((await store.fleet.waiterCounts([key])).get(key)).toBe(1);
      expect((await store.release({ key, session: holding.credential, fencingToken: token })).kind).toBe('released');
      const granted = await store.tryAcquire({ key, session: next.credential, ttlMillis: 60_000, waitId });
      if (granted.kind !== 'granted') throw new Error(`expected a grant, got ${granted.kind}`);
      // The grant's write ended the wait: it counts no more, and core sends no end of its own.
      expect((await store.fleet.waiterCounts([key])).get(key) ?? 0).toBe(0);
      token = granted.grant.fencingToken;
      holding = next;
    }
    // What the store remembers of waits recorded through this process (for endWait without a scan; wait-record.ts).
    const remembered = (store as unknown as { ctx: { recordedWaits: RecordedWaits } }).ctx.recordedWaits;
    expect(remembered).toBeDefined();
    expect(waitIds.filter((waitId) => remembered.get(waitId) !== undefined)).toEqual([]);
    await store.release({ key, session: holding.credential, fencingToken: token });
  });
});
