/**
 * Admin routes for operator insight (issue 14), all viewer role: A7 most contended
 * keys, the per-key recent history, and the wait-for graph. Registered by
 * buildHttpServer, so the same auth hook, validation and error exit apply.
 * A scoped token (issue 26) sees only its keys and the sessions waiting on or holding them.
 */
import type { FastifyRequest } from 'fastify';
import type { WaitGraph } from '../../contract/insight.js';
import { keyInScope } from '../../contract/policies.js';
import { CONTENTION_TOP_LIMIT, HISTORY_LIMIT } from '../../contract/wire-rules.js';
import type { LockService } from '../core/lock-service.js';
import { ValidationFailedError } from '../errors.js';
import { assertKeyInScope } from './key-scope.js';
import { rawPathOf } from './request-context.js';
import { routeSchemas, type HttpApp } from './schemas.js';
import { decodeKeySegment, parseLimit } from './validation.js';

/** The most keys A7 ranks for a scoped token before filtering (the top-K summary's counter capacity). */
const SCOPED_CONTENTION_RANKS = 1024;

export function registerInsightRoutes(app: HttpApp, service: LockService): void {
  app.get('/v1/admin/contention', { schema: routeSchemas.contention, config: { role: 'viewer' } }, async (request) => {
    const q = request.query as { limit?: string };
    const limit = parseLimit(q.limit, CONTENTION_TOP_LIMIT.default, CONTENTION_TOP_LIMIT.max);
    const scope = request.scope;
    if (!scope) return service.topContended(limit);
    // Rank deeper until `limit` keys in scope are found or the ranking runs out.
    for (let ranks = limit; ; ranks = Math.min(ranks * 4, SCOPED_CONTENTION_RANKS)) {
      const top = await service.topContended(ranks);
      const items = top.items.filter((item) => keyInScope(scope, item.key));
      if (items.length >= limit || top.items.length < ranks || ranks >= SCOPED_CONTENTION_RANKS) {
        return { windowMillis: top.windowMillis, items: items.slice(0, limit) };
      }
    }
  });

  app.get('/v1/admin/locks/:key/history', { schema: routeSchemas.keyHistory, config: { role: 'viewer' } }, async (request) => {
    const q = request.query as { limit?: string };
    const key = historyKeyOf(request);
    assertKeyInScope(request.scope, key);
    return service.keyHistory(key, parseLimit(q.limit, HISTORY_LIMIT.default, HISTORY_LIMIT.max));
  });

  app.get('/v1/admin/waits', { schema: routeSchemas.waits, config: { role: 'viewer' } }, async (request) => {
    const graph = await service.waitGraph();
    return request.scope ? scopedWaitGraph(graph, request.scope) : graph;
  });
}

/**
 * The waits on keys in scope, and only the cycles (and broken ones) made of sessions and keys
 * seen there, so no session or key outside the scope is named.
 */
function scopedWaitGraph(graph: WaitGraph, scope: readonly string[]): WaitGraph {
  const items = graph.items.filter((edge) => keyInScope(scope, edge.key));
  const seen = new Set(items.flatMap((edge) => [edge.waiterSessionId, ...(edge.holderSessionId ? [edge.holderSessionId] : [])]));
  return {
    scope: graph.scope,
    items,
    cycles: graph.cycles.filter((cycle) => cycle.every((sessionId) => seen.has(sessionId))),
    broken: graph.broken.filter((cycle) => cycle.keys.every((key) => keyInScope(scope, key)) && keyInScope(scope, cycle.key)),
  };
}

/** The key from the raw path (the router's decoding would split an encoded `/`). */
function historyKeyOf(request: FastifyRequest): string {
  const raw = /^\/v1\/admin\/locks\/([^/?#]+)\/history/.exec(rawPathOf(request))?.[1];
  if (raw === undefined) throw new ValidationFailedError('lock key missing from the path');
  return decodeKeySegment(raw);
}
