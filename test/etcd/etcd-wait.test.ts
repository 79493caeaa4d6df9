/**
 * The revision-addressed wait (ReleaseWaiter) against a real etcd, for both
 * wait shapes: the gap race, wake on release, renew does not wake, deadline,
 * abort, session end, and fallback when the watch cannot serve.
 */
import { describe, expect, it } from 'vitest';
import { startEtcd } from '../support/etcd.js';
import { Etcd3 } from 'etcd3';
import type { EtcdStore } from '../../lock/store/etcd/etcd-store.js';
import { elapsedSince, etcdKvRequests, etcdStores, namespaceOf, openSession, openStore, until } from './helpers.js';

const fixture = etcdStores();
const store = fixture.store;

/** Holder A takes `key`; B's attempt fails at revision R. */
async function holdAndFail(s: EtcdStore, key: string) {
  const holder = await openSession(s);
  const waiter = await openSession(s);
  const grant = await s.tryAcquire({ key, session: holder.credential, ttlMillis: 30_000 });
  if (grant.kind !== 'granted') throw new Error('holder got no grant');
  const failed = await s.tryAcquire({ key, session: waiter.credential, ttlMillis: 30_000 });
  if (failed.kind !== 'held' || failed.observedRevision === undefined) throw new Error('waiter was not refused with a revision');
  const release = () => s.release({ key, session: holder.credential, fencingToken: grant.grant.fencingToken });
  return { holder, waiter, token: grant.grant.fencingToken, observedRevision: failed.observedRevision, release };
}

const never = new AbortController().signal;

