/**
 * Store conformance for issue 25's token floor (lock/store/spi.ts `TokenFloor`), run against every
 * store that has one by token-floor.conformance.test.ts:
 * - a new store is `current`: it records where it lives the first time it is checked;
 * - advance raises the sequence to at least the store clock in microseconds: every later token is
 *   above every earlier one and above the floor it answers; it appends a `tokens.advance` entry
 *   (its fencingToken the floor) to a chain that still verifies;
 * - (stores that can be restored) a store whose data names another place is `restored`; the guard
 *   refuses its writes with the pinned body and serves its reads; advance makes it `current` again
 *   and the next write is served, above every token issued before the rewind;
 * - (the same) a store from before this release (no identity recorded) whose sequence has drawn
 *   tokens is advanced as it is claimed.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { verifyAuditChain, createAuditSealer } from '../../../lock/audit/chain.js';
import { STORE_RESTORED_MESSAGE, StoreRestoredError } from '../../../lock/errors.js';
import { guardRestoredStore } from '../../../lock/store/restore-guard.js';
import type { LockStore, StoreIdentityCheck } from '../../../lock/store/spi.js';
import { openTestSession } from '../../support/store-sessions.js';

export interface TokenFloorStore {
  store: LockStore;
  /**
   * What a restore does to the store, behind its back: the sequence set back to `lastToken` (the
   * backup's) and another place recorded as the store's identity. Absent: the store is never restored.
   */
  restoreElsewhere?(lastToken: string): Promise<void>;
  /** The store as a release before the token floor left it: no identity recorded. */
  forgetIdentity?(): Promise<void>;
  cleanup(): Promise<void>;
}

const draft = (reason: string) => ({ actor: 'conformance', requestId: `req-${reason}`, reason });

