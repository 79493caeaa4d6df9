/**
 * Two etcd store instances on one state, one with its clock 20 s ahead (and,
 * separately, 20 s behind): etcd's leases decide liveness, so no instance's
 * clock can grant a live lock early or expire a live session or lock early.
 *
 * The skewed instance gets its clock through the store's `clock` option, which
 * feeds only advisory instants (grantedAt, expiresAt, audit `at`): if any
 * liveness decision read it, the fast instance would see a 10 s lock as long
 * lapsed and grant it, and its sweeper would end sessions heartbeated every cycle.
 * The oracle is the protected resource (test/support/fenced-resource.ts).
 */
import { describe, expect, it } from 'vitest';
import type { EtcdStore } from '../../lock/store/etcd/etcd-store.js';
import { FencedResourceRecorder, findOverlaps, findTokenOrderViolations, type ObservedGrant } from '../support/fenced-resource.js';
import { etcdStores, namespaceOf, openSession, type TestSession } from './helpers.js';

const fixture = etcdStores();

const CYCLES = 200;
const TTL_MILLIS = 10_000;

for (const skewMillis of [20_000, -20_000]) {
  describe(`etcd store with one instance's clock ${skewMillis > 0 ? 'ahead' : 'behind'} by ${Math.abs(skewMillis) / 1000} s`, () => {
    // 3.6–13 s here at load average 10; the timeout only bounds a hang.
    it(`${CYCLES} acquire/renew/heartbeat cycles across both instances: no early grant, no early expiry`, { timeout: 180_000 }, async () => {
      const steady = await fixture.store();
      const skewed = await fixture.store('shared', namespaceOf(steady), { clock: () => Date.now() + skewMillis });
      const onSteady = await openSession(steady, TTL_MILLIS, 'steady');
      const onSkewed = await openSession(skewed, TTL_MILLIS, 'skewed');
      const resource = new FencedResourceRecorder();
      const observed: ObservedGrant[] = [];
      const refusals: string[] = [];

      for (let cycle = 0; cycle < CYCLES; cycle += 1) {
        // Alternate who holds and through which instance, so each instance decides about the other's grants.
        const [holderStore, holder, otherStore, other]: [EtcdStore, TestSession, EtcdStore, TestSession] =
          cycle % 2 === 0 ? [steady, onSteady, skewed, onSkewed] : [skewed, onSkewed, steady, onSteady];
        const requestedAt = performance.now();
        const acquired = await holderStore.tryAcquire({ key: 'skew', session: holder.credential, ttlMillis: TTL_MILLIS });
        const grantedAt = performance.now();
        if (acquired.kind !== 'granted') throw new Error(`cycle ${cycle}: the free key was not granted (${acquired.kind})`);
        const token = acquired.grant.fencingToken;
        expect(resource.write('skew', token)).toBe(true);

        // No early grant: the other session, through either instance, finds it held.
        for (const via of [otherStore, holderStore]) {
          const contended = await via.tryAcquire({ key: 'skew', session: other.credential, ttlMillis: TTL_MILLIS });
          if (contended.kind !== 'held') refusals.push(`cycle ${cycle}: a live lock was answered ${contended.kind}`);
        }
        // Renew through the other instance (keeps the grant's TTL), heartbeat both sessions through both.
        const renewed = await otherStore.renew({ key: 'skew', session: holder.credential, fencingToken: token });
        if (renewed.kind !== 'renewed') refusals.push(`cycle ${cycle}: renew answered ${renewed.kind}`);
        for (const via of [steady, skewed]) {
          for (const session of [onSteady, onSkewed]) {
            const beat = await via.heartbeat(session.credential);
            if (beat.kind !== 'alive') refusals.push(`cycle ${cycle}: heartbeat of ${session.owner} answered ${beat.kind}`);
          }
        }
        // No early expiry: neither sweeper finds anything to end, and both see the lock held.
        if (cycle % 10 === 0) {
          for (const via of [steady, skewed]) {
            expect(await via.expireSessions(100)).toEqual([]);
            expect(await via.expireLocks(100)).toEqual([]);
            expect((await via.readLock('skew'))?.fencingToken).toBe(token);
          }
        }
        expect(resource.write('skew', token)).toBe(true);
        const releasedAt = performance.now();
        const released = await holderStore.release({ key: 'skew', session: holder.credential, fencingToken: token });
        if (released.kind !== 'released') refusals.push(`cycle ${cycle}: release answered ${released.kind}`);
        observed.push({ key: 'skew', token: BigInt(token), requestedAt, grantedAt, releasedAt });
      }

      expect(refusals).toEqual([]);
      expect(resource.rejected).toEqual([]);
      expect(resource.accepted).toBe(2 * CYCLES);
      expect(findOverlaps(observed)).toEqual([]);
      expect(findTokenOrderViolations(observed)).toEqual([]);
      expect((await steady.summary()).activeSessions).toBe(2);
      expect((await skewed.summary()).activeSessions).toBe(2);
    });

    it('a grant that is not renewed is taken over no earlier than its TTL after it was requested, whichever instance granted it', { timeout: 180_000 }, async () => {
      const steady = await fixture.store();
      const skewed = await fixture.store('shared', namespaceOf(steady), { clock: () => Date.now() + skewMillis });
      for (const [granting, polling] of [
        [skewed, steady],
        [steady, skewed],
      ] as const) {
        const holder = await openSession(granting, 60_000);
        const taker = await openSession(polling, 60_000);
        const key = `lapse-${granting === skewed ? 'skewed' : 'steady'}`;
        const requestedAt = performance.now();
        expect((await granting.tryAcquire({ key, session: holder.credential, ttlMillis: 2_000 })).kind).toBe('granted');
        let takenAt: number | null = null;
        // A 2 s lease is taken over 2–3 s after the grant on a quiet machine; the deadline only bounds a failure.
        while (takenAt === null && performance.now() - requestedAt < 30_000) {
          const attempt = await polling.tryAcquire({ key, session: taker.credential, ttlMillis: 2_000 });
          if (attempt.kind === 'granted') takenAt = performance.now();
          else await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(takenAt).not.toBeNull();
        expect(takenAt! - requestedAt).toBeGreaterThanOrEqual(2_000);
      }
    });
  });
}
