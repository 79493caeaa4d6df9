/**
 * Conformance for multi-holder keys (issue 23: semaphores and shared locks; spi.ts "Multi-holder
 * keys"), run on every backend that sets `multiHolder` by holders.conformance.test.ts:
 * - limit N admits N grants, each with its own rising token; the next attempt is `held`, naming the
 *   lowest-token grant; readLock/listLocks describe the key by it, with every holder by token;
 * - a session's second attempt answers its own grant; another limit is `limit_mismatch`, changing nothing;
 * - ending one grant (release, revoke, its session's end or lapse, its own lapse) frees that permit only;
 * - shared grants coexist and keep exclusive ones out (and the reverse); a recorded exclusive wait
 *   keeps new shared grants out (writer preference), a shared wait does not;
 * - concurrent attempts, through two store instances where there are two, never admit more than the limit
 *   nor mix kinds;
 * - wait-for edges name mutex keys only; the holder feed reports a permit's grant and end.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FencingToken } from '../../../contract/records.js';
import { compareFencingTokens } from '../../../contract/wire-rules.js';
import type { AcquireAttempt, HeldLock, LockStore, TryAcquireResult, WaitEdge } from '../../../lock/store/spi.js';
import { eventually } from '../../support/http.js';
import { openTestSession, type TestSession } from '../../support/store-sessions.js';

export interface HoldersSubject {
  store: LockStore;
  /** A second instance on the same store (absent: one process only, as embedded and memory). */
  peer?: LockStore;
  cleanup(): Promise<void>;
}

const LONG = 120_000;

