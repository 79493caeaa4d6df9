/**
 * The etcd store against a real etcd (single member, started here): the SPI
 * rules, liveness decided by etcd's leases, the session capability, the lease
 * backstop, two instances racing, audit in etcd, and errors.
 * Waiting has its own file (etcd-wait.test.ts); clock skew too (etcd-clock-skew.test.ts).
 *
 * Lease TTLs are whole seconds and etcd raises anything below 2 s to 2 s, so
 * the expiry tests use 2 s TTLs and wait for etcd to act.
 */
import { describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { startEtcd } from '../support/etcd.js';
import { createAuditSealer, verifyAuditChain } from '../../lock/audit/chain.js';
import { NotLeaderError, ValidationFailedError } from '../../lock/errors.js';
import { compareTokens, type AuditEntry } from '../../contract/records.js';
import type { EtcdStore } from '../../lock/store/etcd/etcd-store.js';
import type { SessionCredential } from '../../lock/store/spi.js';
import { etcdStores, hashOf, namespaceOf, openSession, openStore, until } from './helpers.js';

const fixture = etcdStores();
const store = fixture.store;

const audit = (reason: string) => ({ actor: 'ops-alice', requestId: `req-${reason}`, reason });

async function grant(s: EtcdStore, key: string, session: SessionCredential, ttlMillis = 30_000) {
  const result = await s.tryAcquire({ key, session, ttlMillis });
  if (result.kind !== 'granted') throw new Error(`expected a grant of ${key}, got ${result.kind}`);
  return result.grant;
}

describe('etcd store: locks', () => {
  it('grants a free key, reports the live holder with the observed revision, and hands the same session its existing grant', async () => {
    const s = await store();
    const a = await openSession(s);
    const b = await openSession(s);

    const first = await s.tryAcquire({ key: 'payout/42', session: a.credential, ttlMillis: 30_000 });
    expect(first.kind).toBe('granted');
    if (first.kind !== 'granted') return;
    expect(first.existing).toBe(false);
    expect(first.grant).toMatchObject({ key: 'payout/42', sessionId: a.sessionId, ttlMillis: 30_000 });
    expect(first.grant.expiresAt - first.grant.grantedAt).toBe(30_000);

    const contended = await s.tryAcquire({ key: 'payout/42', session: b.credential, ttlMillis: 30_000 });
    expect(contended.kind).toBe('held');
    if (contended.kind !== 'held') return;
    expect(contended.holder.fencingToken).toBe(first.grant.fencingToken);
    expect(contended.holder.owner).toBe('test');
    // Seen at or after the grant's revision (the token is that revision × 1000 + slot).
    expect(BigInt(contended.observedRevision ?? '0')).toBeGreaterThanOrEqual(BigInt(first.grant.fencingToken) / 1000n);

    const again = await s.tryAcquire({ key: 'payout/42', session: a.credential, ttlMillis: 5_000 });
    expect(again).toMatchObject({ kind: 'granted', existing: true });
    if (again.kind === 'granted') expect(again.grant).toEqual(first.grant); // same token, no TTL change
  });

  it('fencing tokens strictly increase across keys and across re-grants of one key', async () => {
    const s = await store();
    const session = await openSession(s);
    const tokens: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      const key = i % 2 === 0 ? 'hot' : `cold-${i}`;
      const granted = await grant(s, key, session.credential);
      tokens.push(granted.fencingToken);
      expect((await s.release({ key, session: session.credential, fencingToken: granted.fencingToken })).kind).toBe('released');
    }
    for (let i = 1; i < tokens.length; i += 1) expect(compareTokens(tokens[i]!, tokens[i - 1]!)).toBe(1);
  });

  it('release is compare-and-delete on (key, token) of the calling session: a stale token or another session gets lost', async () => {
    const s = await store();
    const session = await openSession(s);
    const other = await openSession(s);
    const first = await grant(s, 'k', session.credential);
    const released = await s.release({ key: 'k', session: session.credential, fencingToken: first.fencingToken });
    expect(released).toMatchObject({ kind: 'released', lock: { key: 'k', fencingToken: first.fencingToken } });
    if (released.kind === 'released') expect(typeof released.lock.endedAt).toBe('number');
    const second = await grant(s, 'k', session.credential);
    expect(await s.release({ key: 'k', session: session.credential, fencingToken: first.fencingToken })).toEqual({ kind: 'lost' });
    // Another session that knows the key and token (L7 shows both) cannot release it.
    expect(await s.release({ key: 'k', session: other.credential, fencingToken: second.fencingToken })).toEqual({ kind: 'lost' });
    expect((await s.readLock('k'))?.fencingToken).toBe(second.fencingToken);
    expect((await s.release({ key: 'k', session: session.credential, fencingToken: second.fencingToken })).kind).toBe('released');
    expect(await s.release({ key: 'k', session: session.credential, fencingToken: second.fencingToken })).toEqual({ kind: 'lost' });
    expect(await s.readLock('k')).toBeNull();
  });

  it('renew keeps the token and sets the TTL; without ttlMillis it keeps the grant\'s own TTL; a wrong token or another session is lost', async () => {
    const s = await store();
    const a = await openSession(s);
    const b = await openSession(s);
    const granted = await grant(s, 'r', a.credential, 600_000);
    const kept = await s.renew({ key: 'r', session: a.credential, fencingToken: granted.fencingToken });
    expect(kept).toMatchObject({ kind: 'renewed', lock: { fencingToken: granted.fencingToken, ttlMillis: 600_000 } });
    expect((await s.readLock('r'))?.ttlMillis).toBe(600_000); // a renew never shortens a lock by accident
    const renewed = await s.renew({ key: 'r', session: a.credential, fencingToken: granted.fencingToken, ttlMillis: 9_000 });
    expect(renewed).toMatchObject({ kind: 'renewed', lock: { fencingToken: granted.fencingToken, ttlMillis: 9_000, grantedAt: granted.grantedAt } });
    expect(await s.renew({ key: 'r', session: b.credential, fencingToken: granted.fencingToken, ttlMillis: 9_000 })).toEqual({ kind: 'lost' });
    expect(await s.renew({ key: 'r', session: a.credential, fencingToken: '1', ttlMillis: 9_000 })).toEqual({ kind: 'lost' });
    expect((await s.tryAcquire({ key: 'r', session: b.credential, ttlMillis: 1_000 })).kind).toBe('held');
  });

  it('a grant lives on its own lease: renewals keep it past its TTL; once they stop it is free before any sweep, and renew/release answer lost', async () => {
    const s = await store();
    const a = await openSession(s, 60_000);
    const b = await openSession(s, 60_000);
    const requestedAt = Date.now();
    const old = await grant(s, 'ttl', a.credential, 2_000);
    // Renewed (keeping its 2 s TTL) for 4 s: twice its TTL, still held.
    while (Date.now() - requestedAt < 4_000) {
      expect((await s.renew({ key: 'ttl', session: a.credential, fencingToken: old.fencingToken })).kind).toBe('renewed');
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect((await s.tryAcquire({ key: 'ttl', session: b.credential, ttlMillis: 1_000 })).kind).toBe('held');

    await until(async () => (await s.readLock('ttl')) === null, 30_000, 'lease expiry of the grant');
    expect(await s.renew({ key: 'ttl', session: a.credential, fencingToken: old.fencingToken })).toEqual({ kind: 'lost' });
    expect(await s.release({ key: 'ttl', session: a.credential, fencingToken: old.fencingToken })).toEqual({ kind: 'lost' });
    const taken = await grant(s, 'ttl', b.credential, 30_000);
    expect(compareTokens(taken.fencingToken, old.fencingToken)).toBe(1);

    // The sweeper reports the lapsed grant exactly once; the live one is not touched.
    const swept = await s.expireLocks(10);
    expect(swept.map((lock) => [lock.key, lock.fencingToken, lock.sessionId])).toEqual([['ttl', old.fencingToken, a.sessionId]]);
    expect(await s.expireLocks(10)).toEqual([]);
    expect((await s.readLock('ttl'))?.fencingToken).toBe(taken.fencingToken);
  });

  it('a session whose lease ran out is not found by anything, its locks are free, release answers session_not_found, and the sweeper reports it once', async () => {
    const s = await store();
    const a = await openSession(s, 2_000);
    const b = await openSession(s, 60_000);
    const sx = await grant(s, 'sx', a.credential, 60_000);
    const sy = await grant(s, 'sy', a.credential, 60_000);
    await until(async () => (await s.getSession(a.sessionId)) === null, 30_000, 'lease expiry of the session');

    expect(await s.heartbeat(a.credential)).toEqual({ kind: 'session_not_found' });
    expect(await s.tryAcquire({ key: 'other', session: a.credential, ttlMillis: 1_000 })).toEqual({ kind: 'session_not_found' });
    expect(await s.renew({ key: 'sx', session: a.credential, fencingToken: sx.fencingToken })).toEqual({ kind: 'session_not_found' });
    // Was `released: true` on etcd while SQL said LOCK_LOST: now the SPI's answer, and nothing changes.
    expect(await s.release({ key: 'sy', session: a.credential, fencingToken: sy.fencingToken })).toEqual({ kind: 'session_not_found' });
    expect(await s.closeSession(a.credential)).toEqual({ kind: 'session_not_found' });
    expect(await s.readLock('sx')).toBeNull();
    expect((await s.listLocks({ limit: 10 })).items).toEqual([]);
    expect(await s.summary()).toMatchObject({ heldLocks: 0, activeSessions: 1 });

    // The lock of the lapsed session is free before any sweep.
    const taken = await grant(s, 'sx', b.credential, 60_000);
    expect(compareTokens(taken.fencingToken, sy.fencingToken)).toBe(1);

    const ended = await s.expireSessions(10);
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({ cause: 'ttl', session: { sessionId: a.sessionId, owner: 'test' } });
    // sy went with the session; sx's key was already taken over, so its grant is reported by expireLocks.
    expect(ended[0]!.releasedLocks.map((lock) => [lock.key, lock.fencingToken])).toEqual([['sy', sy.fencingToken]]);
    expect(await s.expireSessions(10)).toEqual([]);
    expect((await s.expireLocks(10)).map((lock) => [lock.key, lock.fencingToken])).toEqual([['sx', sx.fencingToken]]);
    expect(await s.expireLocks(10)).toEqual([]);
    expect((await s.readLock('sx'))?.sessionId).toBe(b.sessionId);
  });

  it('heartbeat keeps a session alive past its TTL (lease keep-alive); closeSession releases every lock of the session', async () => {
    const s = await store();
    const a = await openSession(s, 2_000);
    const startedAt = Date.now();
    while (Date.now() - startedAt < 4_000) {
      const beat = await s.heartbeat(a.credential);
      expect(beat.kind).toBe('alive');
      if (beat.kind === 'alive') expect(beat.session.expiresAt - beat.session.lastHeartbeatAt).toBe(2_000);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(await s.getSession(a.sessionId)).not.toBeNull();
    expect(await s.expireSessions(10)).toEqual([]);

    for (const key of ['c1', 'c2', 'c3']) await grant(s, key, a.credential);
    const sessions = await s.listSessions({ limit: 10 });
    expect(sessions.items).toEqual([expect.objectContaining({ sessionId: a.sessionId, lockCount: 3 })]);

    const closed = await s.closeSession(a.credential);
    expect(closed.kind).toBe('closed');
    if (closed.kind !== 'closed') return;
    expect(closed.ended.cause).toBe('closed');
    expect(closed.ended.releasedLocks.map((lock) => lock.key).sort()).toEqual(['c1', 'c2', 'c3']);
    expect(await s.listLocks({ limit: 10 })).toEqual({ items: [], nextCursor: null });
    expect(await s.closeSession(a.credential)).toEqual({ kind: 'session_not_found' });
    // Nothing is left for the sweeper to report twice.
    expect(await s.expireSessions(10)).toEqual([]);
    expect(await s.expireLocks(10)).toEqual([]);
  });

  it('lists locks by prefix with cursors, and sums held locks, active sessions and the oldest grant (advisory clock)', async () => {
    let now = 1_000_000;
    const s = await store('shared', undefined, { clock: () => now });
    const a = await openSession(s);
    for (const key of ['jobs/a', 'jobs/b', 'jobs/c', 'other/x']) {
      await grant(s, key, a.credential);
      now += 1_000;
    }
    const first = await s.listLocks({ prefix: 'jobs/', limit: 2 });
    expect(first.items.map((lock) => lock.key)).toEqual(['jobs/a', 'jobs/b']);
    expect(first.nextCursor).not.toBeNull();
    await expect(s.listLocks({ limit: 2, cursor: '%%%' })).rejects.toBeInstanceOf(ValidationFailedError);
    const second = await s.listLocks({ prefix: 'jobs/', limit: 2, cursor: first.nextCursor! });
    expect(second).toMatchObject({ items: [expect.objectContaining({ key: 'jobs/c' })], nextCursor: null });
    expect(await s.summary()).toEqual({ heldLocks: 4, activeSessions: 1, oldestHeldMillis: 4_000 });
  });
});

describe('etcd store: session capability', () => {
  it('a live session with the wrong token hash is unauthenticated on every session-scoped call, and nothing changes', async () => {
    const s = await store();
    const a = await openSession(s);
    const held = await grant(s, 'cap', a.credential, 30_000);
    const forged: SessionCredential = { sessionId: a.sessionId, tokenHash: hashOf('guessed') };
    const before = await s.getSession(a.sessionId);

    expect(await s.heartbeat(forged)).toEqual({ kind: 'unauthenticated' });
    expect(await s.tryAcquire({ key: 'cap-2', session: forged, ttlMillis: 1_000 })).toEqual({ kind: 'unauthenticated' });
    expect(await s.renew({ key: 'cap', session: forged, fencingToken: held.fencingToken, ttlMillis: 1_000 })).toEqual({ kind: 'unauthenticated' });
    expect(await s.release({ key: 'cap', session: forged, fencingToken: held.fencingToken })).toEqual({ kind: 'unauthenticated' });
    expect(await s.closeSession(forged)).toEqual({ kind: 'unauthenticated' });

    // The expiry a read reports comes from the lease, in whole seconds (lease-only-heartbeat.test.ts
    // shows a refused heartbeat keeps no lease alive).
    const after = await s.getSession(a.sessionId);
    expect({ ...after, expiresAt: 0, lastHeartbeatAt: 0 }).toEqual({ ...before, expiresAt: 0, lastHeartbeatAt: 0 });
    expect(Math.abs(after!.expiresAt - before!.expiresAt)).toBeLessThan(1000);
    expect(await s.readLock('cap')).toMatchObject({ fencingToken: held.fencingToken, ttlMillis: 30_000 });
    expect(await s.readLock('cap-2')).toBeNull();
    // A second server instance (nothing cached) refuses the same way.
    const other = await store('shared', namespaceOf(s));
    expect(await other.release({ key: 'cap', session: forged, fencingToken: held.fencingToken })).toEqual({ kind: 'unauthenticated' });
    expect(await other.heartbeat(forged)).toEqual({ kind: 'unauthenticated' });
    expect((await s.readLock('cap'))?.fencingToken).toBe(held.fencingToken);
  });

  it('an unknown session is session_not_found on every session-scoped call; the token hash is stored, never anything else', async () => {
    const s = await store();
    const ghost: SessionCredential = { sessionId: 'never-opened', tokenHash: hashOf('x') };
    expect(await s.heartbeat(ghost)).toEqual({ kind: 'session_not_found' });
    expect(await s.tryAcquire({ key: 'g', session: ghost, ttlMillis: 1_000 })).toEqual({ kind: 'session_not_found' });
    expect(await s.renew({ key: 'g', session: ghost, fencingToken: '5' })).toEqual({ kind: 'session_not_found' });
    expect(await s.release({ key: 'g', session: ghost, fencingToken: '5' })).toEqual({ kind: 'session_not_found' });
    expect(await s.closeSession(ghost)).toEqual({ kind: 'session_not_found' });

    const a = await openSession(s);
    const raw = new Etcd3({ hosts: fixture.etcd.endpoints });
    try {
      const values = await raw.getAll().prefix(s.keyRoot).strings();
      const stored = Object.values(values).filter((value) => value.includes(a.sessionId));
      expect(stored.length).toBeGreaterThan(0);
      for (const value of stored) expect(JSON.parse(value)).toMatchObject({ tokenHash: a.credential.tokenHash });
    } finally {
      raw.close();
    }
  });
});

describe('etcd store: audit and operator actions', () => {
  it('force-revoke and kill append hash-chained audit entries in the same txn as the change, stamped by the store, with the head recorded', async () => {
    const s = await store('shared', undefined, { clock: () => 1_700_000_000_000 });
    expect(await s.readAuditHead()).toEqual({ lastId: '0', lastHash: '0'.repeat(64), checkpointId: '0', checkpointHash: '0'.repeat(64), seal: null });
    const a = await openSession(s);
    const held = await grant(s, 'stuck', a.credential);

    const mismatch = await s.forceRevoke({ key: 'stuck', expectedFencingToken: '1', audit: audit('mismatch') });
    expect(mismatch).toMatchObject({ outcome: 'TOKEN_MISMATCH', holder: { fencingToken: held.fencingToken } });
    expect((await s.readLock('stuck'))?.fencingToken).toBe(held.fencingToken);

    const revoked = await s.forceRevoke({ key: 'stuck', expectedFencingToken: held.fencingToken, audit: audit('revoke') });
    expect(revoked).toMatchObject({ outcome: 'REVOKED', revoked: { fencingToken: held.fencingToken, endedAt: 1_700_000_000_000 } });
    expect(await s.readLock('stuck')).toBeNull();
    // The holder learns it on its next call; the revoked grant is not reported again by the sweeper.
    expect(await s.release({ key: 'stuck', session: a.credential, fencingToken: held.fencingToken })).toEqual({ kind: 'lost' });
    expect(await s.expireLocks(10)).toEqual([]);

    expect((await s.forceRevoke({ key: 'stuck', audit: audit('again') })).outcome).toBe('NOT_HELD');

    const killed = await s.killSession(a.sessionId, audit('kill'));
    expect(killed.ended?.cause).toBe('killed');
    expect(killed.audit).toMatchObject({ action: 'session.kill', target: a.sessionId, outcome: 'KILLED', actor: 'ops-alice', at: 1_700_000_000_000 });
    expect(await s.getSession(a.sessionId)).toBeNull();
    expect(await s.heartbeat(a.credential)).toEqual({ kind: 'session_not_found' });
    const killedAgain = await s.killSession(a.sessionId, audit('kill-again'));
    expect(killedAgain).toMatchObject({ ended: null, audit: { outcome: 'NOT_FOUND' } });

    const chain: AuditEntry[] = [];
    for await (const entry of s.readAuditChain()) chain.push(entry);
    expect(chain.map((entry) => entry.outcome)).toEqual(['TOKEN_MISMATCH', 'REVOKED', 'NOT_HELD', 'KILLED', 'NOT_FOUND']);
    expect(await verifyAuditChain(chain)).toMatchObject({ ok: true, entries: 5 });
    expect(await s.readAuditHead()).toMatchObject({ lastId: '5', lastHash: chain[4]!.hash, checkpointId: '0', seal: expect.stringMatching(/^[0-9a-f]{64}$/) });

    const newest = await s.listAudit({ limit: 2 });
    expect(newest.items.map((entry) => entry.outcome)).toEqual(['NOT_FOUND', 'KILLED']);
    const older = await s.listAudit({ limit: 2, cursor: newest.nextCursor! });
    expect(older.items.map((entry) => entry.outcome)).toEqual(['NOT_HELD', 'REVOKED']);
    const revokesOnly = await s.listAudit({ limit: 10, action: 'lock.revoke' });
    expect(revokesOnly.items).toHaveLength(3);
    expect(revokesOnly.nextCursor).toBeNull();
  });

  it('seals with the sealer it was built with: a keyed chain does not verify as a plain one', async () => {
    const key = Buffer.from('a-test-audit-key-of-32-bytes!!!!');
    const sealer = createAuditSealer(key);
    const s = await store('shared', undefined, { auditSealer: sealer });
    await s.forceRevoke({ key: 'none-1', audit: audit('k1') });
    await s.forceRevoke({ key: 'none-2', audit: audit('k2') });
    const chain: AuditEntry[] = [];
    for await (const entry of s.readAuditChain()) chain.push(entry);
    for (const entry of chain) expect(sealer.hash(entry.prevHash, entry)).toBe(entry.hash);
    expect((await verifyAuditChain(chain)).ok).toBe(false);
  });

  it('concurrent revokes from two server instances keep one unbroken chain', async () => {
    const one = await store();
    const two = await store('shared', namespaceOf(one));
    await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? one : two).forceRevoke({ key: `none-${i}`, audit: audit(`r${i}`) })));
    const chain: AuditEntry[] = [];
    for await (const entry of one.readAuditChain()) chain.push(entry);
    expect(chain.map((entry) => entry.id)).toEqual(Array.from({ length: 12 }, (_, i) => String(i + 1)));
    expect((await verifyAuditChain(chain)).ok).toBe(true);
    expect(await two.readAuditHead()).toMatchObject({ lastId: '12', lastHash: chain[11]!.hash, checkpointId: '0', seal: expect.stringMatching(/^[0-9a-f]{64}$/) });
  });
});

