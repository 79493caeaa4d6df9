/**
 * Wraps a LockStore so every SPI call is timed into `lock_store_seconds` and
 * traced as a child span, without the store or core knowing. Optional
 * capabilities (releaseWaiter, releaseFeed, fleet) pass through untimed,
 * and only when the inner store has them.
 */
import { SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { LockStore } from '../lock/store/spi.js';
import type { StoreOp, StoreOutcome } from '../contract/metric-table.js';
import type { ServerMetrics } from './server-metrics.js';
import { tracingActive } from './trace-context.js';

const OPS: Partial<Record<keyof LockStore, StoreOp>> = {
  openSession: 'open_session',
  heartbeat: 'heartbeat',
  getSession: 'heartbeat',
  authenticateSession: 'heartbeat',
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
  // One wrapper per SPI method, built once (not per call).
  const wrappers = new Map<PropertyKey, (...args: unknown[]) => Promise<unknown>>();
  const wrapperOf = (target: LockStore, property: keyof LockStore, op: StoreOp) => {
    const timed = async (span: Span | null, args: unknown[]) => {
      const started = performance.now();
      let outcome: StoreOutcome = 'ok';
      try {
        // Looked up per call: the store beneath may itself be a proxy that changes its answer.
        const method = Reflect.get(target, property) as (...a: unknown[]) => Promise<unknown>;
        return await method.apply(target, args);
      } catch (error) {
        outcome = (error as { code?: string }).code === 'NOT_LEADER' ? 'not_leader' : 'error';
        span?.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
        span?.setAttribute('error.type', outcome);
        throw error;
      } finally {
        metrics.observe('lockStoreSeconds', { op, outcome }, (performance.now() - started) / 1000);
        span?.end();
      }
    };
    const attributes = { 'lock.backend': store.backend };
    const wrapper = (...args: unknown[]) =>
      // Tracing off: no span, no context switch; the metric is kept.
      tracingActive() ? tracer.startActiveSpan(`store.${op}`, { attributes }, (span) => timed(span, args)) : timed(null, args);
    wrappers.set(property, wrapper);
    return wrapper;
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      const cached = wrappers.get(property);
      if (cached) return cached;
      const value = Reflect.get(target, property, receiver);
      const op = OPS[property as keyof LockStore];
      if (typeof value !== 'function') return value;
      if (!op) return value.bind(target);
      return wrapperOf(target, property as keyof LockStore, op);
    },
  });
}
