/**
 * The one exit of every failure: the pinned body `{"error": {code, message,
 * retryable}}` with `Retry-After` where the error has one. Framework 4xx are
 * malformed input (400 VALIDATION_FAILED), anything unknown a 500 reported
 * through the HTTP telemetry with its request id.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HttpTelemetry } from '../../contract/http-events.js';
import { DrainingError, HoldfastError, InternalError, RouteNotFoundError, ValidationFailedError } from '../errors.js';
import { BODY_LIMIT_BYTES } from './body-parsers.js';
import { eventContext } from './request-context.js';
import type { HttpApp } from './schemas.js';
import { noRouteMessage } from './validation.js';

export function registerErrorExit(app: HttpApp, telemetry: HttpTelemetry): void {
  app.setErrorHandler((error, request, reply) => sendError(reply, request, error, telemetry));
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, request, new RouteNotFoundError(noRouteMessage(request.method, request.url)), telemetry),
  );
}

export function sendError(reply: FastifyReply, request: FastifyRequest, error: unknown, telemetry: HttpTelemetry) {
  const failure = toHoldfastError(error);
  request.errorCode = failure.code;
  if (failure instanceof DrainingError) request.draining = true;
  // A caller that went away mid-wait is not a server bug: nothing to report.
  if (failure instanceof InternalError && !request.clientGone) {
    telemetry.requestFailed(eventContext(request), {
      method: request.method,
      route: request.routeOptions?.url ?? 'unknown',
      status: 500,
      message: (error as Error)?.stack ?? String(error),
    });
  }
  // Fastify asks to close the connection after a body it refused (too large, not JSON) because
  // the rest may still be coming. Closing with unread bytes makes the kernel answer them with a
  // reset, which can reach the caller before this answer does. Kept open instead, node reads and
  // discards the rest of the body and the caller reads its answer. A caller still sending when the
  // request timeout comes is cut off then, like any slow request. (While draining, the onSend hook
  // asks for the close again, on purpose.)
  if (reply.getHeader('connection') === 'close') reply.removeHeader('connection');
  if (failure.retryAfterSeconds !== undefined) reply.header('retry-after', String(failure.retryAfterSeconds));
  return reply.code(failure.status).type('application/json').send(failure.toBody());
}

/** Any failure to the pinned error shape: framework 4xx are malformed input, the rest a bug. */
function toHoldfastError(error: unknown): HoldfastError {
  if (error instanceof HoldfastError) return error;
  const e = error as { validation?: unknown; statusCode?: number; message?: string; code?: string };
  if (e.validation) return new ValidationFailedError(`invalid request: ${e.message}`);
  // C3: a body over the limit is malformed input like any other (400, not a 413 outside the table).
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new ValidationFailedError(`body is larger than ${BODY_LIMIT_BYTES} bytes`);
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new ValidationFailedError(`malformed request: ${e.message ?? e.code}`);
  }
  return new InternalError('internal error; see the server log for this request id');
}
