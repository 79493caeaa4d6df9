/**
 * Conformance for lock values and the holder feed (issue 23; spi.ts AcquireAttempt.value,
 * RenewRequest.value, HolderWatch), run on every backend by values.conformance.test.ts:
 * - a new grant stores its value; the holder re-acquiring gets its grant back with its own value;
 * - a proclaim (renew with a value) replaces it under the same token; a renew without one keeps it;
 * - a new grant never inherits the previous holder's value (after a release, or a lapsed grant's takeover);
 * - a key handed to a recorded wait (stores that hand off) carries the wait's value;
 * - the holder feed reports a grant and a release made through another store instance.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { LockStore, TryAcquireResult } from '../../../lock/store/spi.js';
import { eventually } from '../../support/http.js';
import { openTestSession, type TestSession } from '../../support/store-sessions.js';

export interface ValuesSubject {
  store: LockStore;
  /** A second instance on the same store (absent: one process only, as embedded and memory). */
  peer?: LockStore;
  cleanup(): Promise<void>;
}

const LONG = 120_000;

export function describeLockValues(name: string, make: () => Promise<ValuesSubject>): void {
  describe(`lock values and holder feed: ${name}`, () => {
    let subject: ValuesSubject;
    let store: LockStore;
    const key = (label: string) => `values/${label}/${randomBytes(4).toString('hex')}`;

    beforeAll(async () => {
      subject = await make();
      store = subject.store;
    });
    afterAll(async () => {
      await subject?.cleanup();
    });

    const granted = (result: TryAcquireResult) => {
      if (result.kind !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(result)}`);
      return result;
    };
    const acquire = async (k: string, session: TestSession, value?: string, ttlMillis = LONG) =>
      granted(await store.tryAcquire({ key: k, session: session.credential, ttlMillis, ...(value !== undefined ? { value } : {}) }));

    test('a new grant stores its value; the holder re-acquiring gets its own grant and value back', async () => {
      const a = await openTestSession(store);
      const k = key('stored');
      const first = await acquire(k, a, 'leader at 10.0.0.7:8080 ✓');
      expect(first.grant).toMatchObject({ mode: 'exclusive', limit: 1, value: 'leader at 10.0.0.7:8080 ✓' });
      expect(await store.readLock(k)).toMatchObject({ fencingToken: first.grant.fencingToken, value: 'leader at 10.0.0.7:8080 ✓' });
      const again = await acquire(k, a, 'another value');
      expect(again.existing).toBe(true);
      expect(again.grant).toEqual(first.grant);
      const plain = await acquire(key('plain'), a);
      expect(plain.grant.value).toBeUndefined();
      expect(plain.grant).toMatchObject({ mode: 'exclusive', limit: 1 });
    });

    test('a proclaim replaces the value under the same token; a renew without one keeps it', async () => {
      const a = await openTestSession(store);
      const k = key('proclaim');
      const first = await acquire(k, a, 'v1');
      const proclaimed = await store.renew({ key: k, session: a.credential, fencingToken: first.grant.fencingToken, value: 'v2' });
      expect(proclaimed).toMatchObject({ kind: 'renewed', lock: { fencingToken: first.grant.fencingToken, value: 'v2' } });
      const renewed = await store.renew({ key: k, session: a.credential, fencingToken: first.grant.fencingToken });
      expect(renewed).toMatchObject({ kind: 'renewed', lock: { value: 'v2' } });
      expect(await store.readLock(k)).toMatchObject({ fencingToken: first.grant.fencingToken, value: 'v2' });
      // A stale token proclaims nothing.
      const b = await openTestSession(store);
      expect(await store.renew({ key: k, session: b.credential, fencingToken: first.grant.fencingToken, value: 'hijack' })).toEqual({ kind: 'lost' });
      expect((await store.readLock(k))?.value).toBe('v2');
    });

    test("a new grant never inherits the previous holder's value (after a release, or a lapsed grant's takeover)", async () => {
      const a = await openTestSession(store);
      const b = await openTestSession(store);
      const k = key('fresh');
      const first = await acquire(k, a, 'a was here');
      expect(await store.release({ key: k, session: a.credential, fencingToken: first.grant.fencingToken })).toMatchObject({ kind: 'released' });
      const second = await acquire(k, b);
      expect(second.grant.value).toBeUndefined();
      expect((await store.readLock(k))?.value).toBeUndefined();

      const lapsing = key('lapsed');
      const short = await acquire(lapsing, a, 'short-lived', 1000);
      const takeover = await eventually(
        async () => {
          const result = await store.tryAcquire({ key: lapsing, session: b.credential, ttlMillis: LONG });
          return result.kind === 'granted' ? result : null;
        },
        30_000,
        50,
      );
      expect(takeover!.grant.fencingToken).not.toBe(short.grant.fencingToken);
      expect(takeover!.grant.value).toBeUndefined();
      expect((await store.readLock(lapsing))?.value).toBeUndefined();
    });

    test('a key handed to a recorded wait carries that wait\'s value (stores that hand off)', async () => {
      const fleet = store.fleet;
      if (!fleet?.handsOff) {
        expect(fleet?.handsOff ?? false).toBe(false); // nothing to hand: stores without handoff grant on the next try
        return;
      }
      const instanceId = `i_${randomUUID()}`;
      await fleet.heartbeatInstance({ instanceId, ttlMillis: LONG });
      const a = await openTestSession(store);
      const b = await openTestSession(store);
      const k = key('handed');
      const first = await acquire(k, a, 'old leader');
      const waitId = `w_${randomUUID()}`;
      await fleet.beginWait({ waitId, sessionId: b.record.sessionId, key: k, instanceId, ttlMillis: LONG, deadlineMillis: LONG, value: 'new leader' });
      // A handoff deletes no row: its own statement tells the watches of the key.
      const onHandoff = await store.holderWatch?.watch({ key: k, instanceId });
      const released = await store.release({ key: k, session: a.credential, fencingToken: first.grant.fencingToken });
      if (onHandoff) expect(await onHandoff.changed).toBe('changed');
      onHandoff?.stop();
      if (released.kind !== 'released' || !released.handedTo) throw new Error(`expected a handoff, got ${JSON.stringify(released)}`);
      expect(released.handedTo).toMatchObject({ sessionId: b.record.sessionId, waitId, value: 'new leader' });
      expect(await store.readLock(k)).toMatchObject({ sessionId: b.record.sessionId, value: 'new leader' });
      expect(await fleet.endWait(waitId)).toMatchObject({ fencingToken: released.handedTo.fencingToken, value: 'new leader' });
      await fleet.leaveFleet(instanceId);
    });

    test('the holder feed reports a grant and a release made through another instance', async () => {
      const watching = subject.peer ?? store;
      const feed = watching.holderWatch;
      if (!feed) {
        expect(name).toBe('in-memory'); // the only store without one: core re-reads instead
        return;
      }
      const instanceId = `i_${randomUUID()}`;
      await watching.fleet?.heartbeatInstance({ instanceId, ttlMillis: LONG });
      const a = await openTestSession(store);
      const k = key('feed');
      const onGrant = await feed.watch({ key: k, instanceId });
      const first = await acquire(k, a);
      expect(await onGrant.changed).toBe('changed');
      onGrant.stop();
      const onRelease = await feed.watch({ key: k, instanceId });
      await store.release({ key: k, session: a.credential, fencingToken: first.grant.fencingToken });
      expect(await onRelease.changed).toBe('changed');
      onRelease.stop();
      await watching.fleet?.leaveFleet(instanceId);
    });
  });
}
