/**
 * A1–A6 and the admin reads beside them (audit verify, whoami, summary): viewer
 * routes read, operator routes (A3 revoke, A6 kill) act and are audited under
 * the token's name. The auth hook (auth.ts) has set `request.admin` by now.
 */
import type { LockService } from '../core/lock-service.js';
import { ValidationFailedError } from '../errors.js';
import { bodyOf, eventContext, keyOf, sessionIdParam } from './request-context.js';
import { routeSchemas, type HttpApp } from './schemas.js';
import { buildSummary, type RecentActivity } from './summary.js';
import { checkFencingToken, parseLimit } from './validation.js';

export function registerAdminRoutes(app: HttpApp, service: LockService, activity: RecentActivity): void {
  app.get('/v1/admin/locks', { schema: routeSchemas.listLocks, config: { role: 'viewer' } }, async (request) => {
    const q = request.query as { prefix?: string; limit?: string; cursor?: string; sort?: 'key' | 'age' };
    if (q.sort === 'age') {
      if (q.cursor) throw new ValidationFailedError('sort=age answers one page of the oldest grants; it takes no cursor');
      return { items: await service.oldestLocks(parseLimit(q.limit), q.prefix || undefined), nextCursor: null };
    }
    return service.listLocks({
      limit: parseLimit(q.limit),
      ...(q.prefix ? { prefix: q.prefix } : {}),
      ...(q.cursor ? { cursor: q.cursor } : {}),
    });
  });

  app.get('/v1/admin/sessions', { schema: routeSchemas.listSessions, config: { role: 'viewer' } }, async (request) => {
    const q = request.query as { limit?: string; cursor?: string };
    return service.listSessions({ limit: parseLimit(q.limit), ...(q.cursor ? { cursor: q.cursor } : {}) });
  });

  app.post('/v1/admin/locks/:key/revoke', { schema: routeSchemas.revoke, config: { role: 'operator' } }, async (request) => {
    const key = keyOf(request);
    const body = bodyOf<{ reason: string; expectedFencingToken?: string }>(request);
    return service.forceRevoke(
      {
        key,
        reason: body.reason,
        ...(body.expectedFencingToken !== undefined
          ? { expectedFencingToken: checkFencingToken(body.expectedFencingToken, 'expectedFencingToken') }
          : {}),
      },
      request.admin!.name,
      eventContext(request),
    );
  });

  app.get('/v1/admin/audit', { schema: routeSchemas.audit, config: { role: 'viewer' } }, async (request) => {
    const q = request.query as { limit?: string; cursor?: string; actor?: string; action?: string; target?: string };
    return service.listAudit({
      limit: parseLimit(q.limit),
      ...(q.cursor ? { cursor: q.cursor } : {}),
      ...(q.actor ? { actor: q.actor } : {}),
      ...(q.action ? { action: q.action } : {}),
      ...(q.target ? { target: q.target } : {}),
    });
  });

  app.get('/v1/admin/audit/verify', { schema: routeSchemas.verifyAudit, config: { role: 'viewer' } }, async () => service.verifyAudit());

  // Who the presented token is: the console shows it and disables what the role may not do.
  app.get('/v1/admin/whoami', { schema: routeSchemas.whoami, config: { role: 'viewer' } }, async (request) => request.admin!);

  app.get('/v1/admin/summary', { schema: routeSchemas.summary, config: { role: 'viewer' } }, async () => buildSummary(service, activity));

  app.post(
    '/v1/admin/sessions/:sessionId/kill',
    { schema: routeSchemas.killSession, config: { role: 'operator' } },
    async (request) =>
      service.killSession(sessionIdParam(request), bodyOf<{ reason: string }>(request).reason, request.admin!.name, eventContext(request)),
  );
}
