/**
 * A release whose first txn etcd applied but whose answer was lost (the leader died, a deadline ran
 * out) is resent, and the resend's compare finds the grant gone. That is the holder's own release:
 * it is answered `released`, not LOCK_LOST (and a close so resent `closed`, not SESSION_NOT_FOUND) (landed-delete.ts reads etcd's history to tell). A grant
 * that ended otherwise while the release was unanswered — a lapse, an operator's revoke — is still
 * LOCK_LOST. The fault is injected at the one seam where it happens: the batcher's txn call to a real
 * etcd (applied, then "Deadline exceeded"; or lost before it reached etcd).
 */
import { GRPCDeadlineExceededError, type Etcd3 } from 'etcd3';
import { describe, expect, it } from 'vitest';
import type { EtcdStore } from '../../lock/store/etcd/etcd-store.js';
import type { KeyLayout } from '../../lock/store/etcd/keys.js';
import type { ReleaseBatcher } from '../../lock/store/etcd/release-batcher.js';
import type { AcquireAttempt } from '../../lock/store/spi.js';
import { etcdStores, openSession, withRawEtcd, type TestSession } from './helpers.js';

type Internals = { ctx: { keys: KeyLayout; client: Etcd3 }; grants: { releases: ReleaseBatcher } };
const internals = (store: EtcdStore): Internals => store as unknown as Internals;
const LONG = 60_000;

/** Where the first send's answer goes missing: after etcd applied it, or before it reached etcd. */
type Loss = 'after-applied' | 'before-sent';

/** The store's next release txn is lost once as `loss` says; `meanwhile` runs before the store hears of the loss. */
function loseFirstRelease(store: EtcdStore, loss: Loss, meanwhile: () => Promise<void> = async () => undefined): () => number {
  const releases = internals(store).grants.releases as unknown as { client: () => Etcd3 };
  const real = releases.client;
  let sends = 0;
  releases.client = () => {
    const client = real();
    return {
      kv: {
        txn: async (request: Parameters<Etcd3['kv']['txn']>[0]) => {
          sends += 1;
          if (sends > 1) return client.kv.txn(request);
          if (loss === 'after-applied') await client.kv.txn(request);
          await meanwhile();
          throw new GRPCDeadlineExceededError('Deadline exceeded (test: the answer was lost)');
        },
      },
    } as unknown as Etcd3;
  };
  return () => sends;
}

