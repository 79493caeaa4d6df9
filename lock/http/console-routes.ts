/**
 * K1–K5 (v3, issue 25; an extension of the pinned surface): the console's sign-in codes and
 * sessions, kept by the lock server so console replicas share them (console-sign-in.ts has the
 * rules). K1, K3–K5 need a viewer or operator token (the auth hook checks it before the body is
 * read: nothing is recorded for an unauthenticated caller); K2 is open, the code being the
 * credential, and records nothing for a code that is not pending.
 */
import type { FastifyRequest } from 'fastify';
import type { LockService } from '../core/lock-service.js';
import { ERROR_CODE } from '../../contract/errors.js';
import { HoldfastError, UnauthenticatedError } from '../errors.js';
import { ConsoleSignIn } from './console-sign-in.js';
import { bodyOf } from './request-context.js';
import { routeSchemas, type HttpApp } from './schemas.js';

/** A console session that is not live for this token: ended, expired, or someone else's. */
class ConsoleSessionNotFoundError extends HoldfastError {
  readonly code = ERROR_CODE.SESSION_NOT_FOUND;
  constructor() {
    super('this console session is unknown, expired or signed out (for this token)');
  }
}

export function registerConsoleRoutes(app: HttpApp, service: LockService): void {
  const signIn = () => new ConsoleSignIn(service.store.consoleRecords);
  const issuer = (admin: NonNullable<FastifyRequest['admin']>) => ({ name: admin.name, role: admin.role });

  app.post('/v1/console/codes', { schema: routeSchemas.mintSignInCode, config: { role: 'viewer' } }, async (request, reply) => {
    const { sealedToken } = bodyOf<{ sealedToken: string }>(request);
    return reply.code(201).send(await signIn().mintCode(issuer(request.admin!), sealedToken));
  });

  app.post('/v1/console/codes/redeem', { schema: routeSchemas.redeemSignInCode }, async (request) => {
    const redemption = await signIn().redeemCode(bodyOf<{ code: string }>(request).code);
    if (redemption.outcome === 'REFUSED') throw new UnauthenticatedError('this sign-in code is unknown, used or expired, or its secret is wrong');
    return redemption;
  });

  app.post('/v1/console/sessions', { schema: routeSchemas.openConsoleSession, config: { role: 'viewer' } }, async (request, reply) => {
    const who = issuer(request.admin!);
    return reply.code(201).send({ ...(await signIn().openSession(who)), ...who });
  });

  app.get('/v1/console/sessions/:consoleSessionId', { schema: routeSchemas.checkConsoleSession, config: { role: 'viewer' } }, async (request) => {
    const { consoleSessionId } = request.params as { consoleSessionId: string };
    const who = issuer(request.admin!);
    const live = await signIn().checkSession(who.name, consoleSessionId);
    if (!live) throw new ConsoleSessionNotFoundError();
    return { consoleSessionId, ...who, expiresAt: live.expiresAt };
  });

  app.delete('/v1/console/sessions/:consoleSessionId', { schema: routeSchemas.closeConsoleSession, config: { role: 'viewer' } }, async (request, reply) => {
    const { consoleSessionId } = request.params as { consoleSessionId: string };
    await signIn().closeSession(request.admin!.name, consoleSessionId);
    return reply.code(204).send();
  });
}
