/**
 * Route access before anything else: admin routes need a bearer token of the
 * route's role, and L1/L7 a token of any role once the tokens file has `client`
 * entries. It runs on the request (before the body is parsed or validated), so an
 * unauthenticated caller learns nothing about the schema. Session tokens (L2–L6)
 * are checked by the core against the session the route names. A scoped token's prefixes ride on
 * the request (`request.scope`) for the routes to apply (key-scope.ts).
 */
import type { AdminTokens } from '../admin-tokens.js';
import { ForbiddenError, UnauthenticatedError } from '../errors.js';
import { bearerOf } from './request-context.js';
import type { HttpApp } from './schemas.js';

export function registerAuth(app: HttpApp, tokens: AdminTokens): void {
  app.addHook('onRequest', async (request) => {
    const { role, clientGate } = request.routeOptions.config;
    if (clientGate && tokens.clientsRequired) {
      const presented = bearerOf(request);
      if (presented === undefined) throw new UnauthenticatedError('this server needs Authorization: Bearer <client token>');
      const identity = tokens.identify(presented);
      if (!identity) throw new UnauthenticatedError('unknown client token');
      request.clientTokenName = identity.name;
      if (identity.prefixes) request.scope = identity.prefixes;
      return;
    }
    if (clientGate) {
      // An open L1/L7 still honours a scope: a scoped token presented there (the console reads L7
      // with the signed-in token) reads only its keys. A caller without a token is as before.
      const presented = bearerOf(request);
      const identity = presented === undefined ? null : tokens.identify(presented);
      if (identity?.prefixes) request.scope = identity.prefixes;
      return;
    }
    if (!role) return;
    const presented = bearerOf(request);
    if (presented === undefined) throw new UnauthenticatedError('admin routes need Authorization: Bearer <token>');
    const identity = tokens.identify(presented);
    if (!identity) throw new UnauthenticatedError('unknown admin token');
    if (identity.role === 'client') throw new ForbiddenError(`${identity.name} is a client token; admin routes need viewer or operator`);
    if (role === 'operator' && identity.role !== 'operator') {
      throw new ForbiddenError(`${identity.name} is a viewer; this action needs the operator role`);
    }
    request.admin = { name: identity.name, role: identity.role, ...(identity.prefixes ? { prefixes: identity.prefixes } : {}) };
    if (identity.prefixes) request.scope = identity.prefixes;
  });
}
