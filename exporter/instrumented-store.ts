/**
 * Wraps a LockStore so every SPI call is timed into `lock_store_seconds` and
 * traced as a child span, without the store or core knowing. The optional
 * ReleaseWaiter capability passes through only when the inner store has it.
 */
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { hasReleaseWaiter, type LockStore, type ReleaseWaiter } from '../lock/store/spi.js';
import type { StoreOp, StoreOutcome } from '../contract/metric-table.js';
import type { ServerMetrics } from './server-metrics.js';

const OPS: Partial<Record<keyof LockStore, StoreOp>> = {
  openSession: 'open_session',
  heartbeat: 'heartbeat',
  getSession: 'heartbeat',
  closeSession: 'end_session',
  killSession: 'end_session',
  expireSessions: 'expire_sessions',
  expireLocks: 'expire_locks',
  listSessions: 'list_sessions',
  tryAcquire: 'try_acquire',
  renew: 'renew',
  release: 'release',
  readLock: 'read_lock',
  listLocks: 'list_locks',
  forceRevoke: 'force_revoke',
  listAudit: 'list_audit',
  summary: 'summary',
  ping: 'ping',
};

export function instrumentStore(store: LockStore, metrics: ServerMetrics): LockStore {
  const tracer = trace.getTracer('holdfast-store');
  const wrapped = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      const op = OPS[property as keyof LockStore];
      if (typeof value !== 'function' || !op) return typeof value === 'function' ? value.bind(target) : value;
      return (...args: unknown[]) =>
        tracer.startActiveSpan(`store.${op}`, { attributes: { 'lock.backend': store.backend } }, async (span) => {
          const started = performance.now();
          let outcome: StoreOutcome = 'ok';
          try {
            return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          } catch (error) {
            outcome = (error as { code?: string }).code === 'NOT_LEADER' ? 'not_leader' : 'error';
            span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
            span.setAttribute('error.type', outcome);
            throw error;
          } finally {
            metrics.observe('lockStoreSeconds', { op, outcome }, (performance.now() - started) / 1000);
            span.end();
          }
        });
    },
  });
  if (!hasReleaseWaiter(store)) {
    // The Proxy would expose waitForRelease as undefined anyway; make the absence explicit.
    return wrapped;
  }
  return wrapped as LockStore & ReleaseWaiter;
}