describe('a release whose first answer was lost', () => {
  const fixture = etcdStores();

  async function held(store: EtcdStore, key: string, holding: Partial<AcquireAttempt> = {}): Promise<{ session: TestSession; token: string }> {
    const session = await openSession(store, LONG);
    const result = await store.tryAcquire({ key, session: session.credential, ttlMillis: LONG, ...holding });
    if (result.kind !== 'granted') throw new Error(`expected a grant of ${key}, got ${result.kind}`);
    return { session, token: result.grant.fencingToken };
  }

  it('is answered released when its own delete landed (mutex), and the key is free', async () => {
    const store = await fixture.store();
    const key = 'lost-answer/mutex';
    const { session, token } = await held(store, key);
    // Other writes in between: the grant's deletion is found among revisions, not at the last one.
    const others = await openSession(store, LONG);
    const sends = loseFirstRelease(store, 'after-applied', async () => {
      for (let i = 0; i < 5; i += 1) await store.tryAcquire({ key: `lost-answer/other-${i}`, session: others.credential, ttlMillis: LONG });
    });
    const released = await store.release({ key, session: session.credential, fencingToken: token });
    expect(sends()).toBe(2);
    expect(released).toMatchObject({ kind: 'released', lock: { key, fencingToken: token, sessionId: session.sessionId } });
    expect(await store.readLock(key)).toBeNull();
    expect(await store.expireLocks(10)).toEqual([]);
    const next = await store.tryAcquire({ key, session: others.credential, ttlMillis: LONG });
    expect(next.kind).toBe('granted');
  });

  it('is answered released for a shared grant, and the key loses its anchor with its last holder', async () => {
    const store = await fixture.store();
    const key = 'lost-answer/shared';
    const { session, token } = await held(store, key, { mode: 'shared' });
    const sends = loseFirstRelease(store, 'after-applied');
    const released = await store.release({ key, session: session.credential, fencingToken: token });
    expect(sends()).toBe(2);
    expect(released).toMatchObject({ kind: 'released', lock: { key, fencingToken: token, mode: 'shared' } });
    expect(await store.readLock(key)).toBeNull();
    expect(await withRawEtcd(fixture.etcd.endpoints, (etcd) => etcd.get(internals(store).ctx.keys.lock(key)).string())).toBeNull();
  });

  it("finds its own release in etcd's recent history when the grant's creation was compacted away", async () => {
    const store = await fixture.store();
    const key = 'lost-answer/compacted';
    const { session, token } = await held(store, key);
    const others = await openSession(store, LONG);
    for (let i = 0; i < 10; i += 1) await store.tryAcquire({ key: `lost-answer/before-${i}`, session: others.credential, ttlMillis: LONG });
    await withRawEtcd(fixture.etcd.endpoints, async (etcd) => {
      const revision = (await etcd.kv.range({ key: Buffer.from('any') })).header.revision;
      await etcd.kv.compact({ revision, physical: true });
    });
    loseFirstRelease(store, 'after-applied', async () => {
      for (let i = 0; i < 2; i += 1) await store.tryAcquire({ key: `lost-answer/after-${i}`, session: others.credential, ttlMillis: LONG });
    });
    expect(await store.release({ key, session: session.credential, fencingToken: token })).toMatchObject({ kind: 'released', lock: { fencingToken: token } });
  });

  it('a close whose first answer was lost is answered closed, with the grants it ended', async () => {
    const store = await fixture.store();
    const key = 'lost-answer/closed';
    const { session, token } = await held(store, key);
    // The close's own txn (it deletes the session's record) is applied, then its answer lost once.
    const kv = internals(store).ctx.client.kv;
    const txn = kv.txn.bind(kv);
    const recordKey = internals(store).ctx.keys.sessionRecord(session.sessionId);
    let lost = 0;
    kv.txn = async (request) => {
      const response = await txn(request);
      const closing = (request.success ?? []).some((op) => op.request_delete_range && Buffer.compare(op.request_delete_range.key as Buffer, recordKey) === 0);
      if (!closing || lost > 0) return response;
      lost += 1;
      throw new GRPCDeadlineExceededError('Deadline exceeded (test: the answer was lost)');
    };
    const closed = await store.closeSession(session.credential);
    kv.txn = txn;
    expect(lost).toBe(1);
    expect(closed).toMatchObject({ kind: 'closed', ended: { cause: 'closed', releasedLocks: [{ key, fencingToken: token }] } });
    expect(await store.readLock(key)).toBeNull();
  });

  it('is still LOCK_LOST when an operator revoked the grant before the resend', async () => {
    const store = await fixture.store();
    const key = 'lost-answer/revoked';
    const { session, token } = await held(store, key);
    loseFirstRelease(store, 'before-sent', async () => {
      const revoked = await store.forceRevoke({ key, expectedFencingToken: token, audit: { actor: 'ops-alice', requestId: 'req-revoke', reason: 'stuck' } });
      expect(revoked.outcome).toBe('REVOKED');
    });
    expect(await store.release({ key, session: session.credential, fencingToken: token })).toEqual({ kind: 'lost' });
  });

  it('is still LOCK_LOST when the grant lapsed (its liveness key went alone) before the resend', async () => {
    const store = await fixture.store();
    const key = 'lost-answer/lapsed';
    const { session, token } = await held(store, key);
    // What etcd does when a grant's lease runs out: the liveness key goes, the session's record stays for the sweeper.
    loseFirstRelease(store, 'before-sent', async () => {
      await withRawEtcd(fixture.etcd.endpoints, (etcd) => etcd.delete().key(internals(store).ctx.keys.lock(key)).exec());
    });
    expect(await store.release({ key, session: session.credential, fencingToken: token })).toEqual({ kind: 'lost' });
    expect(await store.expireLocks(10)).toMatchObject([{ key, fencingToken: token }]);
  });
});
