/**
 * C3: query-string parameters a route does not list are refused (400 VALIDATION_FAILED). Routes with a
 * `querystring` schema list theirs; every other API route lists none, so it gets the empty one here.
 * Registered before the routes (an onRoute hook sees only routes declared after it).
 */
import { noQuery } from './schemas/insight.js';
import type { HttpApp } from './schemas.js';

export function refuseUnlistedQueries(app: HttpApp): void {
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v1/') || route.schema === undefined || route.schema.querystring !== undefined) return;
    route.schema = { ...route.schema, querystring: noQuery };
  });
}
