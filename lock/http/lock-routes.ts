/**
 * L4–L7: acquire (with a bounded server-side wait), renew, release, read (C3).
 * L4/L5/L6 run inside their server span (request.measured) and name the fencing
 * token to it; the hooks (hooks.ts) record their answers.
 */
import type { LockService } from '../core/lock-service.js';
import { bodyOf, credentialOf, eventContext, inSpan, keyOf } from './request-context.js';
import { routeSchemas, type HttpApp } from './schemas.js';
import { checkFencingToken } from './validation.js';

export interface LockRouteDeps {
  service: LockService;
  /** Draining: waiting acquires end at once with the signal's reason. */
  shutdownSignal: AbortSignal;
}

export function registerLockRoutes(app: HttpApp, deps: LockRouteDeps): void {
  const { service, shutdownSignal } = deps;

  app.post('/v1/locks/:key/acquire', { schema: routeSchemas.acquire, config: { measured: 'acquire' } }, async (request, reply) => {
    const key = keyOf(request);
    const body = bodyOf<{ sessionId: string; ttlMillis?: number; waitMillis?: number }>(request);
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
    const body = bodyOf<{ sessionId: string; fencingToken: string; ttlMillis?: number }>(request);
    const fencingToken = checkFencingToken(body.fencingToken);
    request.measured?.fencingToken(fencingToken);
    return inSpan(request, () =>
      service.renew(
        {
          key,
          session: credentialOf(request, body.sessionId),
          fencingToken,
          // Absent: the grant keeps its own TTL (never the default, which could shorten it).
          ...(body.ttlMillis !== undefined ? { ttlMillis: body.ttlMillis } : {}),
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

  app.get('/v1/locks/:key', { schema: routeSchemas.readLock, config: { clientGate: true } }, async (request) => service.readLock(keyOf(request)));
}