export function describeMultiHolderKeys(name: string, make: () => Promise<HoldersSubject>): void {
  describe(`multi-holder keys (semaphores, shared locks): ${name}`, () => {
    let subject: HoldersSubject;
    let store: LockStore;
    const key = (label: string) => `holders/${label}/${randomBytes(4).toString('hex')}`;

    beforeAll(async () => {
      subject = await make();
      store = subject.store;
    });
    afterAll(async () => {
      await subject?.cleanup();
    });

    const attempt = (k: string, session: TestSession, holding: Pick<AcquireAttempt, 'mode' | 'limit'> = {}, ttlMillis = LONG, on = store) =>
      on.tryAcquire({ key: k, session: session.credential, ttlMillis, ...holding });
    const granted = (result: TryAcquireResult) => {
      if (result.kind !== 'granted') throw new Error(`expected a grant, got ${JSON.stringify(result)}`);
      return result;
    };
    const tokensOf = (holders: readonly HeldLock[] | undefined) => (holders ?? []).map((h) => h.fencingToken);
    const sessions = (n: number) => Promise.all(Array.from({ length: n }, () => openTestSession(store)));
    const expectRising = (tokens: readonly FencingToken[]) => {
      for (let i = 1; i < tokens.length; i++) expect(compareFencingTokens(tokens[i]!, tokens[i - 1]!)).toBeGreaterThan(0);
    };

    test('the store keeps the multi-holder rules', () => {
      expect(store.multiHolder).toBe(true);
    });

    test('limit 3 admits three grants with rising tokens; the fourth is held, naming the lowest token; reads list every holder', async () => {
      const [a, b, c, d] = await sessions(4);
      const k = key('semaphore');
      const grants = [];
      for (const s of [a!, b!, c!]) grants.push(granted(await attempt(k, s, { limit: 3 })));
      for (const g of grants) expect(g.grant).toMatchObject({ key: k, mode: 'exclusive', limit: 3 });
      expect(grants.map((g) => g.existing)).toEqual([false, false, false]);
      expectRising(grants.map((g) => g.grant.fencingToken));

      const full = await attempt(k, d!, { limit: 3 });
      expect(full).toMatchObject({ kind: 'held', holder: { sessionId: a!.record.sessionId, fencingToken: grants[0]!.grant.fencingToken } });

      const read = await store.readLock(k);
      expect(read).toMatchObject({ sessionId: a!.record.sessionId, fencingToken: grants[0]!.grant.fencingToken, mode: 'exclusive', limit: 3 });
      expect(tokensOf(read?.holders)).toEqual(grants.map((g) => g.grant.fencingToken));
      expect(read!.holders!.map((h) => h.sessionId)).toEqual([a, b, c].map((s) => s!.record.sessionId));

      const page = await store.listLocks({ prefix: k, limit: 10 });
      expect(page.items).toHaveLength(1);
      expect(page.items[0]).toMatchObject({ key: k, fencingToken: grants[0]!.grant.fencingToken, limit: 3 });
      expect(tokensOf(page.items[0]!.holders)).toEqual(grants.map((g) => g.grant.fencingToken));
    });

    test("a session's second attempt answers its own grant; another limit is limit_mismatch and changes nothing", async () => {
      const [a, b, e] = await sessions(3);
      const k = key('mismatch');
      const first = granted(await attempt(k, a!, { limit: 3 }));
      granted(await attempt(k, b!, { limit: 3 }));
      for (const holding of [{ limit: 3 }, { limit: 5 }, {}, { mode: 'shared' as const }]) {
        const again = granted(await attempt(k, a!, holding));
        expect(again.existing).toBe(true);
        expect(again.grant).toEqual(first.grant);
      }
      for (const holding of [{ limit: 2 }, {}, { limit: 1 }, { mode: 'shared' as const }]) {
        expect(await attempt(k, e!, holding)).toMatchObject({ kind: 'limit_mismatch', limit: 3, holder: { fencingToken: first.grant.fencingToken } });
      }
      expect((await store.readLock(k))?.holders).toHaveLength(2);
      // A mutex key answers a semaphore attempt the same way.
      const mutexKey = key('mutex');
      const mutex = granted(await attempt(mutexKey, a!));
      expect(mutex.grant).toMatchObject({ mode: 'exclusive', limit: 1 });
      expect((await store.readLock(mutexKey))?.holders).toBeUndefined();
      expect(await attempt(mutexKey, e!, { limit: 4 })).toMatchObject({ kind: 'limit_mismatch', limit: 1 });
      // Once every grant is gone, the key takes any limit.
      expect(await store.release({ key: mutexKey, session: a!.credential, fencingToken: mutex.grant.fencingToken })).toMatchObject({ kind: 'released' });
      expect(granted(await attempt(mutexKey, e!, { limit: 4 })).grant).toMatchObject({ limit: 4 });
    });

    test('a release frees its own permit only; the next grant draws a higher token', async () => {
      const [a, b, c, d] = await sessions(4);
      const k = key('release');
      const ga = granted(await attempt(k, a!, { limit: 2 }));
      const gb = granted(await attempt(k, b!, { limit: 2 }));
      expect((await attempt(k, c!, { limit: 2 })).kind).toBe('held');
      const released = await store.release({ key: k, session: b!.credential, fencingToken: gb.grant.fencingToken });
      expect(released).toMatchObject({ kind: 'released', lock: { sessionId: b!.record.sessionId, fencingToken: gb.grant.fencingToken } });
      // A stale or foreign token ends nothing.
      expect(await store.release({ key: k, session: b!.credential, fencingToken: gb.grant.fencingToken })).toEqual({ kind: 'lost' });
      expect(await store.release({ key: k, session: c!.credential, fencingToken: ga.grant.fencingToken })).toEqual({ kind: 'lost' });
      const gc = granted(await attempt(k, c!, { limit: 2 }));
      expect(compareFencingTokens(gc.grant.fencingToken, gb.grant.fencingToken)).toBeGreaterThan(0);
      expect(tokensOf((await store.readLock(k))?.holders)).toEqual([ga.grant.fencingToken, gc.grant.fencingToken]);
      expect((await attempt(k, d!, { limit: 2 })).kind).toBe('held');
    });

    test('renew and proclaim act on one permit; a stale token renews nothing', async () => {
      const [a, b] = await sessions(2);
      const k = key('renew');
      const ga = granted(await attempt(k, a!, { limit: 2 }));
      const gb = granted(await attempt(k, b!, { limit: 2 }));
      const renewed = await store.renew({ key: k, session: b!.credential, fencingToken: gb.grant.fencingToken, value: 'b is here' });
      expect(renewed).toMatchObject({ kind: 'renewed', lock: { fencingToken: gb.grant.fencingToken, sessionId: b!.record.sessionId, value: 'b is here', limit: 2 } });
      expect(await store.renew({ key: k, session: a!.credential, fencingToken: gb.grant.fencingToken })).toEqual({ kind: 'lost' });
      const holders = (await store.readLock(k))?.holders ?? [];
      expect(holders.map((h) => [h.fencingToken, h.value])).toEqual([
        [ga.grant.fencingToken, undefined],
        [gb.grant.fencingToken, 'b is here'],
      ]);
    });

    test("closing a holder's session frees its permit only", async () => {
      const [a, b, c] = await sessions(3);
      const k = key('closed');
      const ga = granted(await attempt(k, a!, { limit: 2 }));
      const gb = granted(await attempt(k, b!, { limit: 2 }));
      const closed = await store.closeSession(b!.credential);
      if (closed.kind !== 'closed') throw new Error(`expected closed, got ${JSON.stringify(closed)}`);
      expect(closed.ended.releasedLocks.map((l) => [l.key, l.fencingToken])).toEqual([[k, gb.grant.fencingToken]]);
      const gc = granted(await attempt(k, c!, { limit: 2 }));
      expect(tokensOf((await store.readLock(k))?.holders)).toEqual([ga.grant.fencingToken, gc.grant.fencingToken]);
    });

    test("a holder's lapsed session, or its lapsed grant, frees that permit only", async () => {
      const [a, c, d] = await sessions(3);
      const lapsing = await openTestSession(store, { ttlMillis: 1000 });
      const k = key('lapsed');
      const ga = granted(await attempt(k, a!, { limit: 2 }));
      granted(await attempt(k, lapsing, { limit: 2 }));
      // No heartbeat: the session lapses on the store's clock, and its permit with it.
      const gc = await eventually(async () => {
        const result = await attempt(k, c!, { limit: 2 });
        return result.kind === 'granted' ? result : null;
      }, 30_000, 50);
      expect(tokensOf((await store.readLock(k))?.holders)).toEqual([ga.grant.fencingToken, gc!.grant.fencingToken]);

      const short = key('short');
      const gs = granted(await attempt(short, a!, { limit: 2 }, 1000));
      const gl = granted(await attempt(short, c!, { limit: 2 }));
      const gd = await eventually(async () => {
        const result = await attempt(short, d!, { limit: 2 });
        return result.kind === 'granted' ? result : null;
      }, 30_000, 50);
      expect(compareFencingTokens(gd!.grant.fencingToken, gs.grant.fencingToken)).toBeGreaterThan(0);
      expect(tokensOf((await store.readLock(short))?.holders)).toEqual([gl.grant.fencingToken, gd!.grant.fencingToken]);
      const swept = await store.expireLocks(1000);
      expect(swept.filter((l) => l.key === short && l.fencingToken !== gs.grant.fencingToken)).toEqual([]);
    });

    test('forceRevoke ends the permit its token names, else the lowest-token one', async () => {
      const [a, b, c] = await sessions(3);
      const k = key('revoke');
      const grants = [];
      for (const s of [a!, b!, c!]) grants.push(granted(await attempt(k, s, { limit: 3 })));
      const audit = { actor: 'conformance', requestId: randomUUID(), reason: 'leaked permit' };
      const named = await store.forceRevoke({ key: k, expectedFencingToken: grants[1]!.grant.fencingToken, audit });
      expect(named).toMatchObject({ outcome: 'REVOKED', revoked: { fencingToken: grants[1]!.grant.fencingToken, sessionId: b!.record.sessionId } });
      expect(tokensOf((await store.readLock(k))?.holders)).toEqual([grants[0]!.grant.fencingToken, grants[2]!.grant.fencingToken]);
      const lowest = await store.forceRevoke({ key: k, audit: { ...audit, requestId: randomUUID() } });
      expect(lowest).toMatchObject({ outcome: 'REVOKED', revoked: { fencingToken: grants[0]!.grant.fencingToken } });
      expect(tokensOf((await store.readLock(k))?.holders)).toEqual([grants[2]!.grant.fencingToken]);
      const gone = await store.forceRevoke({ key: k, expectedFencingToken: grants[0]!.grant.fencingToken, audit: { ...audit, requestId: randomUUID() } });
      expect(gone.outcome).not.toBe('REVOKED');
    });

    test('shared grants coexist and keep an exclusive one out; an exclusive grant keeps shared ones out', async () => {
      const [r1, r2, w, r3] = await sessions(4);
      const k = key('shared');
      const g1 = granted(await attempt(k, r1!, { mode: 'shared' }));
      const g2 = granted(await attempt(k, r2!, { mode: 'shared' }));
      expect(g1.grant).toMatchObject({ mode: 'shared', limit: 1 });
      expect(compareFencingTokens(g2.grant.fencingToken, g1.grant.fencingToken)).toBeGreaterThan(0);
      expect(await attempt(k, w!)).toMatchObject({ kind: 'held', holder: { fencingToken: g1.grant.fencingToken } });
      expect(await store.readLock(k)).toMatchObject({ mode: 'shared', limit: 1, fencingToken: g1.grant.fencingToken });
      expect(tokensOf((await store.readLock(k))?.holders)).toEqual([g1.grant.fencingToken, g2.grant.fencingToken]);
      // A reader asking to write gets its shared grant back: no upgrade.
      expect(granted(await attempt(k, r1!)).grant).toEqual(g1.grant);

      await store.release({ key: k, session: r1!.credential, fencingToken: g1.grant.fencingToken });
      expect((await attempt(k, w!)).kind).toBe('held');
      await store.release({ key: k, session: r2!.credential, fencingToken: g2.grant.fencingToken });
      const gw = granted(await attempt(k, w!));
      expect(gw.grant).toMatchObject({ mode: 'exclusive', limit: 1 });
      expect(compareFencingTokens(gw.grant.fencingToken, g2.grant.fencingToken)).toBeGreaterThan(0);
      expect(await attempt(k, r3!, { mode: 'shared' })).toMatchObject({ kind: 'held', holder: { fencingToken: gw.grant.fencingToken } });
      expect((await store.readLock(k))?.holders).toBeUndefined();
    });

    test('a recorded exclusive wait keeps new shared grants out (writer preference); a shared wait does not', async () => {
      const fleet = store.fleet;
      if (!fleet) {
        expect(name).toBe('in-memory'); // the only store without recorded waits: core's own waits stand in
        return;
      }
      const instanceId = `i_${randomUUID()}`;
      await fleet.heartbeatInstance({ instanceId, ttlMillis: LONG });
      const [r1, w, r2, r3, r4] = await sessions(5);
      const k = key('writer-first');
      granted(await attempt(k, r1!, { mode: 'shared' }));
      const sharedWait = `w_${randomUUID()}`;
      await fleet.beginWait({ waitId: sharedWait, sessionId: r4!.record.sessionId, key: k, instanceId, mode: 'shared' });
      granted(await attempt(k, r2!, { mode: 'shared' }));
      const writerWait = `w_${randomUUID()}`;
      await fleet.beginWait({ waitId: writerWait, sessionId: w!.record.sessionId, key: k, instanceId });
      expect(await attempt(k, r3!, { mode: 'shared' })).toMatchObject({ kind: 'held' });
      // Once the writer's wait ends, readers are admitted again.
      await fleet.endWait(writerWait);
      granted(await attempt(k, r3!, { mode: 'shared' }));
      await fleet.endWait(sharedWait);
      await fleet.leaveFleet(instanceId);
    });

    test('a wait on a key that admits several holders has an edge to each holder, marked, and never decides a deadlock', async () => {
      const fleet = store.fleet;
      if (!fleet) {
        expect(name).toBe('in-memory');
        return;
      }
      const instanceId = `i_${randomUUID()}`;
      await fleet.heartbeatInstance({ instanceId, ttlMillis: LONG });
      const [a, b, c, r1, r2] = await Promise.all(['a', 'b', 'c', 'r1', 'r2'].map((owner) => openTestSession(store, { owner: `edges-${owner}` })));
      const semaphoreKey = key('edges-semaphore');
      const sharedKey = key('edges-shared');
      const mutexKey = key('edges-mutex');
      granted(await attempt(semaphoreKey, a!, { limit: 2 }));
      granted(await attempt(semaphoreKey, c!, { limit: 2 }));
      granted(await attempt(sharedKey, r1!, { mode: 'shared' }));
      granted(await attempt(sharedKey, r2!, { mode: 'shared' }));
      granted(await attempt(mutexKey, b!));
      // A would-be cycle through the semaphore: a waits for b's mutex, b for a permit a (or c) holds.
      await fleet.beginWait({ waitId: `w_${randomUUID()}`, sessionId: a!.record.sessionId, key: mutexKey, instanceId, ttlMillis: LONG, deadlineMillis: LONG });
      await fleet.beginWait({ waitId: `w_${randomUUID()}`, sessionId: b!.record.sessionId, key: semaphoreKey, instanceId });
      await fleet.beginWait({ waitId: `w_${randomUUID()}`, sessionId: c!.record.sessionId, key: sharedKey, instanceId });
      const ours = new Set([semaphoreKey, sharedKey, mutexKey]);
      const edges = (await fleet.waitForEdges(500)).filter((e) => ours.has(e.key));
      const described = (e: WaitEdge) => [e.key, e.sessionId, e.holderSessionId, e.holderKind ?? 'mutex', e.holderOwner];
      expect(edges.map(described).sort()).toEqual(
        [
          [mutexKey, a!.record.sessionId, b!.record.sessionId, 'mutex', b!.record.owner],
          [semaphoreKey, b!.record.sessionId, a!.record.sessionId, 'semaphore', a!.record.owner],
          [semaphoreKey, b!.record.sessionId, c!.record.sessionId, 'semaphore', c!.record.owner],
          [sharedKey, c!.record.sessionId, r1!.record.sessionId, 'shared', r1!.record.owner],
          [sharedKey, c!.record.sessionId, r2!.record.sessionId, 'shared', r2!.record.owner],
        ].sort(),
      );
      // The owners of the waiting sessions too.
      for (const edge of edges) expect(edge.owner).toBe([a, b, c].find((s) => s!.record.sessionId === edge.sessionId)!.record.owner);
      // The deadlock check sees the mutex edge only: no victim, though the operator's view closes a loop.
      const decided = await eventually(async () => {
        let seen: readonly WaitEdge[] | undefined;
        const verdicts = await fleet.resolveDeadlocks(500, (offered) => {
          seen = offered;
          return [];
        });
        return verdicts === null ? null : { verdicts, seen: seen! };
      }, 30_000, 100);
      expect(decided.verdicts).toEqual([]);
      expect(decided.seen.filter((e) => ours.has(e.key)).map((e) => [e.key, e.holderSessionId, e.holderKind])).toEqual([
        [mutexKey, b!.record.sessionId, undefined],
      ]);
      await fleet.leaveFleet(instanceId);
    });

    test('concurrent attempts never admit more than the limit, nor mix kinds (through both instances where there are two)', async () => {
      const stores = subject.peer ? [store, subject.peer] : [store];
      const contenders = await sessions(12);
      for (let round = 0; round < 3; round++) {
        const k = key(`race-${round}`);
        const results = await Promise.all(contenders.map((s, i) => attempt(k, s, { limit: 3 }, LONG, stores[i % stores.length])));
        const grants = results.filter((r): r is Extract<TryAcquireResult, { kind: 'granted' }> => r.kind === 'granted');
        expect(grants).toHaveLength(3);
        expect(new Set(grants.map((g) => g.grant.fencingToken)).size).toBe(3);
        expect(results.filter((r) => r.kind === 'held')).toHaveLength(contenders.length - 3);
        expect(tokensOf((await store.readLock(k))?.holders)).toEqual(grants.map((g) => g.grant.fencingToken).sort(compareFencingTokens));

        const mixed = key(`mixed-${round}`);
        const kinds = await Promise.all(
          contenders.map((s, i) => attempt(mixed, s, i % 3 === 0 ? {} : { mode: 'shared' }, LONG, stores[i % stores.length])),
        );
        const winners = kinds.filter((r): r is Extract<TryAcquireResult, { kind: 'granted' }> => r.kind === 'granted');
        const exclusive = winners.filter((g) => g.grant.mode === 'exclusive');
        expect(exclusive.length === 0 || winners.length === 1).toBe(true);
        expect(winners.length).toBeGreaterThan(0);
        const read = await store.readLock(mixed);
        expect((read?.holders ?? (read ? [read] : [])).length).toBe(winners.length);
      }
    });

    test('the holder feed reports a permit granted and a permit ended', async () => {
      const watching = subject.peer ?? store;
      const feed = watching.holderWatch;
      if (!feed) {
        expect(name).toBe('in-memory');
        return;
      }
      const instanceId = `i_${randomUUID()}`;
      await watching.fleet?.heartbeatInstance({ instanceId, ttlMillis: LONG });
      const [a, b] = await sessions(2);
      const k = key('feed');
      granted(await attempt(k, a!, { limit: 2 }));
      const onGrant = await feed.watch({ key: k, instanceId });
      const gb = granted(await attempt(k, b!, { limit: 2 }));
      expect(await onGrant.changed).toBe('changed');
      onGrant.stop();
      const onRelease = await feed.watch({ key: k, instanceId });
      await store.release({ key: k, session: b!.credential, fencingToken: gb.grant.fencingToken });
      expect(await onRelease.changed).toBe('changed');
      onRelease.stop();
      await watching.fleet?.leaveFleet(instanceId);
    });
  });
}
