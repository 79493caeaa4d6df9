/**
 * The store conformance suite: one set of store-level tests pinning every rule in
 * the header of lock/store/spi.ts, run against each backend by calling
 * `describeStoreConformance(name, makeStore)` from that backend's own test file
 * (embedded, postgres here; etcd from etcd.conformance.test.ts).
 *
 * Time is the store's: nothing here passes a "now". Lapses use short TTLs (1 s)
 * and wait by polling the store until its own clock says so.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { verifyAuditChain } from '../../../lock/audit/chain.js';
import type { LockStore, SessionRecord } from '../../../lock/store/spi.js';
import { eventually } from '../../support/http.js';
import { openTestSession } from '../../support/store-sessions.js';
import { policyRules } from './policy-rules.js';

export interface ConformanceStore {
  /** A fresh, initialised store (its own database / key prefix). */
  store: LockStore;
  /** Stops it and whatever was started for it. */
  cleanup(): Promise<void>;
  /**
   * How far two reads of one untouched session's expiry may differ: 0 where the store keeps the
   * instant (SQL, memory); etcd derives it from the session's lease, whose life it reports in
   * whole seconds (its own test shows a refused heartbeat renews nothing).
   */
  sessionExpiryGranularityMillis?: number;
}

const SHORT = 1000;
const LONG = 120_000;

