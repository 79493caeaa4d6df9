/**
 * A8 `GET /v1/admin/policies` (viewer; v3, issue 26): the lock policies in force, for the console's
 * policy filter and `holdfast policies ls`. Not scoped: a policy names a prefix and its limits, not a
 * key, an owner or a session.
 */
import type { LockPolicy } from '../../contract/policies.js';
import { routeSchemas, type HttpApp } from './schemas.js';

export function registerPolicyRoutes(app: HttpApp, policies: () => readonly LockPolicy[]): void {
  app.get('/v1/admin/policies', { schema: routeSchemas.listPolicies, config: { role: 'viewer' } }, async () => ({ items: [...policies()] }));
}