for (const shape of ['shared', 'per-call'] as const) {
  describe(`waitForRelease (${shape} watch)`, () => {
    it('gap race: a release that lands before the wait registers still ends the wait with "released"', async () => {
      // THIS TEST FAILS if the wait watches from the current revision instead of R + 1:
      // the DELETE happened before the wait existed, so a watch from "now" never sees it
      // and the wait runs to its deadline. Checked by hand for both shapes (shared: without
      // the per-key delete record; per-call: startRevision omitted and no read-back) —
      // both returned "deadline" after 5 s. The raw watch below shows the same thing live.
      const s = await store(shape);
      const { observedRevision, release } = await holdAndFail(s, 'gap');

      // Provable order: the release is committed (awaited) before waitForRelease is even called.
      expect((await release()).kind).toBe('released');

      const raw = new Etcd3({ hosts: fixture.etcd.endpoints });
      const fromNow = await raw.watch().prefix('/holdfast/').create();
      let eventsSeenFromNow = 0;
      fromNow.on('delete', () => (eventsSeenFromNow += 1));
      try {
        const started = performance.now();
        const result = await s.waitForRelease({ key: 'gap', observedRevision, timeoutMillis: 5_000, signal: never });
        const waited = elapsedSince(started);
        console.log(`gap race (${shape}): answered ${waited.toFixed(0)} ms after the wait began`);
        // The outcome is the check (a watch from "now" ends at the deadline); the time only has to be inside it.
        expect(result).toEqual({ outcome: 'released' });
        expect(waited).toBeLessThan(5_000);
        expect(eventsSeenFromNow).toBe(0); // a watch from "now" has nothing to report
      } finally {
        await fromNow.cancel();
        raw.close();
      }
    });

    it('happy path: the holder releases after 200 ms and the waiter wakes with "released", soon after the release', async () => {
      const s = await store(shape);
      const { waiter, observedRevision, release } = await holdAndFail(s, 'happy');
      let releaseSentAt = Number.POSITIVE_INFINITY;
      const waiting = s.waitForRelease({ key: 'happy', observedRevision, timeoutMillis: 30_000, signal: never }).then((result) => ({
        result,
        at: performance.now(),
      }));
      const released = new Promise<void>((resolve) =>
        setTimeout(() => {
          releaseSentAt = performance.now();
          void release().then(() => resolve());
        }, 200),
      );
      const woke = await waiting;
      await released;
      const afterRelease = woke.at - releaseSentAt;
      console.log(`wake (${shape}): ${afterRelease.toFixed(0)} ms after the release was sent`);
      expect(woke.result).toEqual({ outcome: 'released' });
      // Woken by the release (never before it was sent), promptly: ~5 ms on a quiet machine, the bound is ≥ 10×
      // that and far below the 30 s deadline, which is what a wait that missed the release would run to.
      expect(afterRelease).toBeGreaterThanOrEqual(0);
      expect(afterRelease).toBeLessThan(5_000);
      // A hint, not a grant: the waiter still has to take it.
      expect((await s.tryAcquire({ key: 'happy', session: waiter.credential, ttlMillis: 1_000 })).kind).toBe('granted');
    });

    it('renewals by the holder do not wake the waiter and cost the waiter no requests', async () => {
      const s = await store(shape);
      const { holder, token, observedRevision, release } = await holdAndFail(s, 'renewed');
      const baseline = await etcdKvRequests(fixture.etcd.endpoints[0]!);
      let settled = false;
      const waiting = s.waitForRelease({ key: 'renewed', observedRevision, timeoutMillis: 20_000, signal: never }).then((result) => {
        settled = true;
        return result;
      });
      // The wait registers before anything is counted. Shared: registration is synchronous, no request. Per-call: its
      // watches connect and each does one read-back (the lock key and the holder's session key): waited for by
      // count, not by a sleep that a slow machine can outrun.
      const registrationReads = shape === 'per-call' ? 2 : 0;
      await until(async () => (await etcdKvRequests(fixture.etcd.endpoints[0]!)) >= baseline + registrationReads, 30_000, 'the wait\'s read-backs');
      const before = await etcdKvRequests(fixture.etcd.endpoints[0]!);
      expect(before - baseline).toBe(registrationReads);
      for (let i = 0; i < 2; i += 1) {
        const renewed = await s.renew({ key: 'renewed', session: holder.credential, fencingToken: token, ttlMillis: 30_000 });
        expect(renewed).toMatchObject({ kind: 'renewed', lock: { fencingToken: token } });
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
      const after = await etcdKvRequests(fixture.etcd.endpoints[0]!);
      expect(settled).toBe(false);
      // Each renew is one read txn + one write txn (its lease calls are not KV requests); anything beyond that would be the waiter polling.
      expect(after - before).toBe(4);
      await release();
      expect(await waiting).toEqual({ outcome: 'released' });
    });

    it('deadline: nobody releases and the wait ends with "deadline" at waitMillis', async () => {
      const s = await store(shape);
      const { observedRevision } = await holdAndFail(s, 'deadline');
      const started = performance.now();
      expect(await s.waitForRelease({ key: 'deadline', observedRevision, timeoutMillis: 400, signal: never })).toEqual({ outcome: 'deadline' });
      const waited = elapsedSince(started);
      console.log(`deadline (${shape}): a 400 ms wait ended after ${waited.toFixed(0)} ms`);
      // Never before waitMillis; after it by no more than a timer's lateness: a few ms on a quiet machine, the bound
      // allows ≥ 10× the whole wait (it tells "at its deadline" from "never", or from a far longer one).
      expect(waited).toBeGreaterThanOrEqual(395);
      expect(waited).toBeLessThan(400 + 4_000);
    });

    it('abort: the caller going away ends the wait with "aborted" and leaves no watcher', async () => {
      const s = await store(shape);
      const { observedRevision } = await holdAndFail(s, 'abort');
      const caller = new AbortController();
      const waiting = s.waitForRelease({ key: 'abort', observedRevision, timeoutMillis: 20_000, signal: caller.signal });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(s.openWatchCount()).toBe(1);
      const started = performance.now();
      caller.abort();
      expect(await waiting).toEqual({ outcome: 'aborted' });
      expect(elapsedSince(started)).toBeLessThan(500);
      expect(s.openWatchCount()).toBe(0);
    });

    it('a waiter whose session is killed by another server instance wakes at once, and its retry finds no session', async () => {
      const s = await store(shape);
      const namespace = namespaceOf(s);
      const other = await store(shape, namespace);
      const { waiter, observedRevision } = await holdAndFail(s, 'killed');
      const waiting = s.waitForRelease({ key: 'killed', observedRevision, timeoutMillis: 20_000, signal: never, sessionId: waiter.sessionId });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const started = performance.now();
      await other.killSession(waiter.sessionId, { actor: 'ops', requestId: 'kill-1', reason: 'test' });
      const killedIn = elapsedSince(started);
      expect(await waiting).toEqual({ outcome: 'released' });
      const wokeIn = elapsedSince(started);
      console.log(`killed waiter (${shape}): kill took ${killedIn.toFixed(0)} ms, wait ended ${wokeIn.toFixed(0)} ms after it began`);
      // "At once" against the 20 s deadline it would otherwise run to.
      expect(wokeIn).toBeLessThan(5_000);
      expect(await s.tryAcquire({ key: 'killed', session: waiter.credential, ttlMillis: 1_000 })).toEqual({
        kind: 'session_not_found',
      });
    });

    it('a waiter wakes when the holder\'s session lease runs out, before any sweep, and its retry is granted', async () => {
      const s = await store(shape);
      const holder = await openSession(s, 2_000);
      const waiter = await openSession(s, 600_000);
      expect((await s.tryAcquire({ key: 'holder-lapses', session: holder.credential, ttlMillis: 600_000 })).kind).toBe('granted');
      const failed = await s.tryAcquire({ key: 'holder-lapses', session: waiter.credential, ttlMillis: 30_000 });
      if (failed.kind !== 'held') throw new Error(`expected held, got ${failed.kind}`);
      const started = performance.now();
      const result = await s.waitForRelease({
        key: 'holder-lapses',
        observedRevision: failed.observedRevision,
        sessionId: waiter.sessionId,
        timeoutMillis: 60_000,
        signal: never,
      });
      const waited = elapsedSince(started);
      console.log(`holder lapses (${shape}): the 2 s session lease ended the wait after ${waited.toFixed(0)} ms`);
      // The lock's own lease runs 600 s, the wait's deadline 60 s (≥ 10× the 2–3 s a 2 s lease takes to go):
      // "released" inside it can only be the holder's session lease.
      expect(result).toEqual({ outcome: 'released' });
      expect(waited).toBeLessThan(60_000);
      expect((await s.tryAcquire({ key: 'holder-lapses', session: waiter.credential, ttlMillis: 30_000 })).kind).toBe('granted');
    });
  });
}

describe('waitForRelease fallback', () => {
  it('per-call: a watch whose start revision was compacted answers "fallback" with the cause', async () => {
    const s = await store('per-call');
    const { observedRevision } = await holdAndFail(s, 'compacted');
    const raw = new Etcd3({ hosts: fixture.etcd.endpoints });
    try {
      for (let i = 0; i < 3; i += 1) await raw.put(`/unrelated/${i}`).value('x');
      const head = (await raw.put('/unrelated/head').value('x').exec()).header.revision;
      await raw.kv.compact({ revision: head, physical: true });
    } finally {
      raw.close();
    }
    const result = await s.waitForRelease({ key: 'compacted', observedRevision, timeoutMillis: 5_000, signal: never });
    expect(result.outcome).toBe('fallback');
    if (result.outcome === 'fallback') expect(result.cause).toMatch(/compact|cancel/i);
  });

  it('shared: waiters fall back promptly when the watch loses etcd, and waits work again once it is back', async () => {
    const own = await startEtcd();
    const s = await openStore(own.endpoints, 'shared');
    try {
      const { observedRevision, release } = await holdAndFail(s, 'lost');
      const waiting = s.waitForRelease({ key: 'lost', observedRevision, timeoutMillis: 20_000, signal: never });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const started = performance.now();
      await own.kill();
      const result = await waiting;
      const fellBackIn = elapsedSince(started);
      console.log(`etcd killed: the shared watch's waiter fell back ${fellBackIn.toFixed(0)} ms after the kill began`);
      expect(result.outcome).toBe('fallback');
      // Promptly, against the 20 s deadline it would otherwise run to.
      expect(fellBackIn).toBeLessThan(10_000);
      expect(s.openWatchCount()).toBe(0);

      await own.restart();
      // The library reconnects the shared watch by itself; until then a wait answers fallback at once.
      const deadline = Date.now() + 30_000;
      let again = await s.waitForRelease({ key: 'lost', observedRevision, timeoutMillis: 100, signal: never });
      while (again.outcome === 'fallback' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        again = await s.waitForRelease({ key: 'lost', observedRevision, timeoutMillis: 100, signal: never });
      }
      expect(again.outcome).toBe('deadline'); // reconnected, and the lock is still held
      await release();
      expect(await s.waitForRelease({ key: 'lost', observedRevision, timeoutMillis: 5_000, signal: never })).toEqual({ outcome: 'released' });
    } finally {
      await s.close();
      await own.stop();
    }
  });
});
