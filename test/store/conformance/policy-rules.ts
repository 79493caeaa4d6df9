/**
 * Conformance, continued: what the store does for per-prefix policies and scoped tokens (SPEC
 * "v3 — teams on one service"). Run inside describeStoreConformance (suite.ts) on every backend.
 */
import { randomBytes } from 'node:crypto';
import { expect, test } from 'vitest';
import { auditHash } from '../../../lock/audit/chain.js';
import type { LockStore, SessionRecord } from '../../../lock/store/spi.js';
import { eventually } from '../../support/http.js';
import { openTestSession } from '../../support/store-sessions.js';

const LONG = 120_000;

export function policyRules(subject: () => { store: LockStore; expectSameSession: (after: SessionRecord | null, before: SessionRecord | null) => void }): void {
  const unique = () => randomBytes(4).toString('hex');

  test('authenticateSession checks a credential and changes nothing; refusals as every session-scoped call', async () => {
    const { store, expectSameSession } = subject();
    const a = await openTestSession(store, { ttlMillis: LONG, openedBy: 'team-a' });
    const before = await store.getSession(a.record.sessionId);
    const checked = await store.authenticateSession(a.credential);
    expect(checked).toMatchObject({ kind: 'authenticated', session: { sessionId: a.record.sessionId, owner: a.record.owner, openedBy: 'team-a' } });
    expect(await store.authenticateSession(a.impostor)).toEqual({ kind: 'unauthenticated' });
    expect(await store.authenticateSession({ sessionId: `s_${unique()}`, tokenHash: a.credential.tokenHash })).toEqual({ kind: 'session_not_found' });
    expectSameSession(await store.getSession(a.record.sessionId), before);
  });

  test('renew with maxHoldMillis: a grant that old is left as it was (hold_limit) and ends at its TTL; younger ones renew', async () => {
    const { store } = subject();
    const a = await openTestSession(store, { ttlMillis: LONG });
    const k = `conf/max-hold/${unique()}`;
    const granted = await store.tryAcquire({ key: k, session: a.credential, ttlMillis: LONG });
    if (granted.kind !== 'granted') throw new Error(`expected a grant, got ${granted.kind}`);
    const token = granted.grant.fencingToken;
    expect(await store.renew({ key: k, session: a.credential, fencingToken: token, maxHoldMillis: 3_600_000 })).toMatchObject({ kind: 'renewed' });
    // By the store's clock the grant ages past 300 ms; until then a renew under that limit still extends it.
    let refused: Awaited<ReturnType<LockStore['renew']>> | undefined;
    await eventually(async () => {
      refused = await store.renew({ key: k, session: a.credential, fencingToken: token, maxHoldMillis: 300 });
      return refused.kind === 'hold_limit';
    }, 30_000, 50);
    if (refused?.kind !== 'hold_limit') throw new Error('unreachable');
    expect(refused.lock).toMatchObject({ key: k, fencingToken: token, sessionId: a.record.sessionId });
    const held = await store.readLock(k);
    expect(held).toMatchObject({ fencingToken: token, expiresAt: refused.lock.expiresAt });
    // Refused again, still nothing moves; the credential and the token are checked first.
    expect(await store.renew({ key: k, session: a.credential, fencingToken: token, maxHoldMillis: 300, ttlMillis: 600_000 })).toMatchObject({
      kind: 'hold_limit',
      lock: { expiresAt: held!.expiresAt },
    });
    expect((await store.readLock(k))?.expiresAt).toBe(held!.expiresAt);
    expect(await store.renew({ key: k, session: a.impostor, fencingToken: token, maxHoldMillis: 300 })).toEqual({ kind: 'unauthenticated' });
    expect(await store.renew({ key: k, session: a.credential, fencingToken: '1', maxHoldMillis: 300 })).toEqual({ kind: 'lost' });
    // Without the limit the same grant renews as before.
    expect(await store.renew({ key: k, session: a.credential, fencingToken: token })).toMatchObject({ kind: 'renewed' });
  });

  test("an audit draft's actorScope is kept in the entry and its hash; entries without one hash as before", async () => {
    const { store } = subject();
    const a = await openTestSession(store, { ttlMillis: LONG });
    const k = `conf/audit-scope/${unique()}`;
    expect((await store.tryAcquire({ key: k, session: a.credential, ttlMillis: LONG })).kind).toBe('granted');
    const scoped = await store.forceRevoke({ key: k, audit: { actor: 'team-ops', actorScope: ['conf/audit-scope/'], requestId: 'req-scope', reason: 'scoped' } });
    expect(scoped.audit).toMatchObject({ actor: 'team-ops', actorScope: ['conf/audit-scope/'], outcome: 'REVOKED' });
    const plain = await store.killSession(`s_${unique()}`, { actor: 'ops', requestId: 'req-plain', reason: 'plain' });
    expect(plain.audit).not.toHaveProperty('actorScope');
    const listed = await store.listAudit({ limit: 10, target: k });
    expect(listed.items).toEqual([scoped.audit]);
    // The scope is part of what the hash covers: the same entry without it does not hash the same.
    const { actorScope: _scope, hash: _hash, prevHash, ...unscoped } = scoped.audit;
    expect(auditHash(prevHash, unscoped)).not.toBe(auditHash(prevHash, { ...unscoped, actorScope: ['conf/audit-scope/'] }));
  });

  test('summary by policy: each live lock counts under its longest-prefix policy, every policy present, keys under none under ""', async () => {
    const { store } = subject();
    const a = await openTestSession(store, { ttlMillis: LONG });
    const root = `conf/policy/${unique()}/`;
    const policies = [
      { name: `outer-${unique()}`, prefix: root },
      { name: `inner-${unique()}`, prefix: `${root}inner/` },
      { name: `idle-${unique()}`, prefix: `${root}idle/` },
    ];
    for (const k of [`${root}x`, `${root}inner/y`, `${root}inner/z`, `conf/unpolicied/${unique()}`]) {
      const result = await store.tryAcquire({ key: k, session: a.credential, ttlMillis: LONG });
      expect(result.kind).toBe('granted');
    }
    const summary = await store.summary({ policies });
    expect(summary.byPolicy?.map((row) => row.policy)).toEqual([...policies.map((p) => p.name), '']);
    const row = (name: string) => summary.byPolicy!.find((r) => r.policy === name)!;
    expect(row(policies[0]!.name).heldLocks).toBe(1);
    expect(row(policies[1]!.name).heldLocks).toBe(2);
    expect(row(policies[2]!.name)).toEqual({ policy: policies[2]!.name, heldLocks: 0, oldestHeldMillis: 0 });
    expect(row('').heldLocks).toBeGreaterThanOrEqual(1);
    // Every lock counts once: the rows add up to no more than all that is held (others' locks may lapse meanwhile).
    expect(summary.byPolicy!.reduce((sum, r) => sum + r.heldLocks, 0)).toBeLessThanOrEqual(summary.heldLocks);
    expect(row(policies[1]!.name).oldestHeldMillis).toBeGreaterThanOrEqual(0);
    expect((await store.summary()).byPolicy).toBeUndefined();
  });
}