/** `restorable`: the factory's stores have restoreElsewhere and forgetIdentity (the restore tests run on them only). */
export function describeTokenFloor(
  name: string,
  make: (sealer: ReturnType<typeof createAuditSealer>) => Promise<TokenFloorStore>,
  options: { restorable: boolean },
): void {
  describe(`token floor conformance: ${name}`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0)) await cleanup();
    });
    const fresh = async () => {
      const sealer = createAuditSealer(Buffer.alloc(32, 7));
      const made = await make(sealer);
      cleanups.push(made.cleanup);
      return { ...made, sealer };
    };
    /** `n` grants on keys of their own: their tokens, in answer order. */
    const grants = async (store: LockStore, n: number, label: string): Promise<bigint[]> => {
      const session = await openTestSession(store, { ttlMillis: 120_000 });
      const tokens: bigint[] = [];
      for (let i = 0; i < n; i++) {
        const result = await store.tryAcquire({ key: `floor/${label}/${i}`, session: session.credential, ttlMillis: 120_000 });
        if (result.kind !== 'granted') throw new Error(`expected a grant, got ${result.kind}`);
        tokens.push(BigInt(result.grant.fencingToken));
      }
      return tokens;
    };
    const max = (values: bigint[]) => values.reduce((a, b) => (a > b ? a : b));
    const min = (values: bigint[]) => values.reduce((a, b) => (a < b ? a : b));

    test('a new store is current: it records where it lives at its first check', async () => {
      const { store } = await fresh();
      const first = await store.tokenFloor!.check();
      expect(first.state).toBe('current');
      expect(first.recorded).toBe(first.live);
      expect(await store.tokenFloor!.check()).toEqual(first);
    });

    test('advance: every later token is above every earlier one and above the floor (the store clock in µs); audited in the chain', async () => {
      const { store, sealer } = await fresh();
      await store.tokenFloor!.check();
      const before = await grants(store, 5, 'before');
      const startedMicros = BigInt(Date.now() - 60_000) * 1000n;
      const advanced = await store.tokenFloor!.advance({ audit: draft('advance') });
      expect(BigInt(advanced.previous)).toBeGreaterThanOrEqual(max(before));
      expect(BigInt(advanced.floor)).toBeGreaterThanOrEqual(BigInt(advanced.previous));
      // The store clock in microseconds (a minute of slack between this machine's clock and the store's).
      expect(BigInt(advanced.floor)).toBeGreaterThan(startedMicros);
      const after = await grants(store, 5, 'after');
      expect(min(after)).toBeGreaterThan(BigInt(advanced.floor));
      expect(advanced.audit).toMatchObject({ action: 'tokens.advance', target: 'tokens', outcome: 'ADVANCED', fencingToken: advanced.floor, actor: 'conformance' });
      const again = await store.tokenFloor!.advance({ audit: draft('again') });
      expect(BigInt(again.floor)).toBeGreaterThanOrEqual(BigInt(advanced.floor));
      expect(BigInt(again.previous)).toBeGreaterThanOrEqual(max(after));
      expect(await verifyAuditChain(store.readAuditChain(), { head: await store.readAuditHead(), sealer })).toMatchObject({ ok: true, entries: 2 });
      expect((await store.tokenFloor!.check()).state).toBe('current');
    });

    const restorable = options.restorable ? test : () => {};
    restorable('a restored store: writes refused with the pinned error, reads served; advance serves writes again above every earlier token', async () => {
      const { store, restoreElsewhere } = await fresh();
      if (!restoreElsewhere) throw new Error('a restorable store without restoreElsewhere');
      await store.tokenFloor!.check();
      const backup = await grants(store, 3, 'backup');
      const sinceBackup = await grants(store, 20, 'since');
      await restoreElsewhere(String(max(backup)));
      const check = await store.tokenFloor!.check();
      expect(check).toMatchObject({ state: 'restored' });
      expect(check.recorded).not.toBe(check.live);

      const seen: string[] = [];
      const guarded = await guardRestoredStore(store, {
        restored: (c: StoreIdentityCheck) => seen.push(`restored ${c.live}`),
        advanced: (c: StoreIdentityCheck) => seen.push(`advanced ${c.live}`),
      });
      expect(seen).toEqual([`restored ${check.live}`]);
      const refused = await guarded.openSession({ sessionId: 's_refused', owner: 'o', ttlMillis: 1000, tokenHash: 'x' }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(StoreRestoredError);
      expect((refused as StoreRestoredError).toBody()).toEqual({ error: { code: 'NOT_LEADER', message: STORE_RESTORED_MESSAGE, retryable: true } });
      expect(await guarded.forceRevoke({ key: 'floor/backup/0', audit: draft('refused') }).catch((e: unknown) => e)).toBeInstanceOf(StoreRestoredError);
      expect(await guarded.expireLocks(10)).toEqual([]);
      // Reads are served: what the backup held is visible.
      expect(await guarded.readLock('floor/backup/0')).toMatchObject({ key: 'floor/backup/0' });
      await guarded.ping();

      await store.tokenFloor!.advance({ audit: draft('after restore') });
      const session = await openTestSession(guarded, { ttlMillis: 120_000 });
      expect(seen.at(-1)).toBe(`advanced ${check.live}`);
      const result = await guarded.tryAcquire({ key: 'floor/after/0', session: session.credential, ttlMillis: 120_000 });
      expect(result.kind).toBe('granted');
      if (result.kind === 'granted') expect(BigInt(result.grant.fencingToken)).toBeGreaterThan(max([...backup, ...sinceBackup]));
    });

    restorable('a store from before the token floor, whose sequence has drawn tokens, is advanced as it is claimed', async () => {
      const { store, forgetIdentity, restoreElsewhere } = await fresh();
      if (!forgetIdentity || !restoreElsewhere) throw new Error('a restorable store without forgetIdentity');
      await store.tokenFloor!.check();
      const backup = await grants(store, 3, 'old-backup');
      const since = await grants(store, 10, 'old-since');
      // A backup from before this release, restored: the sequence rewound, no identity in it.
      await restoreElsewhere(String(max(backup)));
      await forgetIdentity();
      expect((await store.tokenFloor!.check()).state).toBe('current');
      const after = await grants(store, 3, 'old-after');
      expect(min(after)).toBeGreaterThan(max([...backup, ...since]));
    });

    test('a new store that has drawn no token is claimed without a jump', async () => {
      const { store } = await fresh();
      await store.tokenFloor!.check();
      const [first] = await grants(store, 1, 'small');
      expect(first).toBeLessThan(1_000_000n);
    });
  });
}
