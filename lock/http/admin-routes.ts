/**
 * A1–A6 and the admin reads beside them (audit verify, whoami, summary): viewer
 * routes read, operator routes (A3 revoke, A6 kill) act and are audited under
 * the token's name. The auth hook (auth.ts) has set `request.admin` by now.
 * A scoped token (issue 26) reads and acts only within its prefixes (key-scope.ts).
 */
import { keyInScope } from '../../contract/policies.js';
import type { LockInfo } from '../../contract/records.js';
import type { LockService } from '../core/lock-service.js';
import { ValidationFailedError } from '../errors.js';
import type { SessionOpener } from './deps.js';
import { assertKeyInScope, assertSessionInScope, filteredPage, locksInScope, scopedPrefixes, type Scope } from './key-scope.js';
import { auditActorOf, bodyOf, eventContext, keyOf, sessionIdParam } from './request-context.js';
import { routeSchemas, type HttpApp } from './schemas.js';
import { buildSummary, type RecentActivity } from './summary.js';
import { checkFencingToken, parseLimit } from './validation.js';

export interface AdminRouteDeps {
  service: LockService;
  activity: RecentActivity;
  /** A6 by a scoped operator: who opened the session, and that token's prefixes now. */
  openerOf: SessionOpener;
  prefixesOf: (tokenName: string) => Scope;
}

export function registerAdminRoutes(app: HttpApp, deps: AdminRouteDeps): void {
  const { service, activity } = deps;
  app.get('/v1/admin/locks', { schema: routeSchemas.listLocks, config: { role: 'viewer' } }, async (request) => {
    const q = request.query as { prefix?: string; limit?: string; cursor?: string; sort?: 'key' | 'age' };
    const limit = parseLimit(q.limit);
    const scope = request.scope;
    if (q.sort === 'age') {
      if (q.cursor) throw new ValidationFailedError('sort=age answers one page of the oldest grants; it takes no cursor');
      if (!scope) return { items: await service.oldestLocks(limit, q.prefix || undefined), nextCursor: null };
      const each = await Promise.all(scopedPrefixes(scope, q.prefix).map((prefix) => service.oldestLocks(limit, prefix)));
      return { items: each.flat().sort(byAge).slice(0, limit), nextCursor: null };
    }
    const list = (prefix: string | undefined, pageLimit: number, cursor: string | undefined) =>
      service.listLocks({ limit: pageLimit, ...(prefix ? { prefix } : {}), ...(cursor ? { cursor } : {}) });
    if (!scope) return list(q.prefix, limit, q.cursor);
    const prefixes = scopedPrefixes(scope, q.prefix);
    if (prefixes.length === 0) return { items: [], nextCursor: null };
    // One prefix covers the request: the store lists exactly the keys in scope.
    if (prefixes.length === 1) return list(prefixes[0], limit, q.cursor);
    return filteredPage((n, cursor) => list(q.prefix, n, cursor), (lock) => keyInScope(scope, lock.key), limit, q.cursor);
  });

  app.get('/v1/admin/sessions', { schema: routeSchemas.listSessions, config: { role: 'viewer' } }, async (request) => {
    const q = request.query as { limit?: string; cursor?: string };
    const limit = parseLimit(q.limit);
    const scope = request.scope;
    if (!scope) return service.listSessions({ limit, ...(q.cursor ? { cursor: q.cursor } : {}) });
    // Sessions holding nothing in scope are hidden; those shown count only what they hold in scope.
    const { holders } = await locksInScope(service, scope);
    const page = await filteredPage(
      (n, cursor) => service.listSessions({ limit: n, ...(cursor ? { cursor } : {}) }),
      (session) => holders.has(session.sessionId),
      limit,
      q.cursor,
    );
    return { items: page.items.map((session) => ({ ...session, lockCount: holders.get(session.sessionId)! })), nextCursor: page.nextCursor };
  });

  app.post('/v1/admin/locks/:key/revoke', { schema: routeSchemas.revoke, config: { role: 'operator' } }, async (request) => {
    const key = keyOf(request);
    assertKeyInScope(request.scope, key);
    const body = bodyOf<{ reason: string; expectedFencingToken?: string }>(request);
    return service.forceRevoke(
      {
        key,
        reason: body.reason,
        ...(body.expectedFencingToken !== undefined
          ? { expectedFencingToken: checkFencingToken(body.expectedFencingToken, 'expectedFencingToken') }
          : {}),
      },
      auditActorOf(request),
      eventContext(request),
    );
  });

  app.get('/v1/admin/audit', { schema: routeSchemas.audit, config: { role: 'viewer' } }, async (request) => {
    const q = request.query as { limit?: string; cursor?: string; actor?: string; action?: string; target?: string };
    const list = (limit: number, cursor: string | undefined) =>
      service.listAudit({
        limit,
        ...(cursor ? { cursor } : {}),
        ...(q.actor ? { actor: q.actor } : {}),
        ...(q.action ? { action: q.action } : {}),
        ...(q.target ? { target: q.target } : {}),
      });
    const scope = request.scope;
    if (!scope) return list(parseLimit(q.limit), q.cursor);
    // A scoped viewer sees revokes of keys in scope. A kill's target is a session id whose keys the
    // entry does not record, so kills are not shown to a scoped token (the safe side).
    return filteredPage(list, (entry) => entry.action === 'lock.revoke' && keyInScope(scope, entry.target), parseLimit(q.limit), q.cursor);
  });

  app.get('/v1/admin/audit/verify', { schema: routeSchemas.verifyAudit, config: { role: 'viewer' } }, async () => service.verifyAudit());

  // Who the presented token is: the console shows it and disables what the role may not do.
  // A scoped token's prefixes too (issue 26): `holdfast status` and the console show the scope.
  app.get('/v1/admin/whoami', { schema: routeSchemas.whoami, config: { role: 'viewer' } }, async (request) => {
    const { name, role, prefixes } = request.admin!;
    return { name, role, ...(prefixes ? { prefixes: [...prefixes] } : {}) };
  });

  app.get('/v1/admin/summary', { schema: routeSchemas.summary, config: { role: 'viewer' } }, async (request) => {
    const scope = request.scope;
    if (!scope) return buildSummary(service, activity);
    return buildSummary(service, activity, async () => {
      const { locks, holders } = await locksInScope(service, scope);
      return { heldLocks: locks.length, activeSessions: holders.size, waiters: locks.reduce((sum, lock) => sum + lock.waiterCount, 0) };
    });
  });

  app.post('/v1/admin/sessions/:sessionId/kill', { schema: routeSchemas.killSession, config: { role: 'operator' } }, async (request) => {
    const sessionId = sessionIdParam(request);
    if (request.scope) await assertSessionInScope(request.scope, sessionId, { ...deps, service });
    return service.killSession(sessionId, bodyOf<{ reason: string }>(request).reason, auditActorOf(request), eventContext(request));
  });
}

/** Oldest grant first, as A1's sort=age (ties by key). */
function byAge(a: LockInfo, b: LockInfo): number {
  return (a.grantedAt ?? 0) - (b.grantedAt ?? 0) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}
