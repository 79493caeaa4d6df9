/**
 * A restored store never re-issues a token (issue 25): the store as the server serves it, with
 * every write refused while the store's TokenFloor says it was restored and not advanced.
 *
 * - Refused (StoreRestoredError, 503 NOT_LEADER naming `holdfast tokens advance`): every call that
 *   draws a token or changes a session or lock, so nothing of the restored past moves and no token
 *   comes from the rewound sequence.
 * - The sweeper's calls answer "nothing ended": ending a restored lock could hand the key to a
 *   recorded wait, which draws a token.
 * - Reads, the audit reads and ping (readiness) are served: operators see what the backup held.
 * - The fleet registry and wait rows draw no token and pass through.
 *
 * The check runs when the store is wrapped; while restored, each refused call checks again (one
 * short read), so an advance run by another process — the CLI on PostgreSQL — is seen at the next
 * write without a restart. A store restored underneath running servers is not seen by them: stop
 * every instance before a restore (runbooks/restored-store-refuses-writes.md).
 */
import { StoreRestoredError } from '../errors.js';
import type { LockStore, StoreIdentityCheck } from './spi.js';

type StoreMethod = keyof LockStore;

const WRITES: ReadonlySet<StoreMethod> = new Set<StoreMethod>([
  'openSession',
  'heartbeat',
  'closeSession',
  'killSession',
  'tryAcquire',
  'renew',
  'release',
  'forceRevoke',
  'pruneAudit',
]);

const SWEEPS: ReadonlySet<StoreMethod> = new Set<StoreMethod>(['expireSessions', 'expireLocks']);

export interface RestoreGuardEvents {
  /** The store was found restored (once per finding). */
  restored(check: StoreIdentityCheck): void;
  /** An advance was seen: writes are served again. */
  advanced(check: StoreIdentityCheck): void;
}

/** `store` guarded by its token floor's check; a store without one is returned as it is. */
export async function guardRestoredStore<S extends LockStore>(store: S, events: RestoreGuardEvents): Promise<S> {
  const floor = store.tokenFloor;
  if (!floor) return store;
  let restored = false;
  const observe = (check: StoreIdentityCheck): boolean => {
    const now = check.state === 'restored';
    if (now && !restored) events.restored(check);
    if (!now && restored) events.advanced(check);
    restored = now;
    return now;
  };
  observe(await floor.check());

  /** True while the store is still restored (checked again, since an advance may have run elsewhere). */
  const stillRestored = async (): Promise<boolean> => restored && observe(await floor.check());

  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      const method = property as StoreMethod;
      if (WRITES.has(method)) {
        return async (...args: unknown[]) => {
          if (await stillRestored()) throw new StoreRestoredError();
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      }
      if (SWEEPS.has(method)) {
        return async (...args: unknown[]) => {
          if (await stillRestored()) return [];
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      }
      return value.bind(target);
    },
  });
}