describe('etcd store: two instances and the lease backstop', () => {
  it('two server instances racing on one key never both grant', async () => {
    const one = await store();
    const two = await store('shared', namespaceOf(one));
    const a = await openSession(one);
    const b = await openSession(two);
    for (let round = 0; round < 25; round += 1) {
      const results = await Promise.all([
        one.tryAcquire({ key: 'race', session: a.credential, ttlMillis: 30_000 }),
        two.tryAcquire({ key: 'race', session: b.credential, ttlMillis: 30_000 }),
      ]);
      const grants = results.flatMap((result, index) => (result.kind === 'granted' ? [{ result, holder: index === 0 ? a : b }] : []));
      expect(grants).toHaveLength(1);
      const [won] = grants;
      if (won?.result.kind === 'granted') {
        expect((await one.release({ key: 'race', session: won.holder.credential, fencingToken: won.result.grant.fencingToken })).kind).toBe('released');
      }
    }
  });

  it('when no server is left, etcd itself ends the session and its locks at lease expiry; the next server reports them', async () => {
    const namespace = `backstop-${Date.now()}`;
    const s = await openStore(fixture.etcd.endpoints, 'shared', namespace);
    const session = await openSession(s, 2_000);
    const held = await grant(s, 'orphan', session.credential, 600_000);
    await s.close(); // the granting server dies: nobody heartbeats, nobody sweeps

    const raw = new Etcd3({ hosts: fixture.etcd.endpoints });
    const next = await store('shared', namespace);
    try {
      expect(await raw.get(`/holdfast/${namespace}/s/${session.sessionId}`).string()).not.toBeNull();
      await until(async () => (await raw.get(`/holdfast/${namespace}/s/${session.sessionId}`).string()) === null, 30_000, 'session lease expiry');
      // The lock's own lease runs 600 s, but its session is gone: it is free already.
      expect(await next.readLock('orphan')).toBeNull();
      const ended = await next.expireSessions(10);
      expect(ended).toMatchObject([{ cause: 'ttl', session: { sessionId: session.sessionId } }]);
      expect(ended[0]!.releasedLocks.map((lock) => lock.fencingToken)).toEqual([held.fencingToken]);
      expect(await raw.getAll().prefix(`/holdfast/${namespace}/`).keys()).toEqual([]);
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
      await expect(s.tryAcquire({ key: 'k', session: session.credential, ttlMillis: 1_000 })).rejects.toBeInstanceOf(NotLeaderError);
    } finally {
      await s.close();
      await own.stop();
    }
  });
});
