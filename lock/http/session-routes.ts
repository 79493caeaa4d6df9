/** L1–L3: open a session, heartbeat it, close it (C3). */
import type { LockService } from '../core/lock-service.js';
import { bodyOf, credentialOf, eventContext, sessionIdParam } from './request-context.js';
import { routeSchemas, type HttpApp } from './schemas.js';
import { SESSION_TTL_MILLIS } from '../../contract/wire-rules.js';

export function registerSessionRoutes(app: HttpApp, service: LockService): void {
  app.post('/v1/sessions', { schema: routeSchemas.openSession, config: { clientGate: true } }, async (request, reply) => {
    const body = bodyOf<{ ttlMillis?: number; owner?: string }>(request);
    const session = await service.openSession(
      {
        ttlMillis: body.ttlMillis ?? SESSION_TTL_MILLIS.default,
        owner: body.owner ?? '',
        ...(request.clientTokenName !== undefined ? { openedBy: request.clientTokenName } : {}),
      },
      eventContext(request),
    );
    return reply.code(201).send(session);
  });

  // C3 allows L2 without a body: an absent body is the empty object, anything else is validated.
  app.post(
    '/v1/sessions/:sessionId/heartbeat',
    {
      schema: routeSchemas.heartbeat,
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {};
      },
    },
    async (request) => service.heartbeat(credentialOf(request, sessionIdParam(request))),
  );

  app.delete('/v1/sessions/:sessionId', { schema: routeSchemas.closeSession }, async (request, reply) => {
    await service.closeSession(credentialOf(request, sessionIdParam(request)), eventContext(request));
    return reply.code(204).send();
  });
}
