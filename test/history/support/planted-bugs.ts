/**
 * Deliberately broken builds, for proving the checker finds real bugs: each is
 * a wrapper around the store SPI, applied only by the test-only server entry
 * (planted-server.ts), so nothing of it ships or touches lock/ or server/. Each
 * reproduces a classic lock-service bug with what the SPI offers (a forced
 * revoke stands in for "the store deleted the holder's row"):
 *
 * - release-ignores-token: L6 without the compare on (key, token): a stale
 *   release by a former holder deletes whoever holds the key now.
 * - server-clock-expiry: liveness by a server clock running ahead of the
 *   store's (by HOLDFAST_PLANTED_SKEW_MS): a grant in the last stretch of its
 *   TTL counts as expired, and the next acquire takes the key from its holder.
 * - double-grant: waking two waiters and granting both: an acquire that finds
 *   the key freshly granted (< 300 ms ago, a waiter just woken by a release)
 *   is granted too.
 * - per-key-tokens: fencing tokens counted per key instead of across the store
 *   (each key's grants numbered 1, 2, 3…; renew and release translate back).
 */
import type { FencingToken, LockGrant } from '../../../contract/records.js';
import type { HeldLock, LockStore, TryAcquireResult } from '../../../lock/store/spi.js';

export const PLANTED_BUGS = ['release-ignores-token', 'server-clock-expiry', 'double-grant', 'per-key-tokens'] as const;
export type PlantedBug = (typeof PLANTED_BUGS)[number];

const AUDIT = { actor: 'planted-bug', requestId: 'planted-bug', reason: 'planted bug (test only)' };

/** The store with `bug` planted; every other call goes through unchanged (optional capabilities included). */
export function plantBug(bug: PlantedBug, store: LockStore, options: { skewMillis?: number } = {}): LockStore {
  const overrides = overridesFor(bug, store, options.skewMillis ?? 1500);
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (typeof prop === 'string' && prop in overrides) return overrides[prop as keyof Overrides];
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

type Overrides = Partial<Pick<LockStore, 'tryAcquire' | 'release' | 'renew' | 'readLock' | 'forceRevoke'>>;

function overridesFor(bug: PlantedBug, store: LockStore, skewMillis: number): Overrides {
  /** Take the key from its holder (the row deleted under it), then acquire as asked. */
  const steal = async (req: Parameters<LockStore['tryAcquire']>[0], holder: HeldLock): Promise<TryAcquireResult> => {
    await store.forceRevoke({ key: req.key, expectedFencingToken: holder.fencingToken, audit: AUDIT });
    return store.tryAcquire(req);
  };
  switch (bug) {
    case 'release-ignores-token':
      return {
        release: async (req) => {
          const result = await store.release(req);
          if (result.kind !== 'lost') return result;
          const holder = await store.readLock(req.key);
          if (!holder) return result;
          const revoked = await store.forceRevoke({ key: req.key, expectedFencingToken: holder.fencingToken, audit: AUDIT });
          return revoked.revoked ? { kind: 'released', lock: revoked.revoked } : result;
        },
      };
    case 'server-clock-expiry':
      return {
        tryAcquire: async (req) => {
          const result = await store.tryAcquire(req);
          if (result.kind === 'held' && result.holder.expiresAt < Date.now() + skewMillis) return steal(req, result.holder);
          return result;
        },
      };
    case 'double-grant':
      return {
        tryAcquire: async (req) => {
          const result = await store.tryAcquire(req);
          if (result.kind === 'held' && Date.now() - result.holder.grantedAt < 300) return steal(req, result.holder);
          return result;
        },
      };
    case 'per-key-tokens':
      return perKeyTokens(store);
  }
}

function perKeyTokens(store: LockStore): Overrides {
  const counters = new Map<string, number>();
  const toFake = new Map<string, string>(); // real token → per-key token
  const toReal = new Map<string, string>(); // `${key} ${fake}` → real token
  const fakeOf = (key: string, real: FencingToken): FencingToken => {
    let fake = toFake.get(real);
    if (fake === undefined) {
      fake = String((counters.get(key) ?? 0) + 1);
      counters.set(key, Number(fake));
      toFake.set(real, fake);
      toReal.set(`${key} ${fake}`, real);
    }
    return fake;
  };
  const realOf = (key: string, fake: FencingToken) => toReal.get(`${key} ${fake}`) ?? '0';
  const grant = <T extends LockGrant>(g: T): T => ({ ...g, fencingToken: fakeOf(g.key, g.fencingToken) });
  return {
    tryAcquire: async (req) => {
      const result = await store.tryAcquire(req);
      if (result.kind === 'granted') return { ...result, grant: grant(result.grant) };
      if (result.kind === 'held') return { ...result, holder: grant(result.holder) };
      return result;
    },
    renew: async (req) => {
      const result = await store.renew({ ...req, fencingToken: realOf(req.key, req.fencingToken) });
      return result.kind === 'renewed' ? { ...result, lock: grant(result.lock) } : result;
    },
    release: async (req) => {
      const result = await store.release({ ...req, fencingToken: realOf(req.key, req.fencingToken) });
      return result.kind === 'released' ? { ...result, lock: grant(result.lock) } : result;
    },
    readLock: async (key) => {
      const held = await store.readLock(key);
      return held ? grant(held) : null;
    },
    forceRevoke: async (req) => {
      const result = await store.forceRevoke({
        ...req,
        ...(req.expectedFencingToken !== undefined ? { expectedFencingToken: realOf(req.key, req.expectedFencingToken) } : {}),
      });
      return { ...result, ...(result.revoked ? { revoked: grant(result.revoked) } : {}), ...(result.holder ? { holder: grant(result.holder) } : {}) };
    },
  };
}
