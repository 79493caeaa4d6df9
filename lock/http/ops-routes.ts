/** The operations routes: /metrics (rendered by the exporter), /healthz (liveness), /readyz (the store answers, not draining). */
import type { LockService } from '../core/lock-service.js';
import type { HttpServerDeps } from './deps.js';
import { routeSchemas, type HttpApp } from './schemas.js';

export function registerOpsRoutes(
  app: HttpApp,
  deps: { service: LockService; shutdownSignal: AbortSignal; renderMetrics: HttpServerDeps['renderMetrics'] },
): void {
  const { service, shutdownSignal } = deps;
  app.get('/metrics', { schema: routeSchemas.metrics }, async (request, reply) => {
    const { contentType, body } = await deps.renderMetrics(request.headers.accept);
    return reply.type(contentType).send(body);
  });
  app.get('/healthz', { schema: routeSchemas.healthz }, async () => ({ status: 'ok' as const }));
  app.get('/readyz', { schema: routeSchemas.readyz }, async (_request, reply) => {
    if (shutdownSignal.aborted) throw shutdownSignal.reason;
    await service.checkReady();
    return reply.send({ status: 'ready', backend: service.backend });
  });
}
