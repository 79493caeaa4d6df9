/**
 * The request lifecycle around every route: the request id and backend headers,
 * the L4/L5/L6 measurement from arrival to answer (through the HTTP telemetry
 * interface), refusing new acquires while draining, and closing connections
 * once shutdown began.
 */
import type { HttpServerDeps } from './deps.js';
import type { HttpApp } from './schemas.js';

export function registerRequestHooks(app: HttpApp, deps: Pick<HttpServerDeps, 'service' | 'telemetry' | 'shutdownSignal'>): void {
  const { service, telemetry, shutdownSignal } = deps;

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.header('holdfast-backend', service.backend);
    // Started before validation so malformed L4s are timed and traced like any other answer.
    const measured = request.routeOptions.config?.measured;
    if (measured) {
      request.measured = telemetry.beginMeasured(measured, request.headers);
      request.eventTrace = request.measured.trace;
    } else {
      request.eventTrace = telemetry.callerTrace(request.headers);
    }
    // Draining: no new acquires here (the caller retries on another instance); holders may still
    // renew and release, sessions still heartbeat, until the listener closes.
    if (shutdownSignal.aborted && measured === 'acquire') throw shutdownSignal.reason;
  });

  app.addHook('onResponse', async (request, reply) => {
    const { measured } = request;
    if (!measured) return;
    // A caller that left was never answered: S1 and the metric count answers only.
    if (request.clientGone) return measured.abandoned();
    measured.answered({
      status: reply.statusCode,
      ...(request.errorCode !== undefined ? { code: request.errorCode } : {}),
      seconds: reply.elapsedTime / 1000,
      ...(request.draining ? { draining: true } : {}),
    });
  });
  app.addHook('onRequestAbort', async (request) => {
    request.measured?.abandoned();
  });

  // While shutting down, every answer (including those of requests already in flight) closes its
  // connection: a kept-alive connection that turns idle after close() began would hold the exit.
  app.addHook('onSend', async (_request, reply, payload) => {
    if (shutdownSignal.aborted) reply.header('connection', 'close');
    return payload;
  });
}