export function describeStoreConformance(name: string, makeStore: () => Promise<ConformanceStore>): void {
  describe(`store conformance: ${name}`, () => {
    let subject: ConformanceStore;
    let store: LockStore;
    const key = (label: string) => `conf/${label}/${randomBytes(4).toString('hex')}`;
    const audit = (reason: string) => ({ actor: 'conformance', requestId: `req-${reason}`, reason });

    beforeAll(async () => {
      subject = await makeStore();
      store = subject.store;
    });
    afterAll(async () => {
      await subject?.cleanup();
    });

    const grant = async (k: string, session: Awaited<ReturnType<typeof openTestSession>>, ttlMillis = LONG) => {
      const result = await store.tryAcquire({ key: k, session: session.credential, ttlMillis });
      if (result.kind !== 'granted') throw new Error(`expected a grant of ${k}, got ${result.kind}`);
      return result;
    };
    /**
     * Polls the store until its own clock has passed `predicate`: a SHORT TTL lapses 1 s after it began (2–3 s on
     * etcd, whose leases last ≥ 2 s); the deadline is ≥ 10× that and only bounds a failure.
     */
    const untilStore = (predicate: () => Promise<boolean>) => eventually(predicate, 30_000, 50);
    /** The session as it was: same record, and its expiry not moved beyond the store's granularity. */
    const expectSameSession = (after: SessionRecord | null, before: SessionRecord | null) => {
      const granularity = subject.sessionExpiryGranularityMillis ?? 0;
      if (granularity === 0 || !after || !before) return expect(after).toEqual(before);
      const untimed = ({ lastHeartbeatAt: _l, expiresAt: _e, ...rest }: SessionRecord) => rest;
      expect(untimed(after)).toEqual(untimed(before));
      expect(Math.abs(after.expiresAt - before.expiresAt)).toBeLessThan(granularity);
    };

    test('live lock: held while its TTL runs and its session lives; the holder re-acquiring gets the same grant', async () => {
      const a = await openTestSession(store, { ttlMillis: LONG });
      const b = await openTestSession(store, { ttlMillis: LONG });
      const k = key('live');
      const first = await grant(k, a);
      expect(first.existing).toBe(false);
      expect(first.grant).toMatchObject({ key: k, sessionId: a.record.sessionId, ttlMillis: LONG });
      expect(first.grant.expiresAt - first.grant.grantedAt).toBe(LONG);
      const again = await grant(k, a, 5000);
      expect(again).toMatchObject({ existing: true, grant: first.grant });
      const contended = await store.tryAcquire({ key: k, session: b.credential, ttlMillis: LONG });
      expect(contended).toMatchObject({ kind: 'held', holder: { sessionId: a.record.sessionId, fencingToken: first.grant.fencingToken } });
      expect(await store.readLock(k)).toMatchObject({ fencingToken: first.grant.fencingToken, owner: a.record.owner });
    });

    test("live lock: a lock whose own TTL lapsed is free before any sweep; renew/release of it are lost", async () => {
      const a = await openTestSession(store, { ttlMillis: LONG });
      const b = await openTestSession(store, { ttlMillis: LONG });
      const k = key('lapsed-lock');
      const old = await grant(k, a, SHORT);
      await untilStore(async () => (await store.readLock(k)) === null);
      expect(await store.renew({ key: k, session: a.credential, fencingToken: old.grant.fencingToken })).toEqual({ kind: 'lost' });
      expect(await store.release({ key: k, session: a.credential, fencingToken: old.grant.fencingToken })).toEqual({ kind: 'lost' });
      const taken = await grant(k, b);
      expect(taken.existing).toBe(false);
      expect(BigInt(taken.grant.fencingToken)).toBeGreaterThan(BigInt(old.grant.fencingToken));
      expect(await store.renew({ key: k, session: a.credential, fencingToken: old.grant.fencingToken })).toEqual({ kind: 'lost' });
    });

    test('live lock: a lapsed session frees its locks at once; its own calls are session_not_found; the sweep ends it (cause ttl)', async () => {
      const a = await openTestSession(store, { ttlMillis: SHORT });
      const b = await openTestSession(store, { ttlMillis: LONG });
      const k = key('lapsed-session');
      const old = await grant(k, a, LONG);
      await untilStore(async () => (await store.getSession(a.record.sessionId)) === null);
      expect(await store.readLock(k)).toBeNull();
      const notFound = { kind: 'session_not_found' };
      expect(await store.heartbeat(a.credential)).toEqual(notFound);
      expect(await store.renew({ key: k, session: a.credential, fencingToken: old.grant.fencingToken })).toEqual(notFound);
      expect(await store.release({ key: k, session: a.credential, fencingToken: old.grant.fencingToken })).toEqual(notFound);
      expect(await store.tryAcquire({ key: key('other'), session: a.credential, ttlMillis: LONG })).toEqual(notFound);
      expect(await store.closeSession(a.credential)).toEqual(notFound);
      const taken = await grant(k, b);
      expect(BigInt(taken.grant.fencingToken)).toBeGreaterThan(BigInt(old.grant.fencingToken));
      // A sweep (possibly after other tests' lapses) ends a with cause ttl; its lock row went to b.
      let endedA: Awaited<ReturnType<LockStore['expireSessions']>>[number] | undefined;
      await untilStore(async () => {
        endedA ??= (await store.expireSessions(100)).find((e) => e.session.sessionId === a.record.sessionId);
        return endedA !== undefined;
      });
      expect(endedA!.cause).toBe('ttl');
      expect(endedA!.releasedLocks.map((l) => l.key)).not.toContain(k);
    });

    test('session refusal: a live session with a wrong token is unauthenticated and nothing changes; unknown is session_not_found', async () => {
      const a = await openTestSession(store, { ttlMillis: LONG });
      const k = key('refusal');
      const held = await grant(k, a, 60_000);
      const before = await store.getSession(a.record.sessionId);
      const lockBefore = await store.readLock(k);
      const no = { kind: 'unauthenticated' };
      expect(await store.heartbeat(a.impostor)).toEqual(no);
      expect(await store.renew({ key: k, session: a.impostor, fencingToken: held.grant.fencingToken, ttlMillis: 600_000 })).toEqual(no);
      expect(await store.release({ key: k, session: a.impostor, fencingToken: held.grant.fencingToken })).toEqual(no);
      expect(await store.tryAcquire({ key: key('refusal-new'), session: a.impostor, ttlMillis: LONG })).toEqual(no);
      expect(await store.closeSession(a.impostor)).toEqual(no);
      expectSameSession(await store.getSession(a.record.sessionId), before);
      expect(await store.readLock(k)).toEqual(lockBefore);
      const stranger = { sessionId: `s_${randomBytes(8).toString('hex')}`, tokenHash: a.credential.tokenHash };
      expect(await store.heartbeat(stranger)).toEqual({ kind: 'session_not_found' });
      expect(await store.release({ key: k, session: stranger, fencingToken: held.grant.fencingToken })).toEqual({ kind: 'session_not_found' });
      // Another live session's own token does not reach a's grant.
      const b = await openTestSession(store, { ttlMillis: LONG });
      expect(await store.release({ key: k, session: b.credential, fencingToken: held.grant.fencingToken })).toEqual({ kind: 'lost' });
      expect(await store.readLock(k)).toEqual(lockBefore);
    });

    test('heartbeat extends by the TTL from the store clock; renew without ttlMillis keeps the grant’s own TTL', async () => {
      const a = await openTestSession(store, { ttlMillis: 30_000 });
      const beat = await store.heartbeat(a.credential);
      if (beat.kind !== 'alive') throw new Error(beat.kind);
      expect(beat.session.expiresAt - beat.session.lastHeartbeatAt).toBe(30_000);
      expect(beat.session.expiresAt).toBeGreaterThanOrEqual(a.record.expiresAt);
      const k = key('renew');
      const held = await grant(k, a, 600_000);
      const kept = await store.renew({ key: k, session: a.credential, fencingToken: held.grant.fencingToken });
      if (kept.kind !== 'renewed') throw new Error(kept.kind);
      expect(kept.lock.ttlMillis).toBe(600_000);
      expect(kept.lock.expiresAt).toBeGreaterThanOrEqual(held.grant.expiresAt);
      const set = await store.renew({ key: k, session: a.credential, fencingToken: held.grant.fencingToken, ttlMillis: 5000 });
      expect(set).toMatchObject({ kind: 'renewed', lock: { ttlMillis: 5000, fencingToken: held.grant.fencingToken } });
      expect(await store.renew({ key: k, session: a.credential, fencingToken: '1' })).toEqual({ kind: 'lost' });
    });

    test('token order: strictly increasing across keys, in answer order, including concurrent grants', async () => {
      const a = await openTestSession(store, { ttlMillis: LONG });
      let last = 0n;
      for (let i = 0; i < 10; i++) {
        const token = BigInt((await grant(key(`order-${i}`), a)).grant.fencingToken);
        expect(token).toBeGreaterThan(last);
        last = token;
      }
      const concurrent = await Promise.all(Array.from({ length: 20 }, (_, i) => grant(key(`order-c-${i}`), a)));
      const tokens = concurrent.map((g) => BigInt(g.grant.fencingToken));
      expect(new Set(tokens).size).toBe(20);
      for (const token of tokens) expect(token).toBeGreaterThan(last);
    });

    test('release is compare-and-delete of the caller’s live grant and reports when it ended', async () => {
      const a = await openTestSession(store, { ttlMillis: LONG });
      const k = key('release');
      const held = await grant(k, a);
      expect(await store.release({ key: k, session: a.credential, fencingToken: '1' })).toEqual({ kind: 'lost' });
      const released = await store.release({ key: k, session: a.credential, fencingToken: held.grant.fencingToken });
      if (released.kind !== 'released') throw new Error(released.kind);
      expect(released.lock).toMatchObject({ key: k, fencingToken: held.grant.fencingToken });
      expect(released.lock.endedAt).toBeGreaterThanOrEqual(held.grant.grantedAt);
      expect(await store.readLock(k)).toBeNull();
      expect(await store.release({ key: k, session: a.credential, fencingToken: held.grant.fencingToken })).toEqual({ kind: 'lost' });
    });

    test('sweeps: expireLocks returns lapsed locks with endedAt; closeSession releases every lock of the session', async () => {
      const a = await openTestSession(store, { ttlMillis: LONG });
      const k = key('expire-lock');
      await grant(k, a, SHORT);
      await untilStore(async () => (await store.readLock(k)) === null);
      let swept: Awaited<ReturnType<LockStore['expireLocks']>>[number] | undefined;
      await untilStore(async () => {
        swept ??= (await store.expireLocks(100)).find((l) => l.key === k);
        return swept !== undefined;
      });
      expect(swept!.endedAt).toBeGreaterThanOrEqual(swept!.expiresAt);
      const keys = [key('close-1'), key('close-2')];
      for (const k2 of keys) await grant(k2, a);
      const closed = await store.closeSession(a.credential);
      if (closed.kind !== 'closed') throw new Error(closed.kind);
      expect(closed.ended.cause).toBe('closed');
      expect(closed.ended.releasedLocks.map((l) => l.key).sort()).toEqual([...keys].sort());
      for (const k2 of keys) expect(await store.readLock(k2)).toBeNull();
      expect(await store.getSession(a.record.sessionId)).toBeNull();
    });

    test('audit: revoke and kill append in the same change; the recorded head matches the chain; verify passes against it', async () => {
      const a = await openTestSession(store, { ttlMillis: LONG });
      const k = key('audit');
      const held = await grant(k, a);
      const headBefore = await store.readAuditHead();
      const mismatch = await store.forceRevoke({ key: k, expectedFencingToken: '1', audit: audit('mismatch') });
      expect(mismatch).toMatchObject({ outcome: 'TOKEN_MISMATCH', holder: { fencingToken: held.grant.fencingToken } });
      const revoked = await store.forceRevoke({ key: k, expectedFencingToken: held.grant.fencingToken, audit: audit('revoke') });
      expect(revoked).toMatchObject({ outcome: 'REVOKED', revoked: { fencingToken: held.grant.fencingToken } });
      expect(await store.readLock(k)).toBeNull();
      expect((await store.forceRevoke({ key: k, audit: audit('again') })).outcome).toBe('NOT_HELD');
      const killed = await store.killSession(a.record.sessionId, audit('kill'));
      expect(killed.ended?.cause).toBe('killed');
      expect((await store.killSession(a.record.sessionId, audit('kill-again'))).ended).toBeNull();
      const head = await store.readAuditHead();
      expect(BigInt(head.lastId) - BigInt(headBefore.lastId)).toBe(5n);
      expect(head.lastHash).toBe((await store.killSession(`s_${randomBytes(6).toString('hex')}`, audit('probe'))).audit.prevHash);
      const verified = await verifyAuditChain(store.readAuditChain(), { head: await store.readAuditHead() });
      expect(verified.ok).toBe(true);
      expect(revoked.audit).toMatchObject({ action: 'lock.revoke', target: k, outcome: 'REVOKED', actor: 'conformance' });
    });

    test('audit: past 9 entries the chain reads in id order and A4 lists newest first by id (numbers, not text)', async () => {
      for (let i = 0; i < 12; i += 1) await store.killSession(`s_${randomBytes(6).toString('hex')}`, audit(`order-${i}`));
      const ids: bigint[] = [];
      for await (const entry of store.readAuditChain()) ids.push(BigInt(entry.id));
      expect(ids.length).toBeGreaterThanOrEqual(12);
      expect(ids.every((id, i) => i === 0 || id > ids[i - 1]!)).toBe(true);
      const listed = (await store.listAudit({ limit: 12 })).items.map((entry) => BigInt(entry.id));
      expect(listed.every((id, i) => i === 0 || id < listed[i - 1]!)).toBe(true);
      expect(listed[0]).toBe(ids.at(-1));
    });

    test('summary counts live locks and sessions by the store clock, with the age of the oldest grant', async () => {
      const a = await openTestSession(store, { ttlMillis: LONG });
      const k = key('summary');
      const held = await grant(k, a);
      const summary = await store.summary();
      expect(summary.heldLocks).toBeGreaterThanOrEqual(1);
      expect(summary.activeSessions).toBeGreaterThanOrEqual(1);
      expect(summary.oldestHeldMillis).toBeGreaterThanOrEqual(0);
      const page = await store.listLocks({ limit: 1000, prefix: 'conf/summary/' });
      expect(page.items.map((l) => l.key)).toContain(k);
      expect(page.items.find((l) => l.key === k)?.fencingToken).toBe(held.grant.fencingToken);
      const sessions = await store.listSessions({ limit: 1000 });
      expect(sessions.items.find((s) => s.sessionId === a.record.sessionId)?.lockCount).toBe(1);
    });

    policyRules(() => ({ store, expectSameSession }));
  });
}
