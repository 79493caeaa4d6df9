/**
 * The store as core sees it: every SPI call feeds the StoreHealth, and while the
 * store is counted down most calls are refused at once (NotLeaderError, 503 with
 * Retry-After) instead of each waiting out a connect or statement timeout.
 *
 * - Always sent, even while down: heartbeat and renew (one may save a session or
 *   a lock the moment the store answers again) and ping (readiness).
 * - Refused at once while down: everything else that reads or writes the store.
 * - Not timed and not gated: lifecycle (init, close), the long waits that end on
 *   their own (waitForRelease, subscribeReleases) and the audit chain stream.
 *
 * A call that outlives `callTimeoutMillis` is answered NOT_LEADER and turns the
 * state down: a hung store (connections accepted, nothing answered) looks like a
 * refused one. The call itself may still complete later (a grant answered 503 may
 * exist); every such case is one the store's own timeouts already produce, and the
 * SDK's idempotent retry of L4 returns the existing grant.
 */
import { NotLeaderError } from '../errors.js';
import type { FleetWaitState, LockStore, ReleaseFeed, ReleaseWaiter } from '../store/spi.js';
import type { StoreHealth } from './store-health.js';

type StoreMethod = keyof LockStore | keyof FleetWaitState | keyof ReleaseWaiter | keyof ReleaseFeed;

/** Tried whatever the health says: their success may save a session or a lock. */
const ALWAYS_TRIED: ReadonlySet<StoreMethod> = new Set<StoreMethod>(['heartbeat', 'renew', 'ping']);

/** Refused at once while the store is down; timed otherwise. */
const GATED: ReadonlySet<StoreMethod> = new Set<StoreMethod>([
  'openSession',
  'getSession',
  'closeSession',
  'killSession',
  'expireSessions',
  'expireLocks',
  'listSessions',
  'tryAcquire',
  'release',
  'readLock',
  'listLocks',
  'forceRevoke',
  'listAudit',
  'readAuditHead',
  'summary',
  'heartbeatInstance',
  'leaveFleet',
  'expireInstances',
  'instancePublications',
  'beginWait',
  'endWait',
  'waiterCounts',
  'totalWaiters',
  'waitForEdges',
  'resolveDeadlocks',
  'deadlockVictims',
]);

export function healthCheckedStore<S extends LockStore>(store: S, health: StoreHealth): S {
  const wrappers = new Map<PropertyKey, (...args: unknown[]) => Promise<unknown>>();
  const wrap = (property: StoreMethod, gated: boolean) => {
    const wrapper = (...args: unknown[]): Promise<unknown> => {
      if (gated && !health.up) {
        return Promise.reject(new NotLeaderError(`the ${store.backend} store is unreachable (${health.cause}); retry after it returns`));
      }
      const method = Reflect.get(store, property) as (...a: unknown[]) => Promise<unknown>;
      return timed(method.apply(store, args), String(property));
    };
    wrappers.set(property, wrapper);
    return wrapper;
  };

  const timed = <T>(call: Promise<T>, what: string): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      let settled = false;
      const timeoutMillis = health.options.callTimeoutMillis;
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        const message = `the ${store.backend} store did not answer ${what} within ${timeoutMillis} ms`;
        health.failed(message);
        reject(new NotLeaderError(message));
      }, timeoutMillis);
      call.then(
        (value) => {
          clearTimeout(timer);
          if (settled) return;
          settled = true;
          health.succeeded();
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          if (settled) return;
          settled = true;
          // Only "cannot reach / cannot take writes" says anything about the store's health;
          // a bug or a refused value is the caller's problem.
          if (error instanceof NotLeaderError) health.failed(error.message);
          reject(error);
        },
      );
    });

  return new Proxy(store, {
    get(target, property, receiver) {
      const cached = wrappers.get(property);
      if (cached) return cached;
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      const method = property as StoreMethod;
      if (ALWAYS_TRIED.has(method)) return wrap(method, false);
      if (GATED.has(method)) return wrap(method, true);
      return value.bind(target);
    },
  });
}
