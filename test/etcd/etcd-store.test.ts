/**
 * The etcd store against a real etcd (single member, started here): the SPI
 * rules, the lease backstop, two instances racing, audit in etcd, and errors.
 * Waiting has its own file (etcd-wait.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { startEtcd } from '../support/etcd.js';
import { Etcd3 } from 'etcd3';
import { verifyAuditChain } from '../../lock/audit/chain.js';
import { NotLeaderError, ValidationFailedError } from '../../lock/errors.js';
import { compareTokens } from '../../contract/records.js';
import { etcdStores, namespaceOf, openSession, openStore } from './helpers.js';

const fixture = etcdStores();
const store = fixture.store;

const audit = (reason: string) => ({ at: Date.now(), actor: 'ops-alice', requestId: `req-${reason}`, reason });

describe('etcd store: locks', () => {
  it('grants a free key, reports the live holder with the observed revision, and hands the same session its existing grant', async () => {
    const s = await store();
    const now = Date.now();
    const a = await openSession(s, now);
    const b = await openSession(s, now);

    const first = await s.tryAcquire({ key: 'payout/42', sessionId: a.sessionId, ttlMillis: 30_000, now });
    expect(first.kind).toBe('granted');
    if (first.kind !== 'granted') return;
    expect(first.existing).toBe(false);
    expect(first.grant).toMatchObject({ key: 'payout/42', sessionId: a.sessionId, ttlMillis: 30_000, grantedAt: now, expiresAt: now + 30_000 });

    const contended = await s.tryAcquire({ key: 'payout/42', sessionId: b.sessionId, ttlMillis: 30_000, now });
    expect(contended.kind).toBe('held');
    if (contended.kind !== 'held') return;
    expect(contended.holder.fencingToken).toBe(first.grant.fencingToken);
    expect(contended.holder.owner).toBe('test');
    expect(compareTokens(contended.observedRevision ?? '0', first.grant.fencingToken)).toBeGreaterThanOrEqual(0);

    const again = await s.tryAcquire({ key: 'payout/42', sessionId: a.sessionId, ttlMillis: 5_000, now: now + 10 });
    expect(again).toMatchObject({ kind: 'granted', existing: true });
    if (again.kind === 'granted') expect(again.grant).toEqual(first.grant); // same token, no TTL change
  });

  it('fencing tokens strictly increase across keys and across re-grants of one key', async () => {
    const s = await store();
    const session = await openSession(s);
    const tokens: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      const key = i % 2 === 0 ? 'hot' : `cold-${i}`;
      const result = await s.tryAcquire({ key, sessionId: session.sessionId, ttlMillis: 30_000, now: Date.now() });
      if (result.kind !== 'granted') throw new Error(`expected a grant, got ${result.kind}`);
      tokens.push(result.grant.fencingToken);
      expect(await s.release({ key, fencingToken: result.grant.fencingToken, now: Date.now() })).not.toBeNull();
    }
    for (let i = 1; i < tokens.length; i += 1) expect(compareTokens(tokens[i]!, tokens[i - 1]!)).toBe(1);
  });

  it('release is compare-and-delete on (key, token): a stale token does nothing and a second release is null', async () => {
    const s = await store();
    const session = await openSession(s);
    const first = await s.tryAcquire({ key: 'k', sessionId: session.sessionId, ttlMillis: 30_000, now: Date.now() });
    if (first.kind !== 'granted') throw new Error('no grant');
    expect(await s.release({ key: 'k', fencingToken: first.grant.fencingToken, now: Date.now() })).toMatchObject({ key: 'k' });
    const second = await s.tryAcquire({ key: 'k', sessionId: session.sessionId, ttlMillis: 30_000, now: Date.now() });
    if (second.kind !== 'granted') throw new Error('no grant');
    expect(await s.release({ key: 'k', fencingToken: first.grant.fencingToken, now: Date.now() })).toBeNull();
    expect((await s.readLock('k', Date.now()))?.fencingToken).toBe(second.grant.fencingToken);
    expect(await s.release({ key: 'k', fencingToken: second.grant.fencingToken, now: Date.now() })).not.toBeNull();
    expect(await s.release({ key: 'k', fencingToken: second.grant.fencingToken, now: Date.now() })).toBeNull();
    expect(await s.readLock('k', Date.now())).toBeNull();
  });

  it('renew keeps the token and extends expiry; a wrong token or another session gets null', async () => {
    const s = await store();
    const now = Date.now();
    const a = await openSession(s, now);
    const b = await openSession(s, now);
    const grant = await s.tryAcquire({ key: 'r', sessionId: a.sessionId, ttlMillis: 2_000, now });
    if (grant.kind !== 'granted') throw new Error('no grant');
    const renewed = await s.renew({ key: 'r', sessionId: a.sessionId, fencingToken: grant.grant.fencingToken, ttlMillis: 9_000, now: now + 1_000 });
    expect(renewed).toMatchObject({ fencingToken: grant.grant.fencingToken, expiresAt: now + 10_000, ttlMillis: 9_000, grantedAt: now });
    expect(await s.renew({ key: 'r', sessionId: b.sessionId, fencingToken: grant.grant.fencingToken, ttlMillis: 9_000, now })).toBeNull();
    expect(await s.renew({ key: 'r', sessionId: a.sessionId, fencingToken: '1', ttlMillis: 9_000, now })).toBeNull();
    // The renewal counts: at the old expiry the lock is still held.
    const later = await s.tryAcquire({ key: 'r', sessionId: b.sessionId, ttlMillis: 1_000, now: now + 5_000 });
    expect(later.kind).toBe('held');
  });

  it('a lock whose own TTL passed is free before any sweep, gets a new token, and expireLocks removes stale ones', async () => {
    const s = await store();
    const now = Date.now();
    const a = await openSession(s, now, 60_000);
    const b = await openSession(s, now, 60_000);
    const old = await s.tryAcquire({ key: 'ttl', sessionId: a.sessionId, ttlMillis: 1_000, now });
    await s.tryAcquire({ key: 'ttl-swept', sessionId: a.sessionId, ttlMillis: 1_000, now });
    if (old.kind !== 'granted') throw new Error('no grant');
    expect(await s.readLock('ttl', now + 1_000)).toBeNull();
    const taken = await s.tryAcquire({ key: 'ttl', sessionId: b.sessionId, ttlMillis: 1_000, now: now + 1_000 });
    expect(taken.kind).toBe('granted');
    if (taken.kind === 'granted') expect(compareTokens(taken.grant.fencingToken, old.grant.fencingToken)).toBe(1);

    const swept = await s.expireLocks(now + 1_500, 10);
    expect(swept.map((lock) => lock.key)).toEqual(['ttl-swept']);
    expect(await s.expireLocks(now + 1_500, 10)).toEqual([]);
  });

  it('a session whose TTL passed is not found, its locks are free, and expireSessions ends it with cause ttl', async () => {
    const s = await store();
    const now = Date.now();
    const a = await openSession(s, now, 2_000);
    const b = await openSession(s, now, 60_000);
    await s.tryAcquire({ key: 'sx', sessionId: a.sessionId, ttlMillis: 30_000, now });
    const after = now + 2_000;
    expect(await s.getSession(a.sessionId, after)).toBeNull();
    expect(await s.heartbeat(a.sessionId, after)).toBeNull();
    expect(await s.tryAcquire({ key: 'other', sessionId: a.sessionId, ttlMillis: 1_000, now: after })).toEqual({ kind: 'session_not_found' });
    expect(await s.readLock('sx', after)).toBeNull();

    const ended = await s.expireSessions(after, 10);
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({ cause: 'ttl', session: { sessionId: a.sessionId } });
    expect(ended[0]!.releasedLocks.map((lock) => lock.key)).toEqual(['sx']);
    expect((await s.tryAcquire({ key: 'sx', sessionId: b.sessionId, ttlMillis: 1_000, now: after })).kind).toBe('granted');
  });

  it('heartbeat extends the session; closeSession releases every lock of the session', async () => {
    const s = await store();
    const now = Date.now();
    const a = await openSession(s, now, 5_000);
    const beat = await s.heartbeat(a.sessionId, now + 4_000);
    expect(beat).toMatchObject({ sessionId: a.sessionId, lastHeartbeatAt: now + 4_000, expiresAt: now + 9_000 });
    expect(await s.getSession(a.sessionId, now + 8_000)).not.toBeNull();

    for (const key of ['c1', 'c2', 'c3']) await s.tryAcquire({ key, sessionId: a.sessionId, ttlMillis: 30_000, now });
    const sessions = await s.listSessions({ limit: 10 }, now);
    expect(sessions.items).toEqual([expect.objectContaining({ sessionId: a.sessionId, lockCount: 3 })]);

    const closed = await s.closeSession(a.sessionId, now + 100);
    expect(closed?.cause).toBe('closed');
    expect(closed?.releasedLocks.map((lock) => lock.key).sort()).toEqual(['c1', 'c2', 'c3']);
    expect(await s.listLocks({ limit: 10 }, now + 100)).toEqual({ items: [], nextCursor: null });
    expect(await s.closeSession(a.sessionId, now + 100)).toBeNull();
  });

  it('lists locks by prefix with cursors, and sums held locks and active sessions', async () => {
    const s = await store();
    const now = Date.now();
    const a = await openSession(s, now);
    for (const key of ['jobs/a', 'jobs/b', 'jobs/c', 'other/x']) await s.tryAcquire({ key, sessionId: a.sessionId, ttlMillis: 30_000, now });
    const first = await s.listLocks({ prefix: 'jobs/', limit: 2 }, now);
    expect(first.items.map((lock) => lock.key)).toEqual(['jobs/a', 'jobs/b']);
    expect(first.nextCursor).not.toBeNull();
    await expect(s.listLocks({ limit: 2, cursor: '%%%' }, now)).rejects.toBeInstanceOf(ValidationFailedError);
    const second = await s.listLocks({ prefix: 'jobs/', limit: 2, cursor: first.nextCursor! }, now);
    expect(second).toMatchObject({ items: [expect.objectContaining({ key: 'jobs/c' })], nextCursor: null });
    expect(await s.summary(now)).toEqual({ heldLocks: 4, activeSessions: 1 });
  });
});

describe('etcd store: audit and operator actions', () => {
  it('force-revoke and kill append hash-chained audit entries in the same txn as the change', async () => {
    const s = await store();
    const now = Date.now();
    const a = await openSession(s, now);
    const grant = await s.tryAcquire({ key: 'stuck', sessionId: a.sessionId, ttlMillis: 30_000, now });
    if (grant.kind !== 'granted') throw new Error('no grant');

    const mismatch = await s.forceRevoke({ key: 'stuck', expectedFencingToken: '1', now, audit: audit('mismatch') });
    expect(mismatch).toMatchObject({ outcome: 'TOKEN_MISMATCH', holder: { fencingToken: grant.grant.fencingToken } });
    expect((await s.readLock('stuck', now))?.fencingToken).toBe(grant.grant.fencingToken);

    const revoked = await s.forceRevoke({ key: 'stuck', expectedFencingToken: grant.grant.fencingToken, now, audit: audit('revoke') });
    expect(revoked).toMatchObject({ outcome: 'REVOKED', revoked: { fencingToken: grant.grant.fencingToken } });
    expect(await s.readLock('stuck', now)).toBeNull();

    const notHeld = await s.forceRevoke({ key: 'stuck', now, audit: audit('again') });
    expect(notHeld.outcome).toBe('NOT_HELD');

    const killed = await s.killSession(a.sessionId, now, audit('kill'));
    expect(killed.ended?.cause).toBe('killed');
    expect(killed.audit).toMatchObject({ action: 'session.kill', target: a.sessionId, outcome: 'KILLED', actor: 'ops-alice' });
    expect(await s.getSession(a.sessionId, now)).toBeNull();
    const killedAgain = await s.killSession(a.sessionId, now, audit('kill-again'));
    expect(killedAgain).toMatchObject({ ended: null, audit: { outcome: 'NOT_FOUND' } });

    const chain = [];
    for await (const entry of s.readAuditChain()) chain.push(entry);
    expect(chain.map((entry) => entry.outcome)).toEqual(['TOKEN_MISMATCH', 'REVOKED', 'NOT_HELD', 'KILLED', 'NOT_FOUND']);
    expect(await verifyAuditChain(chain)).toMatchObject({ ok: true, entries: 5 });

    const newest = await s.listAudit({ limit: 2 });
    expect(newest.items.map((entry) => entry.outcome)).toEqual(['NOT_FOUND', 'KILLED']);
    const older = await s.listAudit({ limit: 2, cursor: newest.nextCursor! });
    expect(older.items.map((entry) => entry.outcome)).toEqual(['NOT_HELD', 'REVOKED']);
    const revokesOnly = await s.listAudit({ limit: 10, action: 'lock.revoke' });
    expect(revokesOnly.items).toHaveLength(3);
    expect(revokesOnly.nextCursor).toBeNull();
  });

  it('concurrent revokes from two server instances keep one unbroken chain', async () => {
    const one = await store();
    const namespace = namespaceOf(one);
    const two = await store('shared', namespace);
    await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? one : two).forceRevoke({ key: `none-${i}`, now: Date.now(), audit: audit(`r${i}`) })),
    );
    const chain = [];
    for await (const entry of one.readAuditChain()) chain.push(entry);
    expect(chain.map((entry) => entry.id)).toEqual(Array.from({ length: 12 }, (_, i) => String(i + 1)));
    expect((await verifyAuditChain(chain)).ok).toBe(true);
  });
});

describe('etcd store: two instances and the lease backstop', () => {
  it('two server instances racing on one key never both grant', async () => {
    const one = await store();
    const namespace = namespaceOf(one);
    const two = await store('shared', namespace);
    const a = await openSession(one);
    const b = await openSession(two);
    for (let round = 0; round < 25; round += 1) {
      const now = Date.now();
      const results = await Promise.all([
        one.tryAcquire({ key: 'race', sessionId: a.sessionId, ttlMillis: 30_000, now }),
        two.tryAcquire({ key: 'race', sessionId: b.sessionId, ttlMillis: 30_000, now }),
      ]);
      const grants = results.filter((result) => result.kind === 'granted');
      expect(grants).toHaveLength(1);
      const grant = grants[0];
      if (grant?.kind === 'granted') await one.release({ key: 'race', fencingToken: grant.grant.fencingToken, now });
    }
  });

  it('when no server is left, etcd itself deletes the session and its locks at lease expiry', async () => {
    const namespace = `backstop-${Date.now()}`;
    const s = await openStore(fixture.etcd.endpoints, 'shared', namespace);
    const session = await openSession(s, Date.now(), 1_000);
    await s.tryAcquire({ key: 'orphan', sessionId: session.sessionId, ttlMillis: 600_000, now: Date.now() });
    await s.close(); // the granting server dies: nobody heartbeats, nobody sweeps

    const raw = new Etcd3({ hosts: fixture.etcd.endpoints });
    try {
      const lockKey = `/holdfast/${namespace}/l/orphan`;
      expect(await raw.get(lockKey).string()).not.toBeNull();
      const deadline = Date.now() + 15_000;
      let remaining = await raw.getAll().prefix(`/holdfast/${namespace}/`).keys();
      while (remaining.length > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        remaining = await raw.getAll().prefix(`/holdfast/${namespace}/`).keys();
      }
      expect(remaining).toEqual([]);
    } finally {
      raw.close();
    }
  });
});

describe('etcd store: unavailable backend', () => {
  it('answers NotLeaderError (503 NOT_LEADER) when etcd cannot be reached', async () => {
    const own = await startEtcd();
    const s = await openStore(own.endpoints);
    try {
      const session = await openSession(s);
      await own.kill();
      await expect(s.ping()).rejects.toBeInstanceOf(NotLeaderError);
      await expect(s.tryAcquire({ key: 'k', sessionId: session.sessionId, ttlMillis: 1_000, now: Date.now() })).rejects.toBeInstanceOf(NotLeaderError);
    } finally {
      await s.close();
      await own.stop();
    }
  });
});
