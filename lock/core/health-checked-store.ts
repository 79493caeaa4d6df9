/**
 * The store as core sees it: every SPI call feeds the StoreHealth, and while the
 * store is counted down most calls are refused at once (NotLeaderError, 503 with
 * Retry-After) instead of each waiting out a connect or statement timeout.
 *
 * - Always sent, even while down: heartbeat and renew (one may save a session or
 *   a lock the moment the store answers again) and ping (readiness).
 * - Refused at once while down: everything else that reads or writes the store.
 * - Not timed and not gated: lifecycle (init, close), the long waits that end on
 *   their own (releaseWaiter, releaseFeed) and the audit chain stream.
 * - The fleet wait state (`store.fleet`) is checked the same way, method by method.
 *
 * A call that outlives `callTimeoutMillis` (with no other call answered since it
 * was sent) makes the store suspect, and a ping that fails confirms it — a hung store
 * (connections accepted, nothing answered) looks like a refused one, and every
 * later request is answered at once — but the call itself is not abandoned: its
 * caller gets the store's own answer, bounded by the store's own timeouts
 * (PostgreSQL's connect and statement timeouts, etcd's request timeout and
 * election budget). Answering 503 for a write the store may still commit would
 * turn a release into a LOCK_LOST on its retry, and a wait's end into a wait row
 * left behind.
 */
import { NotLeaderError } from '../errors.js';
import type { FleetWaitState, LockStore } from '../store/spi.js';
import type { StoreHealth } from './store-health.js';

type StoreMethod = keyof LockStore | keyof FleetWaitState;

/**
 * Tried whatever the health says: a heartbeat or renewal may save a session or a lock; a wait's end
 * left unwritten would leave a wait row that counts as a waiter and as an edge of the wait-for graph.
 */
const ALWAYS_TRIED: ReadonlySet<StoreMethod> = new Set<StoreMethod>(['heartbeat', 'renew', 'ping', 'endWait']);

/** Refused at once while the store is down; timed otherwise. */
const GATED: ReadonlySet<StoreMethod> = new Set<StoreMethod>([
  'openSession',
  'authenticateSession',
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
  'pruneAudit',
  'readAuditHead',
  'summary',
  'heartbeatInstance',
  'leaveFleet',
  'expireInstances',
  'instancePublications',
  'beginWait',
  'waiterCounts',
  'totalWaiters',
  'waitForEdges',
  'resolveDeadlocks',
  'deadlockVictims',
]);

export function healthCheckedStore<S extends LockStore>(store: S, health: StoreHealth): S {
  const fleet = store.fleet ? healthChecked(store.fleet, store.backend, health) : undefined;
  return healthChecked(store, store.backend, health, fleet ? { fleet } : {});
}

/** `target` with its ALWAYS_TRIED methods timed and its GATED ones also refused while down; `replaced` properties swapped in. */
function healthChecked<T extends object>(target: T, backend: string, health: StoreHealth, replaced: Partial<Record<PropertyKey, unknown>> = {}): T {
  const wrappers = new Map<PropertyKey, (...args: unknown[]) => Promise<unknown>>();
  const wrap = (property: StoreMethod, gated: boolean) => {
    const wrapper = (...args: unknown[]): Promise<unknown> => {
      if (gated && !health.up) {
        return Promise.reject(new NotLeaderError(`the ${backend} store is unreachable (${health.cause}); retry after it returns`));
      }
      const method = Reflect.get(target, property) as (...a: unknown[]) => Promise<unknown>;
      let call: Promise<unknown>;
      try {
        call = method.apply(target, args);
      } catch (error) {
        call = Promise.reject(error);
      }
      return timed(call, String(property));
    };
    wrappers.set(property, wrapper);
    return wrapper;
  };

  const timed = <V>(call: Promise<V>, what: string): Promise<V> => {
    const timeoutMillis = health.options.callTimeoutMillis;
    const successesAtSend = health.successes;
    const timer = setTimeout(
      () => health.failed(`the ${backend} store did not answer ${what} within ${timeoutMillis} ms`, successesAtSend),
      timeoutMillis,
    );
    timer.unref(); // the call itself keeps the process alive while it matters
    return call.then(
      (value) => {
        clearTimeout(timer);
        health.succeeded();
        return value;
      },
      (error: unknown) => {
        clearTimeout(timer);
        // Only "cannot reach / cannot take writes" says anything about the store's health;
        // a bug or a refused value is the caller's problem.
        if (error instanceof NotLeaderError) health.failed(error.message, successesAtSend);
        throw error;
      },
    );
  };

  return new Proxy(target, {
    get(object, property, receiver) {
      if (Object.hasOwn(replaced, property)) return replaced[property];
      const cached = wrappers.get(property);
      if (cached) return cached;
      const value = Reflect.get(object, property, receiver);
      if (typeof value !== 'function') return value;
      const method = property as StoreMethod;
      if (ALWAYS_TRIED.has(method)) return wrap(method, false);
      if (GATED.has(method)) return wrap(method, true);
      return value.bind(object);
    },
  });
}
