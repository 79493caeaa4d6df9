/**
 * Admin routes for operator insight (issue 14), all viewer role: A7 most contended
 * keys, the per-key recent history, and the wait-for graph. Registered by
 * buildHttpServer, so the same auth hook, validation and error exit apply.
 */
import type { FastifyRequest } from 'fastify';
import { CONTENTION_TOP_LIMIT, HISTORY_LIMIT } from '../../contract/wire-rules.js';
import type { LockService } from '../core/lock-service.js';
import { ValidationFailedError } from '../errors.js';
import { routeSchemas, type HttpApp } from './schemas.js';
import { decodeKeySegment, parseLimit } from './validation.js';

export function registerInsightRoutes(app: HttpApp, service: LockService): void {
  app.get('/v1/admin/contention', { schema: routeSchemas.contention, config: { role: 'viewer' } }, async (request) => {
    const q = request.query as { limit?: string };
    return service.topContended(parseLimit(q.limit, CONTENTION_TOP_LIMIT.default, CONTENTION_TOP_LIMIT.max));
  });

  app.get('/v1/admin/locks/:key/history', { schema: routeSchemas.keyHistory, config: { role: 'viewer' } }, async (request) => {
    const q = request.query as { limit?: string };
    return service.keyHistory(historyKeyOf(request), parseLimit(q.limit, HISTORY_LIMIT.default, HISTORY_LIMIT.max));
  });

  app.get('/v1/admin/waits', { schema: routeSchemas.waits, config: { role: 'viewer' } }, async () => service.waitGraph());
}

/** The key from the raw path (the router's decoding would split an encoded `/`). */
function historyKeyOf(request: FastifyRequest): string {
  const raw = /^\/v1\/admin\/locks\/([^/?#]+)\/history/.exec(request.url)?.[1];
  if (raw === undefined) throw new ValidationFailedError('lock key missing from the path');
  return decodeKeySegment(raw);
}
