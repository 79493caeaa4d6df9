/**
 * L4–L7: acquire (with a bounded server-side wait), renew, release, read (C3).
 * L4/L5/L6 run inside their server span (request.measured) and name the fencing
 * token to it; the hooks (hooks.ts) record their answers.
 */
import type { LockService } from '../core/lock-service.js';
import { assertKeyInScope } from './key-scope.js';
import { bodyOf, credentialOf, eventContext, inSpan, keyOf } from './request-context.js';
import { routeSchemas, type HttpApp } from './schemas.js';
import { WATCH_MILLIS } from '../../contract/wire-rules.js';
import { checkFencingToken, checkHolding, checkLockValue, parseMillis } from './validation.js';
import type { LockMode } from '../../contract/records.js';

export interface LockRouteDeps {
  service: LockService;
  /** Draining: waiting acquires end at once with the signal's reason. */
  shutdownSignal: AbortSignal;
}

export function registerLockRoutes(app: HttpApp, deps: LockRouteDeps): void {
  const { service, shutdownSignal } = deps;

  app.post('/v1/locks/:key/acquire', { schema: routeSchemas.acquire, config: { measured: 'acquire' } }, async (request, reply) => {
    const key = keyOf(request);
    const body = bodyOf<{ sessionId: string; ttlMillis?: number; waitMillis?: number; value?: string; mode?: LockMode; limit?: number }>(request);
    const value = checkLockValue(body.value);
    const holding = checkHolding(body.mode, body.limit);
    const acquire = (signal?: AbortSignal) =>
      // The server span continues the caller's trace when it sent one (the SDK's lock.acquire span).
      inSpan(request, () =>
        service.acquire(
          {
            key,
            session: credentialOf(request, body.sessionId),
            // Absent: the key's policy's default, else the server's (core decides, lock-policies.ts).
            ...(body.ttlMillis !== undefined ? { ttlMillis: body.ttlMillis } : {}),
            waitMillis: body.waitMillis ?? 0,
            ...(value !== undefined ? { value } : {}),
            ...holding,
          },
          eventContext(request),
          signal,
        ),
      );
    // A try without a wait has nothing to abort: it costs no controller and no listeners (the hot
    // path); a caller leaving mid-try is still seen by the onRequestAbort hook.
    if (!body.waitMillis) {
      const grant = await acquire();
      request.measured?.fencingToken(grant.fencingToken);
      return grant;
    }
    const abort = new AbortController();
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) {
        request.clientGone = true;
        abort.abort(new Error('client went away'));
      }
    });
    // Shutdown reaches this request through a listener removed when it ends: combining with the
    // process-lifetime signal (AbortSignal.any) would keep an entry per request alive on Node 20.
    const onShutdown = () => abort.abort(shutdownSignal.reason);
    shutdownSignal.addEventListener('abort', onShutdown, { once: true });
    try {
      const grant = await acquire(abort.signal);
      request.measured?.fencingToken(grant.fencingToken);
      return grant;
    } finally {
      shutdownSignal.removeEventListener('abort', onShutdown);
    }
  });

  app.post('/v1/locks/:key/renew', { schema: routeSchemas.renew, config: { measured: 'renew' } }, async (request) => {
    const key = keyOf(request);
    const body = bodyOf<{ sessionId: string; fencingToken: string; ttlMillis?: number; value?: string }>(request);
    const fencingToken = checkFencingToken(body.fencingToken);
    const value = checkLockValue(body.value);
    request.measured?.fencingToken(fencingToken);
    return inSpan(request, () =>
      service.renew(
        {
          key,
          session: credentialOf(request, body.sessionId),
          fencingToken,
          // Absent: the grant keeps its own TTL (never the default, which could shorten it).
          ...(body.ttlMillis !== undefined ? { ttlMillis: body.ttlMillis } : {}),
          ...(value !== undefined ? { value } : {}),
        },
        eventContext(request),
      ),
    );
  });

  app.post('/v1/locks/:key/release', { schema: routeSchemas.release, config: { measured: 'release' } }, async (request) => {
    const key = keyOf(request);
    const body = bodyOf<{ sessionId: string; fencingToken: string }>(request);
    const fencingToken = checkFencingToken(body.fencingToken);
    request.measured?.fencingToken(fencingToken);
    return inSpan(request, () =>
      service.release({ key, session: credentialOf(request, body.sessionId), fencingToken }, eventContext(request)),
    );
  });

  // A scoped token reads only keys in its scope (L8 has L7's access and this check).
  app.get('/v1/locks/:key', { schema: routeSchemas.readLock, config: { clientGate: true } }, async (request) => {
    const key = keyOf(request);
    assertKeyInScope(request.scope, key);
    return service.readLock(key);
  });

  app.get('/v1/locks/:key/watch', { schema: routeSchemas.watchLock, config: { clientGate: true } }, async (request, reply) => {
    const key = keyOf(request);
    assertKeyInScope(request.scope, key);
    const query = request.query as { after?: string; waitMillis?: string; untilHeld?: 'true' | 'false' };
    // `untilHeld` (an extension of L8): a free key is a state to wait out, so `after` 0 parks too.
    const after = query.after === undefined ? (query.untilHeld === 'true' ? '0' : undefined) : checkFencingToken(query.after, 'after');
    const untilHeld = query.untilHeld === 'true';
    const waitMillis = parseMillis(query.waitMillis, WATCH_MILLIS, 'waitMillis');
    // A watch parks: the caller leaving or the server draining ends it (answered, or dropped with the socket).
    const stop = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) stop.abort();
    };
    const onShutdown = () => stop.abort();
    reply.raw.on('close', onClose);
    shutdownSignal.addEventListener('abort', onShutdown, { once: true });
    try {
      return await service.watchLock(key, after, waitMillis, stop.signal, untilHeld);
    } finally {
      reply.raw.off('close', onClose);
      shutdownSignal.removeEventListener('abort', onShutdown);
    }
  });
}
